#!/usr/bin/env python3
"""autoPause at the deadline, a few hundred times over: every sandbox made
with autoPause (as SDK 2.51 sends it for lifecycle.onTimeout 'pause') and a
short timeout is paused within a second of its deadline — none killed,
none left running — and keepMemory false (autoPauseMemory: false) drops
its processes while keeping its files. As TAP.

usage: autopause.py BUILD_DIR [COUNT]"""
import concurrent.futures
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
count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
abox = os.path.join(build, "abox")
state = os.environ.get("ABOX_ROOT") or os.path.join(build, "test-state")
env = dict(os.environ, ABOX_ROOT=state)
env.pop("ABOX_REMOTE", None)
TIMEOUT_S = 3
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
log_path = os.path.join(build, "aboxd-autopause.log")
log = open(log_path, "w")


def call(method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"X-API-Key": key, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data and data[:1] in b"[{" else data)


def record(sid):
    try:
        with open(os.path.join(state, "sandboxes", sid, "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cli(*args, timeout=60):
    return subprocess.run([abox, *args], env=env, capture_output=True, text=True, timeout=timeout)


daemon = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name], stderr=log, env=env)
for _ in range(100):
    try:
        if call("GET", "/health", timeout=2)[0] == 200:
            break
    except OSError:
        time.sleep(0.05)

made = {}  # id -> keep memory
try:
    def create(i):
        keep = i % 2 == 0
        body = {"templateID": "base", "timeout": TIMEOUT_S, "autoPause": True, "metadata": {"n": str(i)}}
        if not keep:
            body["autoPauseMemory"] = False
        st, sb = call("POST", "/v2/sandboxes", body)
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
    for sid in sample_keep + sample_drop:
        p = cli("exec", sid, "--", "sh", "-c",
                "echo kept > /home/user/mark; nohup sleep 1000 >/dev/null 2>&1 & echo started")
        started[sid] = p.returncode == 0

    # every deadline has passed by a second and a half: each must be paused
    last_deadline = max(record(s)["deadlineMs"] for s in made if record(s)) / 1000
    time.sleep(max(0, last_deadline - time.time()) + 1.5)
    gone, running, late = [], [], []
    for sid in made:
        st, info = call("GET", f"/sandboxes/{sid}")
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
        st, _ = call("POST", f"/sandboxes/{sid}/connect", {"timeout": 60})
        if st not in (200, 201):
            bad.append(f"{sid}: connect {st}")
            continue
        p = cli("exec", sid, "--", "sh", "-c", "cat /home/user/mark; pgrep -x sleep >/dev/null && echo alive")
        want = "kept\nalive" if sid in sample_keep else "kept"
        if p.stdout.strip() != want:
            bad.append(f"{sid}: {p.stdout.strip()!r} (want {want!r}) {p.stderr.strip()!r}")
    check("resumed: keepMemory true kept files and processes, false the files only", not bad, bad)

    with open(log_path) as f:
        text = f.read()
    frozen_lines = text.count("frozen at its deadline")
    check(f"aboxd logged each freeze at the deadline ({frozen_lines} of {len(made)})",
          frozen_lines >= len(made), text[-800:])
except Exception:
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1500:])
finally:
    def delete(sid):
        try:
            return call("DELETE", f"/sandboxes/{sid}")[0]
        except OSError as e:
            return str(e)
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        codes = list(ex.map(delete, list(made)))
    st, lst = call("GET", "/v2/sandboxes?state=running,paused")
    check("all removed at the end", st == 200 and lst == [] and all(c == 204 for c in codes),
          (lst if st == 200 else st, [c for c in codes if c != 204][:5]))
    daemon.terminate()
    daemon.wait()
    os.unlink(conf.name)
    cli("gc")

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok and detail:
        for line in str(detail).splitlines():
            print(f"# {line}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
