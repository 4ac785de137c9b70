#!/usr/bin/env python3
"""autoPause at the deadline, a few hundred times over: every sandbox made
with autoPause (as SDK 2.51 sends it for lifecycle.onTimeout 'pause') and a
short timeout is paused within a second of its deadline — none killed,
none left running — and keepMemory false (autoPauseMemory: false) drops
its processes while keeping its files. As TAP.

usage: autopause.py BUILD_DIR [COUNT]"""
import concurrent.futures
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Cli, Daemon, broke, check, finish  # noqa: E402

build = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
cli = Cli(build)
record = cli.record
TIMEOUT_S = 3
d = Daemon(build, "autopause", keys=1, env=cli.changes)
A = d.key(0)

made = {}  # id -> keep memory
try:
    def create(i):
        keep = i % 2 == 0
        body = {"templateID": "base", "timeout": TIMEOUT_S, "autoPause": True, "metadata": {"n": str(i)}}
        if not keep:
            body["autoPauseMemory"] = False
        st, sb = d.req("POST", "/v2/sandboxes", body, A)
        return (sb["sandboxID"], keep) if st == 201 else (None, f"{st} {sb}")

    failed = []
    with concurrent.futures.ThreadPoolExecutor(6) as ex:
        for sid, keep in ex.map(create, range(count)):
            if sid:
                made[sid] = keep
            else:
                failed.append(keep)
    check(f"{count} autoPause sandboxes made ({TIMEOUT_S} s timeout)", not failed, failed[:3])

    # a process in a few of each kind: kept frozen, or dropped
    # (the last made: their deadlines are still ahead)
    sample_keep = [s for s, k in made.items() if k][-3:]
    sample_drop = [s for s, k in made.items() if not k][-3:]
    started = {}
    # a CLI reaps on its way out too (abox_gc_maybe): the sandboxes whose
    # deadline came meanwhile may be frozen by it, logged on its stderr
    # (with ABOX_DEBUG) instead of aboxd's
    dbg = dict(cli.env, ABOX_DEBUG="1")
    cli_frozen = 0
    for sid in sample_keep + sample_drop:
        p = cli("exec", sid, "--", "sh", "-c",
                "echo kept > /home/user/mark; nohup sleep 1000 >/dev/null 2>&1 & echo started", check_rc=False,
                env=dbg)
        started[sid] = p.returncode == 0
        cli_frozen += p.stderr.count("frozen at its deadline")

    # every deadline has passed by a second and a half: each must be paused
    last_deadline = max(record(s)["deadlineMs"] for s in made if record(s)) / 1000
    time.sleep(max(0, last_deadline - time.time()) + 1.5)
    gone, running, late = [], [], []
    for sid in made:
        st, info = d.req("GET", f"/sandboxes/{sid}", headers=A)
        if st != 200:
            gone.append(f"{sid}: {st}")
        elif info.get("state") != "paused":
            running.append(f"{sid}: {info.get('state')}")
        rec = record(sid)
        if rec and rec.get("pausedMs") and rec["pausedMs"] - rec["deadlineMs"] > 1000:
            late.append(f"{sid}: {rec['pausedMs'] - rec['deadlineMs']} ms")
    check("no autoPause sandbox is gone at its deadline", not gone, gone[:10])
    check("none is still running 1.5 s after its deadline", not running, running[:10])
    check("each was paused within a second of its deadline", not late, late[:10])

    # keepMemory false: its processes go (files kept, paused without memory);
    # keepMemory true keeps them (to disk with a checkpointer, else frozen)
    want_cold = [s for s, k in made.items() if not k]
    t = time.monotonic()
    while time.monotonic() - t < 60:
        warm = [s for s in want_cold if not (record(s) or {}).get("cold")]
        if not warm:
            break
        time.sleep(0.5)
    check("keepMemory false: every one dropped its processes (paused without memory)", not warm, warm[:10])
    kept_warm = [s for s, k in made.items() if k and (record(s) or {}).get("cold") and
                 not (record(s) or {}).get("checkpoint")]
    check("keepMemory true: none lost its memory", not kept_warm, kept_warm[:10])

    # resumed, each kind shows what it kept
    bad = []
    for sid in sample_keep + sample_drop:
        if not started.get(sid):
            bad.append(f"{sid}: the process did not start")
            continue
        st, _ = d.req("POST", f"/sandboxes/{sid}/connect", {"timeout": 60}, A)
        if st not in (200, 201):
            bad.append(f"{sid}: connect {st}")
            continue
        p = cli("exec", sid, "--", "sh", "-c", "cat /home/user/mark; pgrep -x sleep >/dev/null && echo alive",
                check_rc=False, env=dbg)
        cli_frozen += p.stderr.count("frozen at its deadline")
        want = "kept\nalive" if sid in sample_keep else "kept"
        if p.stdout.strip() != want:
            bad.append(f"{sid}: {p.stdout.strip()!r} (want {want!r}) {p.stderr.strip()!r}")
    check("resumed: keepMemory true kept files and processes, false the files only", not bad, bad)

    with open(d.log.name) as f:
        text = f.read()
    frozen_lines = text.count("frozen at its deadline")
    check(f"each freeze at the deadline was logged ({frozen_lines} by aboxd, {cli_frozen} by the CLI, "
          f"of {len(made)})", frozen_lines + cli_frozen >= len(made), text[-800:])
except Exception:
    broke()
finally:
    def delete(sid):
        try:
            return d.req("DELETE", f"/sandboxes/{sid}", headers=A)[0]
        except OSError as e:
            return str(e)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        codes = list(ex.map(delete, list(made)))
    st, lst = d.req("GET", "/v2/sandboxes?state=running,paused", headers=A)
    check("all removed at the end", st == 200 and lst == [] and all(c == 204 for c in codes),
          (lst if st == 200 else st, [c for c in codes if c != 204][:5]))
    d.stop()
finish()
