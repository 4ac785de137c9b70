#!/usr/bin/env python3
"""kill -9 of aboxd in the middle of work, then a restart: every sandbox is
still listed and usable, its background processes still run, and nothing
was lost. As TAP.

usage: restart.py BUILD_DIR"""
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

build = sys.argv[1]
results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
key = "e2b_" + os.urandom(20).hex()
conf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
json.dump({"port": port, "adminPort": 0, "apiKeys": [key]}, conf)
conf.close()
log = open(os.path.join(build, "aboxd-restart.log"), "w")


def start():
    d = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name], stderr=log)
    for _ in range(50):
        try:
            if call("GET", "/health")[0] == 200:
                return d
        except OSError:
            time.sleep(0.1)
    return d


def call(method, path, body=None, headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"X-API-Key": key, "Content-Type": "application/json", **(headers or {})}
    c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data and data[:1] in b"[{" else data)


tokens = {}


def envd_headers(sid):
    # the token was answered before the restart: it must still open envd after
    return {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": tokens[sid]}


def run(sid, cmd):
    """process.Process/Start of bash -c cmd; its stdout when it ends."""
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    st, data = call("POST", "/process.Process/Start", b"\0" + struct.pack(">I", len(msg)) + msg,
                    {**envd_headers(sid), "Content-Type": "application/connect+json"})
    out = b""
    i = 0
    while i + 5 <= len(data):
        n = struct.unpack(">I", data[i + 1:i + 5])[0]
        m = json.loads(data[i + 5:i + 5 + n])
        d = m.get("event", {}).get("data", {})
        if "stdout" in d:
            import base64
            out += base64.b64decode(d["stdout"])
        i += 5 + n
    return out.decode()


daemon = start()
ids = []
try:
    for i in range(3):
        st, sb = call("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 300, "metadata": {"n": str(i)}})
        ids.append(sb["sandboxID"])
        tokens[sb["sandboxID"]] = sb["envdAccessToken"]
    for sid in ids:
        run(sid, "nohup bash -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.1; done' >/dev/null 2>&1 &")
    # a command streaming when the daemon dies
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", "sleep 30"]}}).encode()
    inflight = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    inflight.request("POST", "/process.Process/Start", b"\0" + struct.pack(">I", len(msg)) + msg,
                     {**envd_headers(ids[0]), "Content-Type": "application/connect+json"})
    time.sleep(0.5)
    before = {sid: int(run(sid, "cat /tmp/n") or 0) for sid in ids}
    daemon.kill()  # SIGKILL: no goodbye
    daemon.wait()
    time.sleep(0.5)
    daemon = start()
    st, lst = call("GET", "/v2/sandboxes")
    check("every sandbox is listed after kill -9 and a restart",
          st == 200 and sorted(s["sandboxID"] for s in lst) == sorted(ids), lst)
    check("their metadata survived", all(s["metadata"].get("n") for s in lst), lst)
    time.sleep(0.5)
    for sid in ids:
        after = int(run(sid, "cat /tmp/n") or 0)
        check(f"the background counter of {sid} ran on ({before[sid]} -> {after})", after > before[sid])
    ps = run(ids[0], "pgrep -f 'sleep 30' >/dev/null && echo alive")
    check("the command that was streaming still runs", ps.strip() == "alive", ps)
    st, _ = call("POST", f"/sandboxes/{ids[1]}/timeout", {"timeout": 100})
    check("control calls work on them", st == 204, st)
except Exception:
    # a step that broke is a failed case with its traceback, and the
    # cases before it are still reported
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1200:])
finally:
    for sid in ids:
        call("DELETE", f"/sandboxes/{sid}")
    st, lst = call("GET", "/v2/sandboxes")
    check("all killed at the end", st == 200 and lst == [], lst)
    daemon.terminate()
    daemon.wait(timeout=10)
    os.unlink(conf.name)
    # what the product removes lazily (the layers of pauses and forks,
    # records of expired sandboxes) goes now, not at the next gc
    subprocess.run([os.path.join(build, "abox"), "gc", "-q"], capture_output=True, timeout=120)

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        for dl in str(detail)[:1500].splitlines():
            print(f"  # {dl}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
