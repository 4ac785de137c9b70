"""autoResume: a paused sandbox made with autoResume {"enabled": true}
resumes on its next request — envd's, a code cell, a request to one of
its ports — (once, under concurrent requests);
without it a request to a paused sandbox answers 502 with a message that
says it is paused.

    usage: autoresume.py BUILD_DIR"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from harness import Daemon, broke, check, envelope, finish, wait_for  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "autoresume")


def envd_h(sb):
    return {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983", "Content-Type": "application/json",
            "X-Access-Token": sb.get("envdAccessToken") or ""}


def state(sb):
    st, info = d.req("GET", f"/sandboxes/{sb['sandboxID']}", headers=d.key(0))
    return info.get("state") if st == 200 else st


try:
    st, plain = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "autoPause": True}, d.key(0))
    check("create an autoPause sandbox without autoResume", st == 201, plain)
    st, v = d.req("POST", f"/sandboxes/{plain['sandboxID']}/pause", {}, d.key(0))
    check("pause it", st == 204, (st, v))
    st, v = d.req("POST", "/process.Process/List", {}, envd_h(plain))
    check("a request to it: 502 saying it is paused", st == 502 and "paused" in str((v or {}).get("message")), (st, v))
    check("... and it stays paused", state(plain) == "paused", state(plain))

    st, v = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "autoResume": {"enabled": True}},
                  d.key(0))
    check("autoResume without autoPause: 400 naming autoPause", st == 400 and "autoPause" in str(v), (st, v))

    st, ar = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "autoPause": True,
                                             "autoResume": {"enabled": True}}, d.key(0))
    check("create an autoPause sandbox with autoResume", st == 201, ar)
    st, v = d.req("POST", f"/sandboxes/{ar['sandboxID']}/pause", {}, d.key(0))
    check("pause it", st == 204 and state(ar) == "paused", (st, v, state(ar)))
    answers = []

    def one():
        answers.append(d.req("POST", "/process.Process/List", {}, envd_h(ar)))
    ts = [threading.Thread(target=one) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check("six concurrent requests to it: each served (200)", [a[0] for a in answers] == [200] * 6, answers)
    check("... and it runs again", state(ar) == "running", state(ar))
    st, v = d.req("POST", "/process.Process/List", {}, envd_h(ar))
    check("a later request is served too", st == 200, (st, v))
    st, v = d.req("POST", f"/sandboxes/{plain['sandboxID']}/pause", {}, d.key(0))
    st, v = d.req("POST", f"/sandboxes/{ar['sandboxID']}/pause", {}, d.key(0))
    for sb in (plain, ar):
        answers = []

        def conn(sb=sb):
            answers.append(d.req("POST", f"/sandboxes/{sb['sandboxID']}/connect", {"timeout": 120}, d.key(0))[0])
        ts = [threading.Thread(target=conn) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        check("four concurrent connects to a paused sandbox: one 201, the others 200",
              sorted(answers) == [200, 200, 200, 201], answers)

    # the code plane and the port proxy wake it as envd does
    sid = ar["sandboxID"]
    d.req("POST", f"/sandboxes/{sid}/pause", {}, d.key(0))
    cell = dict(envd_h(ar), **{"E2b-Sandbox-Port": "49999"})
    st, body = d.call("POST", "/execute", {"code": "6 * 7"}, cell)
    check("a code cell to it resumes it and runs (200, its result)",
          st == 200 and b'"42"' in body and state(ar) == "running", (st, body[:300], state(ar)))
    d.call("POST", "/process.Process/Start",
           envelope({"process": {"cmd": "/bin/bash", "args": ["-c", "nohup python3 -m http.server 8000 --bind "
                                                                   "127.0.0.1 >/dev/null 2>&1 &"]}}),
           dict(envd_h(ar), **{"Content-Type": "application/connect+json"}))
    port = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8000"}
    wait_for(lambda: d.call("GET", "/", headers=port)[0], lambda st: st == 200, 100, 0.1)
    d.req("POST", f"/sandboxes/{sid}/pause", {}, d.key(0))
    paused = state(ar)
    st, body = d.call("GET", "/", headers=port)
    check("a request to one of its ports resumes it, and its server answers (memory kept)",
          paused == "paused" and st == 200 and state(ar) == "running", (paused, st, body[:200], state(ar)))
except Exception:
    broke()
finally:
    d.stop()
finish()
