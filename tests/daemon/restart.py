#!/usr/bin/env python3
"""kill -9 of aboxd in the middle of work, then a restart: every sandbox is
still listed and usable, its background processes still run, and nothing
was lost. As TAP.

usage: restart.py BUILD_DIR"""
import base64
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, envelope, envelopes, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "restart", keys=1, timeout=30)
A = d.key(0)
tokens = {}


def envd_headers(sid):
    # the token was answered before the restart: it must still open envd after
    return {**A, "E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": tokens[sid],
            "Content-Type": "application/connect+json"}


def run(sid, cmd):
    """process.Process/Start of bash -c cmd; its stdout when it ends."""
    msg = envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}})
    st, data = d.call("POST", "/process.Process/Start", msg, envd_headers(sid))
    out = b""
    for _, m in envelopes(data):
        ev = m.get("event", {}).get("data", {})
        if "stdout" in ev:
            out += base64.b64decode(ev["stdout"])
    return out.decode()


ids = []
try:
    for i in range(3):
        st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 300, "metadata": {"n": str(i)}}, A)
        ids.append(sb["sandboxID"])
        tokens[sb["sandboxID"]] = sb["envdAccessToken"]
    for sid in ids:
        run(sid, "nohup bash -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/n.t; mv /tmp/n.t /tmp/n; sleep 0.1; done' >/dev/null 2>&1 &")
    # a command streaming when the daemon dies
    inflight = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    inflight.request("POST", "/process.Process/Start",
                     envelope({"process": {"cmd": "/bin/bash", "args": ["-c", "sleep 30"]}}), envd_headers(ids[0]))
    time.sleep(0.5)
    before = {sid: int(run(sid, "cat /tmp/n") or 0) for sid in ids}
    d.kill()  # SIGKILL: no goodbye
    time.sleep(0.5)
    d.start()
    st, lst = d.req("GET", "/v2/sandboxes", headers=A)
    check("every sandbox is listed after kill -9 and a restart",
          st == 200 and sorted(s["sandboxID"] for s in lst) == sorted(ids), lst)
    check("their metadata survived", all(s["metadata"].get("n") for s in lst), lst)
    time.sleep(0.5)
    for sid in ids:
        after = int(run(sid, "cat /tmp/n") or 0)
        check(f"the background counter of {sid} ran on ({before[sid]} -> {after})", after > before[sid])
    ps = run(ids[0], "pgrep -f 'sleep 30' >/dev/null && echo alive")
    check("the command that was streaming still runs", ps.strip() == "alive", ps)
    st, _ = d.req("POST", f"/sandboxes/{ids[1]}/timeout", {"timeout": 100}, A)
    check("control calls work on them", st == 204, st)
except Exception:
    broke()
finally:
    for sid in ids:
        d.req("DELETE", f"/sandboxes/{sid}", headers=A)
    st, lst = d.req("GET", "/v2/sandboxes", headers=A)
    check("all killed at the end", st == 200 and lst == [], lst)
    d.stop()
finish()
