"""A private aboxd for one test file, and TAP reporting (used by the
tests in this folder that are newer than abuse.py).

    d = Daemon(build, extra_config={...}, env={...}, keys=2)
    st, body = d.req("POST", "/v2/sandboxes", {...}, d.key(0))
    ...
    d.stop(); finish()

Every sandbox a test makes must end with the test: stop() kills what the
daemon's keys still hold and runs `abox gc`."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


def broke():
    last = next((n for n, _, _ in reversed(results) if not n.startswith("no step raised")), "none")
    check(f"no step raised (the last case before it: {last})", False, traceback.format_exc()[-1200:])


def finish():
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for dl in str(detail)[:1500].splitlines():
                print(f"# {dl}")
    sys.exit(0 if results and all(ok for _, ok, _ in results) else 1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Daemon:
    def __init__(self, build, name, extra_config=None, env=None, keys=2):
        self.build = build
        self.keys = ["e2b_" + os.urandom(20).hex() for _ in range(keys)]
        self.port = free_port()
        cfg = {"port": self.port, "apiKeys": self.keys, "adminPort": 0}
        cfg.update(extra_config or {})
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(cfg, f)
        f.close()
        self.conf = f.name
        self.log = open(os.path.join(build, f"aboxd-{name}.log"), "w")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([os.path.join(build, "aboxd"), "--config", self.conf], stderr=self.log, env=e)
        self.base = f"http://127.0.0.1:{self.port}"
        self.preexisting = self.sandboxes()
        for _ in range(100):
            try:
                if self.req("GET", "/health")[0] == 200:
                    break
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)

    def key(self, i=0):
        return {"X-API-Key": self.keys[i], "Content-Type": "application/json"}

    def req(self, method, path, body=None, headers=None):
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                out = resp.read()
                return resp.status, json.loads(out) if out else None
        except urllib.error.HTTPError as e:
            out = e.read()
            try:
                return e.code, json.loads(out) if out else None
            except ValueError:
                return e.code, out

    def req_raw(self, method, path, body, headers):
        r = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def abox(self, *args):
        return subprocess.run([os.path.join(self.build, "abox"), *args], capture_output=True, text=True,
                              timeout=120)

    def sandboxes(self):
        """Ids of every sandbox of the state folder that is not dead."""
        r = self.abox("ls", "--json")
        try:
            v = json.loads(r.stdout or "[]")
        except ValueError:
            return {"<unreadable: " + r.stdout[:200] + r.stderr[:200] + ">"}
        return {s.get("id") or s.get("sandboxID") for s in v if s.get("state") != "dead"}

    def stop(self):
        try:
            for i in range(len(self.keys)):
                st, v = self.req("GET", "/v2/sandboxes?state=running,paused", headers=self.key(i))
                for s in v if st == 200 else []:
                    self.req("DELETE", f"/sandboxes/{s['sandboxID']}", headers=self.key(i))
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.conf)
        # what a failing daemon left and no key can see (a create that
        # answered an error) must not outlive the test either
        for sid in self.sandboxes() - self.preexisting:
            self.abox("kill", sid)
        self.abox("gc", "-q")
