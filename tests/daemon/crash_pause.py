#!/usr/bin/env python3
"""SIGKILL of `abox pause --to-disk` at the edges of its dump (just before
the checkpointer starts and just after it ended), right after its
checkpoint request reached init, and at random points. The edges' kill
comes from a checkpointer wrapper (the real one runs inside it), so each
is hit every time. Afterwards the sandbox must be either running with its
processes, or paused to disk and resumable with them:
never lost, never frozen. As TAP.

usage: crash_pause.py BUILD_DIR"""
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Cli, check, finish, steps  # noqa: E402

build = sys.argv[1]
# memory checkpoints are refused with a user namespace
cli = Cli(build, timeout=120, ABOX_CHECKPOINTER=None, ABOX_USERNS="off")
abox, state, runtime, env, record = cli.path, cli.state, cli.runtime, cli.env, cli.record


def real_checkpointer():
    try:
        with open(os.path.join(state, "checkpointer")) as f:
            return f.read().strip()
    except OSError:
        return ""


def wrapper(real, mode):
    """A checkpointer that runs the real one, and SIGKILLs its caller (the
    abox pausing) before or after a dump, as mode says."""
    f = tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False, dir=build)
    f.write(f"""#!/bin/sh
if [ "$1" = dump ] && [ "{mode}" = before ]; then kill -KILL $PPID; sleep 0.2; fi
"{real}" "$@"
rc=$?
if [ "$1" = dump ] && [ "{mode}" = after ]; then kill -KILL $PPID; fi
exit $rc
""")
    f.close()
    os.chmod(f.name, 0o755)
    return f.name


def new_sandbox():
    sid = cli("create", "--timeout", "900").stdout.strip()
    # a process whose memory says it is the same one: a counter it keeps
    cli("exec", "--detach", sid, "--", "sh", "-c",
        "i=0; while :; do i=$((i+1)); echo $i > /tmp/count.t && mv /tmp/count.t /tmp/count; sleep 0.05; done")
    cli("exec", sid, "--", "sh", "-c", "echo kept > /home/user/file")
    return sid


def state_of(sid):
    p = cli("info", "--json", sid, check_rc=False)
    try:
        return json.loads(p.stdout).get("state")
    except ValueError:
        return None


def alive_and_counting(sid):
    """The file and the counting process are there (resumed first if it
    is paused to disk)."""
    st = state_of(sid)
    if st == "paused":
        r = cli("resume", sid, check_rc=False)
        if r.returncode != 0:
            return False, f"resume failed: {r.stderr.strip()}"
    p = cli("exec", sid, "--", "sh", "-c",
            "cat /home/user/file; a=$(cat /tmp/count); sleep 0.5; b=$(cat /tmp/count); "
            "[ \"$b\" -gt \"$a\" ] && echo counting", timeout=60, check_rc=False)
    ok = p.returncode == 0 and "kept" in p.stdout and "counting" in p.stdout
    return ok, f"state was {st}; rc {p.returncode} {p.stdout!r} {p.stderr!r}"


def frozen(sid):
    rec = record(sid)
    for cg in (rec or {}).get("cgroups", "").splitlines():
        for name, want in (("cgroup.freeze", "1"), ("freezer.state", "FROZEN")):
            try:
                with open(os.path.join(cg, name)) as f:
                    if f.read().strip() in (want, "FREEZING"):
                        return True
            except OSError:
                pass
    return False


def set_frozen(sid, on):
    """Freezes (or thaws) the sandbox's tree by its cgroup, as a pause
    does, and waits until the kernel says so."""
    for cg in (record(sid) or {}).get("cgroups", "").splitlines():
        for name, value in (("cgroup.freeze", "1" if on else "0"),
                            ("freezer.state", "FROZEN" if on else "THAWED")):
            try:
                with open(os.path.join(cg, name), "w") as f:
                    f.write(value)
            except OSError:
                pass
    def settled():
        for cg in (record(sid) or {}).get("cgroups", "").splitlines():
            for name, test in (("cgroup.events", lambda t: ("frozen 1" in t) == on),
                               ("freezer.state", lambda t: (t.strip() == "FROZEN") == on)):
                try:
                    with open(os.path.join(cg, name)) as f:
                        if not test(f.read()):
                            return False
                except OSError:
                    pass
        return True
    deadline = time.monotonic() + 10
    while not settled() and time.monotonic() < deadline:
        time.sleep(0.01)


def snapshots():
    return set(cli("snapshots", "ls").stdout.splitlines()[1:])


# a kernel on which the installed CRIU cannot dump at all (its trial
# hangs or fails: `abox doctor` says so) has nothing here to kill in
# the middle: every case is a skip, counted as one
doctor = cli("doctor", check_rc=False).stdout
if "cannot checkpoint on this kernel" in doctor and "ok    checkpointer" not in doctor:
    why = next(ln for ln in doctor.splitlines() if "cannot checkpoint on this kernel" in ln)
    print("1..1")
    print(f"ok 1 - pauses to disk killed midway # SKIP {why.strip()}")
    sys.exit(0)

made = []
with steps(lambda: cli.kill(*made)):
    snaps_before = snapshots()
    real = real_checkpointer()
    check("a working checkpointer is set up (CI runs the CRIU set-up first)", real and os.access(real, os.X_OK), real)
    for mode in ("before", "after"):
        hook = wrapper(real, mode)
        for rnd in range(3):
            sid = new_sandbox()
            made.append(sid)
            p = cli("pause", "--to-disk", sid, check_rc=False, env=dict(env, ABOX_CHECKPOINTER=hook))
            killed = p.returncode == -signal.SIGKILL
            # the next one to look: a command (through the keeper's
            # re-arm, or a resume from the recorded pause)
            time.sleep(0.3)
            ok, why = alive_and_counting(sid)
            check(f"killed {mode} the dump (round {rnd + 1}): the sandbox is kept with its processes"
                  f"{'' if killed else ' (the kill did not land)'}",
                  killed and ok and not frozen(sid), why)
        os.unlink(hook)
    # a checkpoint request whose sender died right after sending it (a
    # pause killed at that moment): init must not let go of its socket
    # for a checkpoint nobody will make, since the sender's keeper saw
    # it still listening and left; the request goes straight to init's
    # socket here, so the race is hit every time
    sid = new_sandbox()
    made.append(sid)
    name = b"stale"
    payload = struct.pack("<HI", 25, len(name)) + name  # F_NAME
    frame = struct.pack("<IHBBI", len(payload), 27, 0, 0, 1) + payload  # MSG_REQ_CHECKPOINT
    # init frozen meanwhile, so that it finds the request and the
    # sender's hang-up together, as after a kill
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(os.path.join(runtime, sid, "init.sock"))
    time.sleep(0.2)  # init has taken the connection
    set_frozen(sid, True)
    c.sendall(frame)
    c.close()
    set_frozen(sid, False)
    time.sleep(0.3)
    ok, why = alive_and_counting(sid)
    check("a checkpoint request whose sender is gone leaves init reachable", ok and not frozen(sid), why)
    # and killed at random points of a whole pause to disk
    sid = new_sandbox()
    made.append(sid)
    t = time.monotonic()
    cli("pause", "--to-disk", sid)
    span = time.monotonic() - t
    cli("resume", sid)
    lost = []
    for rnd in range(6):
        p = subprocess.Popen([abox, "pause", "--to-disk", sid], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0, span * 1.2))
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(0.3)
        ok, why = alive_and_counting(sid)
        if not ok or frozen(sid):
            lost.append(f"round {rnd + 1}: {why}")
    check(f"killed at random points of a pause to disk ({span:.2f} s): always kept", not lost, "; ".join(lost))
    for s in made:
        cli("kill", s, check_rc=False)
    made = []
    # the files' layer a killed pause made is not settled: gc takes it
    # once its grace has passed (a minute), as any a crash left
    deadline = time.monotonic() + 100
    while True:
        cli("gc", check_rc=False)
        extra = snapshots() - snaps_before
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(5)
    check("the layers of the killed pauses are collected by gc", not extra, extra)
    left = [d for d in os.listdir(runtime) if len(d) == 20] if os.path.isdir(runtime) else []
    left = [d for d in left if record(d) is None]
    check("nothing is left behind (runtime folders without a record)", not left, left)
finish()
