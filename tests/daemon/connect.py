#!/usr/bin/env python3
"""connect only ever extends a running sandbox's life (E2B's contract): v1
and v2 connect with the SDKs' default body, with a shorter timeout and with
a longer one; the legacy resume route; setTimeout still shortens; a paused
sandbox resumed by connect gets the timeout it asked for. TAP.

usage: connect.py BUILD_DIR"""
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "connect", keys=1)
H = d.key(0)


def req(method, path, body=None):
    return d.req(method, path, body, H)


def left(sid):
    """seconds until the sandbox's endAt"""
    st, info = req("GET", f"/sandboxes/{sid}")
    end = datetime.datetime.fromisoformat(info["endAt"].replace("Z", "+00:00"))
    return end.timestamp() - time.time()


with d:
    st, sb = req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 3600})
    sid = sb["sandboxID"]
    check("a 1 h sandbox starts with about 3600 s", 3590 < left(sid) <= 3600, left(sid))
    for route in ("/sandboxes/{}/connect", "/v2/sandboxes/{}/connect"):
        p = route.format(sid)
        st, _ = req("POST", p, {})
        check(f"{route} with no timeout keeps the 1 h", st == 200 and left(sid) > 3580, (st, left(sid)))
        st, _ = req("POST", p, {"timeout": 60})
        check(f"{route} with a shorter timeout keeps the 1 h", st == 200 and left(sid) > 3580, (st, left(sid)))
    st, _ = req("POST", f"/sandboxes/{sid}/connect", {"timeout": 7200})
    check("connect with a longer timeout extends it", st == 200 and 7190 < left(sid) <= 7200, (st, left(sid)))
    st, _ = req("POST", f"/sandboxes/{sid}/resume", {"timeout": 60})
    check("legacy resume of a running sandbox: 409, the timeout untouched", st == 409 and left(sid) > 7180,
          (st, left(sid)))
    st, _ = req("POST", f"/sandboxes/{sid}/timeout", {"timeout": 60})
    check("setTimeout still shortens", st == 204 and 50 < left(sid) <= 60, (st, left(sid)))
    st, _ = req("POST", f"/sandboxes/{sid}/pause", {})
    st2, _ = req("POST", f"/sandboxes/{sid}/connect", {"timeout": 30})
    check("connect resumes a paused sandbox (201) with the timeout it asked for",
          st == 204 and st2 == 201 and 20 < left(sid) <= 30, (st, st2, left(sid)))
    # E2B: a timeout is "expires this many seconds from now", so 0 is now
    for auto in (False, True):
        st, sb = req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 300, "autoPause": auto})
        zid = sb["sandboxID"]
        st, _ = req("POST", f"/sandboxes/{zid}/timeout", {"timeout": 0})
        want = "paused" if auto else None
        got = "running"
        for _ in range(40):
            time.sleep(0.25)
            st2, info = req("GET", f"/sandboxes/{zid}")
            got = info.get("state") if st2 == 200 else None
            if got != "running":
                break
        check(f"setTimeout(0) ends the sandbox now ({'paused: autoPause' if auto else 'killed'})",
              st == 204 and got == want, (st, st2, got))
finish()
