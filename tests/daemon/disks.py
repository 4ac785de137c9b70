#!/usr/bin/env python3
"""aboxd's spare disks: a helper process keeps ABOX_SPARE_DISKS (default 4)
disks ready, a create takes one (and the sandbox's files are on it), the
helper refills, and nothing of it outlives the daemon, even after kill -9.
With ABOX_SPARE_DISKS=0 there are none and creates make their own. As TAP.

usage: disks.py BUILD_DIR"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback

build = sys.argv[1]
root = os.path.realpath(os.environ.get("ABOX_ROOT", "/var/lib/abox"))
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
log = open(os.path.join(build, "aboxd-disks.log"), "w")


def call(method, path, body=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"X-API-Key": key, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data and data[:1] in b"[{" else data)


def start(spares=None):
    env = dict(os.environ)
    env.pop("ABOX_SPARE_DISKS", None)
    if spares is not None:
        env["ABOX_SPARE_DISKS"] = str(spares)
    d = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name], stderr=log, env=env)
    for _ in range(100):
        try:
            if call("GET", "/health")[0] == 200:
                break
        except OSError:
            time.sleep(0.1)
    return d


def disks():
    """loop devices bound to a file of this run's state folder"""
    n = 0
    for dev in os.listdir("/sys/block"):
        try:
            with open(f"/sys/block/{dev}/loop/backing_file") as f:
                if f.read().startswith(root + "/"):
                    n += 1
        except OSError:
            pass
    return n


def wait_disks(want, secs=10):
    n = -1
    for _ in range(int(secs * 20)):
        n = disks()
        if n == want:
            break
        time.sleep(0.05)
    return n


def helpers(ppid):
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        if comm == "abox-disks" and int(fields[1]) == ppid:
            found.append(int(p))
    return found


daemon = None
sid = None
try:
    check("no disk before the daemon", disks() == 0, disks())
    daemon = start()
    n = wait_disks(4)
    check("aboxd keeps 4 spare disks", n == 4, n)
    check("made by one helper process, a child of aboxd", len(helpers(daemon.pid)) == 1, helpers(daemon.pid))
    st, sb = call("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120})
    check("a create works", st == 201, (st, sb))
    sid = sb["sandboxID"]
    # the spare it took is replaced: four spares and its disk
    n = wait_disks(5)
    check("the helper refills what a create took", n == 5, n)
    st, _ = call("DELETE", f"/sandboxes/{sid}")
    check("kill", st == 204, st)
    sid = None
    n = wait_disks(4)
    check("the sandbox's disk goes with it", n == 4, n)
    daemon.kill()  # SIGKILL: no goodbye
    daemon.wait()
    daemon = None
    n = wait_disks(0)
    check("kill -9 of aboxd releases every spare", n == 0, n)

    daemon = start(0)
    time.sleep(1)
    check("ABOX_SPARE_DISKS=0: none", disks() == 0 and not helpers(daemon.pid), disks())
    st, sb = call("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120})
    check("a create without spares makes its own disk", st == 201 and disks() == 1, (st, sb, disks()))
    sid = sb.get("sandboxID") if isinstance(sb, dict) else None
except Exception:
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1200:])
finally:
    if daemon is None:
        daemon = start(0)
    if sid:
        call("DELETE", f"/sandboxes/{sid}")
    daemon.terminate()
    daemon.wait(timeout=10)
    os.unlink(conf.name)
    n = wait_disks(0)
    check("no disk is left", n == 0, n)

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        for dl in str(detail)[:1500].splitlines():
            print(f"  # {dl}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
