#!/usr/bin/env python3
"""A command the OOM killer ends, seen through aboxd as TAP: the end event
of process.Process/Start carries an error naming the OOM kill and the
sandbox's memory limit (the SDKs' CommandExitError shows it as its
message), the sandbox's init survives and the sandbox answers afterwards,
and a command that ran clean afterwards carries no such error.

usage: oom.py BUILD_DIR"""
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, envelope, envelopes, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "oom", keys=1, extra_config={"domain": "abox.test"})
key = d.keys[0]


def envd_headers(sid, token):
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json"}
    if token:
        h["X-Access-Token"] = token
    return h


def run(sid, token, cmd):
    """process.Process/Start: the end event's fields (or None)."""
    msg = envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}})
    st, data = d.call("POST", "/process.Process/Start", msg, envd_headers(sid, token))
    if st != 200:
        return st, {"reply": data[:300]}
    end = None
    for _, frame in envelopes(data):
        ev = frame.get("event", {})
        if "end" in ev:
            end = ev["end"]
    return st, end


with d:
    st, created = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 120, "memoryMB": 64}, d.key(0))
    sid = created["sandboxID"]
    token = created.get("envdAccessToken")
    st2, info = d.req("GET", f"/sandboxes/{sid}", headers={"X-API-Key": key})
    check("a sandbox with a 64 MB memory limit", st == 201 and info.get("memoryMB") == 64, (st, st2, info))

    # metrics with the commands' cgroup nested in the sandbox's: the
    # memory used counts the commands' (a command holding 40 MB right
    # now), the total is the limit the user set
    st, end = run(sid, token, "python3 -c 'import time; a = bytearray(40 << 20); a[::4096] = b\"x\" * len(a[::4096]); "
                               "time.sleep(4)' >/dev/null 2>&1 & sleep 1.5; echo started")
    st, data = d.call("GET", f"/sandboxes/{sid}/metrics", headers={"X-API-Key": key})
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
    p = subprocess.run([os.path.join(build, "abox"), "--remote", d.base, "--api-key", key,
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
    st, data = d.call("POST", "/files?path=/tmp/bomb", bomb, h)
    check("a gzip bomb upload is written, or refused as a full disk (507)",
          st in (200, 201, 204) or (st == 507 and b"No space left" in data), (st, data[:300]))
    st, end = run(sid, token, "cat /tmp/keep; rm -f /tmp/bomb")
    check("the sandbox answers after the gzip bomb, files intact",
          st == 200 and end is not None and end.get("exitCode") == 0, (st, end))
finish()
