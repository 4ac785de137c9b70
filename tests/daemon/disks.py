#!/usr/bin/env python3
"""aboxd's spare disks: a helper process keeps ABOX_SPARE_DISKS (default 4)
disks ready, a create takes one (and the sandbox's files are on it), the
helper refills, and nothing of it outlives the daemon, even after kill -9.
With ABOX_SPARE_DISKS=0 there are none and creates make their own. As TAP.

usage: disks.py BUILD_DIR"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, finish, wait_for  # noqa: E402

build = sys.argv[1]
root = os.path.realpath(os.environ.get("ABOX_ROOT", "/var/lib/abox"))


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
    return wait_for(disks, lambda n: n == want, int(secs * 20), 0.05)


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


d = None
try:
    check("no disk before the daemon", disks() == 0, disks())
    d = Daemon(build, "disks", keys=1, timeout=30, env={"ABOX_SPARE_DISKS": None})
    A = d.key(0)
    n = wait_disks(4)
    check("aboxd keeps 4 spare disks", n == 4, n)
    check("made by one helper process, a child of aboxd", len(helpers(d.proc.pid)) == 1, helpers(d.proc.pid))
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, A)
    check("a create works", st == 201, (st, sb))
    sid = sb["sandboxID"]
    # the spare it took is replaced: four spares and its disk
    n = wait_disks(5)
    check("the helper refills what a create took", n == 5, n)
    st, _ = d.req("DELETE", f"/sandboxes/{sid}", headers=A)
    check("kill", st == 204, st)
    n = wait_disks(4)
    check("the sandbox's disk goes with it", n == 4, n)
    d.kill()  # SIGKILL: no goodbye
    n = wait_disks(0)
    check("kill -9 of aboxd releases every spare", n == 0, n)

    d.start(env={"ABOX_SPARE_DISKS": "0"})
    time.sleep(1)
    check("ABOX_SPARE_DISKS=0: none", disks() == 0 and not helpers(d.proc.pid), disks())
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, A)
    check("a create without spares makes its own disk", st == 201 and disks() == 1, (st, sb, disks()))
except Exception:
    broke()
finally:
    # a daemon killed by then is not started again: what its sandboxes
    # hold, stop() kills by the CLI
    if d:
        d.stop()
    n = wait_disks(0)
    check("no disk is left", n == 0, n)
finish()
