#!/usr/bin/env python3
"""connect only ever extends a running sandbox's life (E2B's contract): v1
and v2 connect with the SDKs' default body, with a shorter timeout and with
a longer one; the legacy resume route; setTimeout still shortens; a paused
sandbox resumed by connect gets the timeout it asked for. TAP.

usage: connect.py BUILD_DIR"""
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

build = sys.argv[1]
results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
key = "e2b_" + os.urandom(20).hex()
conf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
json.dump({"port": port, "apiKeys": [key], "adminPort": 0}, conf)
conf.close()
log = open(os.path.join(build, "aboxd-connect.log"), "w")
daemon = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name], stderr=log)
H = {"X-API-Key": key, "Content-Type": "application/json"}


def req(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=H)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            out = resp.read()
            return resp.status, json.loads(out) if out else None
    except urllib.error.HTTPError as e:
        out = e.read()
        return e.code, json.loads(out) if out else None


def left(sid):
    """seconds until the sandbox's endAt"""
    st, info = req("GET", f"/sandboxes/{sid}")
    end = datetime.datetime.fromisoformat(info["endAt"].replace("Z", "+00:00"))
    return end.timestamp() - time.time()


made = []
try:
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    st, sb = req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 3600})
    sid = sb["sandboxID"]
    made.append(sid)
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
        made.append(zid)
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
except Exception:
    check(f"no step raised (the last case before it: {results[-1][0] if results else 'none'})", False,
          traceback.format_exc()[-1200:])
finally:
    for sid in made:
        req("DELETE", f"/sandboxes/{sid}")
    daemon.terminate()
    daemon.wait(timeout=10)
    os.unlink(conf.name)
    subprocess.run([os.path.join(build, "abox"), "gc", "-q"], capture_output=True, timeout=120)

print(f"1..{len(results)}")
for i, (name, ok, detail) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
    if not ok:
        for dl in str(detail)[:1500].splitlines():
            print(f"# {dl}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
