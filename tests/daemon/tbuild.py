#!/usr/bin/env python3
"""E2B's template build API at the HTTP level, as a hostile or unlucky
client meets it: steps that would smuggle an instruction into the
Dockerfile, a build of another key's, an unknown upload link; and a
kill -9 of aboxd while a build runs: after the restart the finished
build still answers, the interrupted one says it failed with the
restart, and the next build ends the sandbox it left. As TAP.

usage: tbuild.py BUILD_DIR"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "tbuild", keys=2, timeout=30)
A, B = d.key(0), d.key(1)
made_templates = ["trbb"]


def base():
    root = tempfile.mkdtemp(prefix="abox-tbuild-root-")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for a in ("sh", "echo", "sleep", "cat"):
        os.symlink("busybox", os.path.join(root, "bin", a))
    r = d.abox("template", "import", "trbb", root)
    shutil.rmtree(root)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)


def request(name, key=A):
    st, v = d.req("POST", "/v3/templates", {"name": name, "cpuCount": 1, "memoryMB": 512}, headers=key)
    if st != 202:
        raise RuntimeError(f"POST /v3/templates: {st} {v}")
    made_templates.append(name)
    return v["templateID"], v["buildID"]


def start(tid, bid, steps, key=A, **extra):
    body = {"fromTemplate": "trbb", "force": False, "steps": steps, **extra}
    return d.req("POST", f"/v2/templates/{tid}/builds/{bid}", body, headers=key)


def status(tid, bid, key=A, offset=0):
    return d.req("GET", f"/templates/{tid}/builds/{bid}/status?logsOffset={offset}&limit=100", headers=key)


def wait(tid, bid, until=("ready", "error"), secs=120):
    end = time.time() + secs
    while time.time() < end:
        st, v = status(tid, bid)
        if st == 200 and v["status"] in until:
            return v
        time.sleep(0.2)
    return status(tid, bid)[1]


def run(cmd):
    return {"type": "RUN", "args": [cmd], "force": False}


try:
    base()
    tid, bid = request("tb-ok")
    st, _ = start(tid, bid, [run("echo done > /f")])
    v = wait(tid, bid)
    check("a build from steps: 202, then ready", st == 202 and v["status"] == "ready", v)
    st, v2 = status(tid, bid, offset=len(v["logEntries"]))
    check("logsOffset past the end: no more entries (the SDK's drain loop ends)",
          st == 200 and v2["logEntries"] == [], v2)
    st, v = status(tid, bid, key=B)
    check("another key does not see the build", st == 404, (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "tb-ok"}, headers=B)
    check("another key cannot build over this key's template: 409", st == 409 and "tb-ok" in json.dumps(v), (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "trbb"}, headers=A)
    check("nor over a template the host's admin made: 409", st == 409, (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "tb-ok"}, headers=A)
    check("the key that built it may build it again", st == 202, (st, v))

    hostile = [
        ([{"type": "ENV", "args": ["A", "x\nRUN touch /pwned"], "force": False}], "line break"),
        ([{"type": "USER", "args": ["root\nRUN id"], "force": False}], "not a plain name"),
        ([{"type": "WORKDIR", "args": ["/x\nRUN id"], "force": False}], "line break"),
        ([{"type": "ENV", "args": ["1BAD", "v"], "force": False}], "is not NAME"),
        ([{"type": "COPY", "args": ["a", "/b", "", ""], "filesHash": "0" * 64, "force": False}], "not uploaded"),
        ([{"type": "HEALTHCHECK", "args": ["true"], "force": False}], "not one abox builds"),
    ]
    for steps, why in hostile:
        t2, b2 = request("tb-hostile")
        st, v = start(t2, b2, steps)
        check(f"refused before building: {why}", st == 400 and why in json.dumps(v), (st, v))
    t2, b2 = request("tb-base")
    st, v = d.req("POST", f"/v2/templates/{t2}/builds/{b2}", {"fromTemplate": "base", "steps": []}, headers=A)
    check("fromTemplate base: refused, saying why", st == 400 and "base" in json.dumps(v), (st, v))
    t2, b2 = request("tb-img")
    st, v = start(t2, b2, [], fromImage="--platform=x")
    check("a fromImage that would be a --flag: refused", st == 400, (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "Bad Name!"}, headers=A)
    check("a name abox cannot use: 400 naming the rule", st == 400 and "a-z" in json.dumps(v), (st, v))
    st, _ = d.call("PUT", "/templates/uploads/0123456789abcdef", b"x" * 100)
    check("an unknown upload link: 404", st == 404, st)

    # ---- aboxd killed during a build
    t3, b3 = request("tb-slow")
    st, _ = start(t3, b3, [run("sleep 60")])
    end = time.time() + 60
    while time.time() < end and "trbb" not in d.abox("ls").stdout:
        time.sleep(0.2)
    d.kill()
    d.start()
    st, v = status(tid, bid)
    check("after a restart: the finished build still answers ready, with its log",
          st == 200 and v["status"] == "ready" and v["logEntries"], (st, v))
    st, v = status(t3, b3)
    check("the interrupted build: error, naming the restart",
          st == 200 and v["status"] == "error" and "restarted" in v.get("reason", {}).get("message", ""), (st, v))
    t4, b4 = request("tb-after")
    start(t4, b4, [run("echo again")])
    v = wait(t4, b4)
    left = [ln for ln in d.abox("ls").stdout.splitlines() if "trbb" in ln]
    check("the next build ends the sandbox the interrupted one left", v["status"] == "ready" and not left,
          (v["status"], left))
except Exception:
    broke()
finally:
    d.stop()
    for t in made_templates:
        d.abox("template", "rm", t)
    for _ in range(6):
        lines = d.abox("snapshots", "ls").stdout.splitlines()[1:]
        ids = [ln.split()[0] for ln in lines if " trbb " in f" {ln} "]
        if not ids:
            break
        for i in ids:
            d.abox("snapshots", "rm", i)
finish()
