#!/usr/bin/env python3
"""aboxd asks whether a checkpointer works (`criu check`, ≈ 70 ms here)
once a minute, not on every E2B pause, snapshot or fork: a checkpointer
standing in for CRIU counts its checks while sandboxes are paused and
resumed, snapshotted and forked again and again.

    usage: ckpt_check.py BUILD_DIR"""
import os
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Daemon, check, finish  # noqa: E402

build = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="abox-ckpt-check-")
count = os.path.join(tmp, "checks")
hook = os.path.join(tmp, "criu")
with open(hook, "w") as f:
    # `check` passes and is counted; the trial's dump fails, so no memory
    # ever goes to disk through this stand-in (pauses stay in place)
    f.write(f"#!/bin/sh\ncase \"$1\" in\n--version) echo 'Version: 4.1';;\ncheck) echo x >> {count};;\n"
            "*) exit 1;;\nesac\n")
os.chmod(hook, stat.S_IRWXU)
d = Daemon(build, "ckpt_check", env={"ABOX_CHECKPOINTER": hook})


def checks():
    try:
        with open(count) as f:
            return len(f.read().split())
    except FileNotFoundError:
        return 0


try:
    st, sb = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 120}, d.key(0))
    check("create", st == 201, (st, sb))
    sid = sb["sandboxID"]
    ok = True
    for _ in range(3):
        st, v = d.req("POST", f"/sandboxes/{sid}/pause", {}, d.key(0))
        st2, v2 = d.req("POST", f"/sandboxes/{sid}/connect", {"timeout": 120}, d.key(0))
        ok = ok and st == 204 and st2 in (200, 201)
    check("three pauses and resumes answer as E2B's", ok, (st, v, st2, v2))
    st, snap = d.req("POST", f"/sandboxes/{sid}/snapshots", {}, d.key(0))
    check("a snapshot too", st in (200, 201), (st, snap))
    check("the checkpointer was checked once, not on every pause and snapshot", checks() == 1, checks())
    d.req("DELETE", f"/sandboxes/{sid}", headers=d.key(0))
finally:
    d.stop()
    # the stand-in's trial verdict is of no use to anyone after this run
    trial = os.path.join(os.environ.get("ABOX_ROOT") or os.path.join(build, "test-state"), "checkpointer-trial")
    try:
        with open(trial) as f:
            ours = f.readline().startswith(hook + " ")
    except FileNotFoundError:
        ours = False
    if ours:
        for p in (trial, trial + ".log"):
            if os.path.exists(p):
                os.unlink(p)
    os.unlink(hook)
    if os.path.exists(count):
        os.unlink(count)
    os.rmdir(tmp)
finish()
