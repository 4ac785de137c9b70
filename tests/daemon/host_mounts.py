#!/usr/bin/env python3
"""aboxd on a host with an unusual mount table: it runs in a private mount
namespace holding what `ip netns add` makes (a namespace file bound onto a
file: an nsfs mount) and a mount point whose name the kernel escapes.
Creates work there and deletes leave no cgroup folder. A create that fails
on the host's side answers a 5xx, logged, never a 4xx. As TAP.

usage: host_mounts.py BUILD_DIR"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

build = sys.argv[1]
results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


key = "e2b_" + os.urandom(20).hex()
work = tempfile.mkdtemp(prefix="abox-hostmounts-")


def config(port):
    path = os.path.join(work, f"aboxd-{port}.json")
    with open(path, "w") as f:
        json.dump({"port": port, "adminPort": 0, "apiKeys": [key]}, f)
    return path


def call(port, method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"X-API-Key": key, "Content-Type": "application/json"}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data and data[:1] in b"[{" else data)


def start(port, log, env=None, odd_mounts=False):
    argv = [os.path.join(build, "aboxd"), "--config", config(port)]
    if odd_mounts:
        # unshare -m: a private mount namespace (propagation private),
        # gone with aboxd; the mounts are made in it, then aboxd runs there
        script = ('set -e; touch "$1/netns"; mount --bind /proc/self/ns/net "$1/netns"; '
                  'mkdir -p "$1/a b\tc\\\\d"; mount -t tmpfs "" "$1/a b\tc\\\\d"; shift; exec "$@"')
        argv = ["unshare", "-m", "sh", "-c", script, "sh", work] + argv
    d = subprocess.Popen(argv, stderr=log, env={**os.environ, **(env or {})})
    for _ in range(100):
        try:
            if call(port, "GET", "/health", timeout=2)[0] == 200:
                return d
        except OSError:
            time.sleep(0.1)
    return d


def stop(d):
    d.terminate()
    try:
        d.wait(timeout=10)
    except subprocess.TimeoutExpired:
        d.kill()
        d.wait()


def cgroup_folders(sid):
    """every cgroup folder named after the sandbox, in every hierarchy"""
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d == f"abox-{sid}":
                found.append(os.path.join(root, d))
    return found


daemons = []
try:
    port = free_port()
    log = open(os.path.join(build, "aboxd-host-mounts.log"), "w+")
    d = start(port, log, odd_mounts=True)
    daemons.append(d)
    mi = subprocess.run(["cat", f"/proc/{d.pid}/mountinfo"], capture_output=True, text=True).stdout
    check("aboxd's mount table has an nsfs mount", " - nsfs " in mi, mi[-2000:])
    ids = []
    for i in range(3):
        st, body = call(port, "POST", "/sandboxes", {"templateID": "base", "timeout": 120})
        check(f"create {i} with an nsfs mount in aboxd's namespace answers 201", st == 201, body)
        if st == 201:
            ids.append(body["sandboxID"])
    for sid in ids:
        check(f"{sid} has cgroup folders while it runs", cgroup_folders(sid) != [])
        st, body = call(port, "DELETE", f"/sandboxes/{sid}")
        check(f"delete {sid} answers 204", st == 204, body)
        left = cgroup_folders(sid)
        check(f"delete {sid} leaves no cgroup folder", left == [], left)
    stop(d)
    daemons.remove(d)

    # a host-side failure: the runtime folder cannot be made (its parent
    # is a regular file, ENOTDIR): the daemon's failure, not the client's
    blocker = os.path.join(work, "not-a-folder")
    open(blocker, "w").close()
    port2 = free_port()
    log2 = open(os.path.join(build, "aboxd-host-failure.log"), "w+")
    d2 = start(port2, log2, env={"ABOX_RUNTIME_DIR": os.path.join(blocker, "run")})
    daemons.append(d2)
    st, body = call(port2, "POST", "/sandboxes", {"templateID": "base", "timeout": 60})
    check("a create that fails on the host answers a 5xx", 500 <= st < 600, (st, body))
    time.sleep(0.2)
    log2.seek(0)
    text = log2.read()
    check("and aboxd logs it", "POST /sandboxes: 5" in text, text[-1500:])
    stop(d2)
    daemons.remove(d2)
except Exception:
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1200:])
finally:
    for d in daemons:
        stop(d)
    subprocess.run(["umount", "-l", os.path.join(work, "netns")], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        for dl in str(detail)[:1500].splitlines():
            print(f"  # {dl}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
