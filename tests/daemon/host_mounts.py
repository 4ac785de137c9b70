#!/usr/bin/env python3
"""aboxd on a host with an unusual mount table: it runs in a private mount
namespace holding what `ip netns add` makes (a namespace file bound onto a
file: an nsfs mount) and a mount point whose name the kernel escapes.
Creates work there and deletes leave no cgroup folder. A create that fails
on the host's side answers a 5xx, logged, never a 4xx. As TAP.

usage: host_mounts.py BUILD_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, finish  # noqa: E402

build = sys.argv[1]
work = tempfile.mkdtemp(prefix="abox-hostmounts-")
# unshare -m: a private mount namespace (propagation private), gone with
# aboxd; the mounts are made in it, then aboxd runs there
ODD_MOUNTS = ["unshare", "-m", "sh", "-c",
              'set -e; touch "$1/netns"; mount --bind /proc/self/ns/net "$1/netns"; '
              'mkdir -p "$1/a b\tc\\\\d"; mount -t tmpfs "" "$1/a b\tc\\\\d"; shift; exec "$@"', "sh", work]


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
    d = Daemon(build, "host-mounts", keys=1, wrap=ODD_MOUNTS)
    daemons.append(d)
    A = d.key(0)
    mi = subprocess.run(["cat", f"/proc/{d.proc.pid}/mountinfo"], capture_output=True, text=True).stdout
    check("aboxd's mount table has an nsfs mount", " - nsfs " in mi, mi[-2000:])
    ids = []
    for i in range(3):
        st, body = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 120}, A)
        check(f"create {i} with an nsfs mount in aboxd's namespace answers 201", st == 201, body)
        if st == 201:
            ids.append(body["sandboxID"])
    for sid in ids:
        check(f"{sid} has cgroup folders while it runs", cgroup_folders(sid) != [])
        st, body = d.req("DELETE", f"/sandboxes/{sid}", headers=A)
        check(f"delete {sid} answers 204", st == 204, body)
        left = cgroup_folders(sid)
        check(f"delete {sid} leaves no cgroup folder", left == [], left)
    daemons.remove(d)
    d.stop()

    # a host-side failure: the runtime folder cannot be made (its parent
    # is a regular file, ENOTDIR): the daemon's failure, not the client's
    blocker = os.path.join(work, "not-a-folder")
    open(blocker, "w").close()
    d2 = Daemon(build, "host-failure", keys=1, env={"ABOX_RUNTIME_DIR": os.path.join(blocker, "run")})
    daemons.append(d2)
    st, body = d2.req("POST", "/sandboxes", {"templateID": "base", "timeout": 60}, d2.key(0))
    check("a create that fails on the host answers a 5xx", 500 <= st < 600, (st, body))
    time.sleep(0.2)
    with open(d2.log.name) as f:
        text = f.read()
    check("and aboxd logs it", "POST /sandboxes: 5" in text, text[-1500:])
    daemons.remove(d2)
    d2.stop()
except Exception:
    broke()
finally:
    for d in daemons:
        d.stop()
    subprocess.run(["umount", "-l", os.path.join(work, "netns")], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
finish()
