#!/usr/bin/env python3
"""A command the OOM killer ends, seen through aboxd as TAP: the end event
of process.Process/Start carries an error naming the OOM kill and the
sandbox's memory limit (the SDKs' CommandExitError shows it as its
message), the sandbox's init survives and the sandbox answers afterwards,
and a command that ran clean afterwards carries no such error.

usage: oom.py BUILD_DIR"""
import gzip
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
json.dump({"port": port, "adminPort": 0, "apiKeys": [key], "domain": "abox.test"}, conf)
conf.close()
daemon = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name],
                          stderr=open(os.path.join(build, "aboxd-oom.log"), "w"))


def call(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def envd_headers(sid, token):
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json"}
    if token:
        h["X-Access-Token"] = token
    return h


def run(sid, token, cmd):
    """process.Process/Start: the end event's fields (or None)."""
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}).encode()
    st, data = call("POST", "/process.Process/Start", b"\0" + struct.pack(">I", len(msg)) + msg,
                    envd_headers(sid, token))
    end = None
    off = 0
    if st != 200:
        return st, {"reply": data[:300]}
    while off + 5 <= len(data):
        n = struct.unpack(">I", data[off + 1:off + 5])[0]
        frame = json.loads(data[off + 5:off + 5 + n] or b"{}")
        off += 5 + n
        ev = frame.get("event", {})
        if "end" in ev:
            end = ev["end"]
    return st, end


sid = None
try:
    for _ in range(50):
        try:
            if call("GET", "/health")[0] == 200:
                break
        except OSError:
            time.sleep(0.1)
    st, data = call("POST", "/sandboxes", json.dumps({"templateID": "base", "timeout": 120, "memoryMB": 64}),
                    {"X-API-Key": key, "Content-Type": "application/json"})
    created = json.loads(data)
    sid = created["sandboxID"]
    token = created.get("envdAccessToken")
    st2, info = call("GET", f"/sandboxes/{sid}", headers={"X-API-Key": key})
    check("a sandbox with a 64 MB memory limit", st == 201 and json.loads(info).get("memoryMB") == 64,
          (st, st2, info[:300]))

    # metrics with the commands' cgroup nested in the sandbox's: the
    # memory used counts the commands' (a command holding 40 MB right
    # now), the total is the limit the user set
    st, end = run(sid, token, "python3 -c 'import time; a = bytearray(40 << 20); a[::4096] = b\"x\" * len(a[::4096]); "
                               "time.sleep(4)' >/dev/null 2>&1 & sleep 1.5; echo started")
    st, data = call("GET", f"/sandboxes/{sid}/metrics", headers={"X-API-Key": key})
    try:
        m = json.loads(data)[-1]
    except (ValueError, IndexError):
        m = {}
    check("metrics: memTotal is the limit, memUsed counts the commands",
          m.get("memTotal") == 64 << 20 and m.get("memUsed", 0) >= 40 << 20, (st, data[:300]))

    st, end = run(sid, token, "echo kept > /tmp/keep; python3 -c 'a = bytearray(400 << 20)'")
    err = (end or {}).get("error", "")
    check("the hog's end is not a clean exit", st == 200 and end is not None and end.get("exitCode") != 0, (st, end))
    check("its end event names the OOM kill", "out of memory" in err, end)
    check("and the limit it hit", "64M" in err, end)

    st, end = run(sid, token, "cat /tmp/keep; cat /proc/1/comm")
    check("the sandbox answers after the OOM kill, files and init intact",
          st == 200 and end is not None and end.get("exitCode") == 0, (st, end))
    # the C API's remote backend, through the CLI: the same words, once,
    # and the end flagged as an OOM kill (the CLI would add its own words
    # for a flagged end without them)
    p = subprocess.run([os.path.join(build, "abox"), "--remote", f"http://127.0.0.1:{port}", "--api-key", key,
                        "exec", sid, "--", "python3", "-c", "a = bytearray(400 << 20)"],
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k not in ("ABOX_REMOTE", "ABOX_API_KEY")})
    check("abox --remote exec: the OOM kill and the limit, said once",
          p.returncode == 137 and p.stderr.count("killed: out of memory (limit 64M)") == 1, (p.returncode, p.stderr))

    st, end = run(sid, token, "true")
    check("a clean command afterwards carries no OOM error",
          end is not None and end.get("exitCode") == 0 and "out of memory" not in end.get("error", ""), end)

    # a gzip bomb: well under a megabyte that inflates to 300 MB, written
    # by init into the sandbox; it may fail (the sandbox's files live in
    # its memory) but never with the sandbox
    bomb = gzip.compress(b"\0" * (300 << 20), compresslevel=9)
    h = {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}
    h.update({k: v for k, v in envd_headers(sid, token).items() if k != "Content-Type"})
    st, data = call("POST", "/files?path=/tmp/bomb", bomb, h)
    check("a gzip bomb upload is written, or refused as a full disk (507)",
          st in (200, 201, 204) or (st == 507 and b"No space left" in data), (st, data[:300]))
    st, end = run(sid, token, "cat /tmp/keep; rm -f /tmp/bomb")
    check("the sandbox answers after the gzip bomb, files intact",
          st == 200 and end is not None and end.get("exitCode") == 0, (st, end))
except Exception:
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1200:])
finally:
    if sid:
        call("DELETE", f"/sandboxes/{sid}", headers={"X-API-Key": key})
    daemon.terminate()
    daemon.wait(timeout=10)
    os.unlink(conf.name)
    subprocess.run([os.path.join(build, "abox"), "gc", "-q"], capture_output=True, timeout=120)

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        for dl in str(detail)[:1500].splitlines():
            print(f"  # {dl}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
