"""What the tests of a live aboxd share (this folder's and tests/remote's):
TAP reporting, a private aboxd on a free port, Connect envelopes, and the
CLI on this run's state folder.

    with Daemon(build, "name", extra_config={...}, env={...}, keys=2) as d:
        st, body = d.req("POST", "/v2/sandboxes", {...}, d.key(0))
        check("create", st == 201, body)
    finish()

A step that raises inside `with d:` is a failed case with its traceback
(the cases before it still count), and the daemon is stopped after it.
Every sandbox a test makes must end with the test: stop() kills what the
daemon's keys still hold and what it left that no key sees, and runs
`abox gc`."""
import http.client
import json
import os
import socket
import struct
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
    """The step that raised, as a failed case named after the last case before it."""
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


class steps:
    """with steps(cleanup): a test's steps; one that raises is a failed
    case with its traceback (the cases before it still count), and
    cleanup() runs after them whatever happened."""

    def __init__(self, cleanup):
        self.cleanup = cleanup

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        raised = kind is not None and issubclass(kind, Exception)
        if raised:
            broke()
        self.cleanup()
        return raised


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def environ(changes=None):
    """This process's environment with changes made: a value of None
    removes the name."""
    e = dict(os.environ)
    for k, v in (changes or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def wait_for(fn, done, tries, pause):
    """Calls fn until done(what it returned), at most tries times, pause
    seconds apart: what it returned last."""
    for i in range(tries):
        got = fn()
        if done(got) or i == tries - 1:
            return got
        time.sleep(pause)


def recv_until(sock, done=lambda got: False, size=65536):
    """What sock receives until done(all of it so far) or the peer closes."""
    got = b""
    while not done(got):
        c = sock.recv(size)
        if not c:
            break
        got += c
    return got


def envelope(message, flags=0):
    """One Connect envelope: flags, the length, the message as JSON."""
    raw = json.dumps(message).encode()
    return struct.pack(">BI", flags, len(raw)) + raw


def envelopes(data):
    """The (flags, message) pairs of a Connect stream's bytes."""
    out, off = [], 0
    while off + 5 <= len(data):
        flags, n = struct.unpack(">BI", data[off:off + 5])
        out.append((flags, json.loads(data[off + 5:off + 5 + n] or b"{}")))
        off += 5 + n
    return out


def _body(body):
    return body if isinstance(body, (bytes, str, type(None))) else json.dumps(body).encode()


class Daemon:
    """aboxd on a free loopback port with keys of its own, started on
    construction and waited for. env: changes to this environment (None
    removes a name); wrap: the start of a command line that runs aboxd's
    own (host_mounts: unshare); timeout: of each request, in seconds."""

    def __init__(self, build, name, extra_config=None, env=None, keys=2, timeout=60, wrap=()):
        self.build = build
        self.keys = ["e2b_" + os.urandom(20).hex() for _ in range(keys)]
        self.port = free_port()
        self.timeout = timeout
        self.wrap = list(wrap)
        # no egress unless a test asks for it: sandboxes with networking
        # are tests/net/'s, in a private world of namespaces
        cfg = {"port": self.port, "apiKeys": self.keys, "adminPort": 0, "network": {"default": "none"}}
        cfg.update(extra_config or {})
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(cfg, f)
        f.close()
        self.conf = f.name
        self.log = open(os.path.join(build, f"aboxd-{name}.log"), "w")
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = env or {}
        self.preexisting = self.sandboxes()
        self.start()

    def start(self, env=None):
        """Starts aboxd (again, after a kill: the same config, port and
        log), env replacing the changes it was given, and waits until it
        serves."""
        if env is not None:
            self.env = env
        self.proc = subprocess.Popen(self.wrap + [os.path.join(self.build, "aboxd"), "--config", self.conf],
                                     stderr=self.log, env=environ(self.env))
        for _ in range(100):
            try:
                if self.req("GET", "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                if self.proc.poll() is not None:
                    break
            time.sleep(0.1)

    def kill(self):
        """SIGKILL: no goodbye."""
        self.proc.kill()
        self.proc.wait()

    def key(self, i=0):
        return {"X-API-Key": self.keys[i], "Content-Type": "application/json"}

    def req_raw(self, method, path, body=None, headers=None, timeout=None):
        """(status, the answer's bytes) by urllib; a dict or list body goes
        as JSON."""
        r = urllib.request.Request(self.base + path, data=_body(body), method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(r, timeout=timeout or self.timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def req(self, method, path, body=None, headers=None, timeout=None):
        """(status, the answer read as JSON, or its bytes where it is not
        JSON)."""
        st, out = self.req_raw(method, path, body, headers, timeout)
        try:
            return st, json.loads(out) if out else None
        except ValueError:
            return st, out

    def exchange(self, method, path, body=None, headers=None, timeout=None):
        """One request on a connection of its own (http.client): the
        headers go as given (a Host header too) and nothing is added but
        what HTTP needs. (status, the answer's bytes, its headers); an
        answer shorter than its Content-Length has its status negated and
        the bytes that came."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout)
        try:
            c.request(method, path, body=_body(body), headers=headers or {})
            r = c.getresponse()
            try:
                return r.status, r.read(), r.headers
            except http.client.IncompleteRead as e:
                return -r.status, e.partial, r.headers
        finally:
            c.close()

    def call(self, method, path, body=None, headers=None, timeout=None):
        """exchange() without the answer's headers: (status, bytes)."""
        return self.exchange(method, path, body, headers, timeout)[:2]

    def listed(self, i=0):
        """Key i's running and paused sandboxes, as the daemon lists them."""
        st, v = self.req("GET", "/v2/sandboxes?state=running,paused", headers=self.key(i))
        if st != 200:
            raise RuntimeError(f"listing the sandboxes of key {i}: {st} {v}")
        return v

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
        if self.proc.poll() is None:
            for i in range(len(self.keys)):
                try:
                    for s in self.listed(i):
                        self.req("DELETE", f"/sandboxes/{s['sandboxID']}", headers=self.key(i))
                except (OSError, RuntimeError):
                    pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.conf)
        # what a failing daemon left and no key can see (a create that
        # answered an error) must not outlive the test either; nor what
        # the product removes lazily (the layers of pauses and forks,
        # records of expired sandboxes): gc takes it now
        for sid in self.sandboxes() - self.preexisting:
            self.abox("kill", sid)
        self.abox("gc", "-q")

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return steps(self.stop).__exit__(kind, value, tb)


class Cli:
    """`abox` itself on this run's state and runtime folders, never through
    a remote; env: changes on top (None removes a name).

        cli = Cli(build, ABOX_CHECKPOINTER=None)
        sid = cli("create").stdout.strip()       # raises when abox fails
        cli("kill", sid, check_rc=False)"""

    def __init__(self, build, timeout=60, **env):
        self.path = os.path.join(build, "abox")
        self.state = os.environ.get("ABOX_ROOT") or os.path.join(build, "test-state")
        self.runtime = os.environ.get("ABOX_RUNTIME_DIR") or os.path.join(build, "test-run")
        self.changes = {"ABOX_ROOT": self.state, "ABOX_RUNTIME_DIR": self.runtime,
                        "ABOX_INIT": os.environ.get("ABOX_INIT", os.path.join(build, "abox-init")),
                        "ABOX_REMOTE": None, **env}
        self.env = environ(self.changes)
        self.timeout = timeout

    def __call__(self, *args, timeout=None, check_rc=True, env=None):
        p = subprocess.run([self.path, *args], env=env or self.env, capture_output=True, text=True,
                           timeout=timeout or self.timeout)
        if check_rc and p.returncode != 0:
            raise RuntimeError(f"abox {' '.join(args)}: rc {p.returncode}: {p.stderr.strip()}")
        return p

    def kill(self, *ids):
        for sid in ids:
            self("kill", sid, check_rc=False)

    def record(self, sid):
        """The sandbox's state.json, or None."""
        try:
            with open(os.path.join(self.state, "sandboxes", sid, "state.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None
