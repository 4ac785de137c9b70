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

    request("tb-race")
    st, v = d.req("POST", "/v3/templates", {"name": "tb-race"}, headers=B)
    check("a name whose first build is under way is taken: 409 for another key", st == 409, (st, v))

    # ---- GET /templates and /templates/{name}: this key's, with builds
    st, v = d.req("GET", "/templates", headers=A)
    mine = [t for t in v if t.get("templateID") == "tb-ok"] if st == 200 else []
    check("GET /templates: the key's template, its status and builds counted",
          len(mine) == 1 and mine[0]["buildStatus"] in ("ready", "waiting") and mine[0]["buildCount"] == 2
          and mine[0]["buildID"] == bid and mine[0]["names"] == ["tb-ok"] and mine[0]["memoryMB"] == 512, (st, v))
    st, v = d.req("GET", "/templates", headers=B)
    check("another key's list does not have it", st == 200 and not [t for t in v if t["templateID"] == "tb-ok"],
          (st, v))
    st, v = d.req("GET", "/templates/tb-ok", headers=A)
    builds = v.get("builds", []) if st == 200 else []
    check("GET /templates/{name}: its builds, newest first, the first one ready",
          len(builds) == 2 and builds[1]["buildID"] == bid and builds[1]["status"] == "ready"
          and "finishedAt" in builds[1], (st, v))
    st, v = d.req("GET", "/templates/tb-ok?limit=1", headers=A)
    check("... limit=1: the newest alone", st == 200 and len(v["builds"]) == 1 and v["builds"][0]["buildID"] != bid,
          (st, v))
    st, v = d.req("GET", "/templates/tb-ok", headers=B)
    check("another key: 404", st == 404, (st, v))

    # ---- tags at the HTTP level: another key's, malformed, DELETE of all
    st, v = d.req("POST", "/v3/templates", {"name": "tb-tag:v1", "tags": ["x.1", "v1"]}, headers=A)
    check("a build's tags: the name's and the list's, each once", st == 202 and v["tags"] == ["v1", "x.1"], (st, v))
    made_templates.append("tb-tag")
    start(v["templateID"], v["buildID"], [run("echo t > /t")])
    tb = wait(v["templateID"], v["buildID"])
    check("a tagged build: ready", tb["status"] == "ready", tb)
    st, v = d.req("POST", "/v3/templates", {"name": "tb-tag"}, headers=B)
    check("a name that lives only in tags is still its key's: 409 for another", st == 409, (st, v))
    st, v = d.req("GET", "/templates/tb-tag/tags", headers=B)
    check("another key does not see the tags: 404", st == 404, (st, v))
    st, v = d.req("POST", "/templates/tags", {"target": "tb-tag:v1", "tags": ["mine"]}, headers=B)
    check("nor give them: 404", st == 404, (st, v))
    st, v = d.req("DELETE", "/templates/tags", {"name": "tb-tag", "tags": ["v1"]}, headers=B)
    check("nor remove them: 404", st == 404, (st, v))
    st, v = d.req("POST", "/templates/tags", {"target": "tb-tag:v1", "tags": ["../x"]}, headers=A)
    check("a tag with a slash: 400 naming the rule", st == 400 and "A-Z a-z 0-9" in json.dumps(v), (st, v))
    st, v = d.req("POST", "/templates/tags", {"target": "tb-tag:nope", "tags": ["y"]}, headers=A)
    check("tagging from a tag that is not there: 404", st == 404 and "no tag 'nope'" in json.dumps(v), (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "tb--x"}, headers=A)
    check("a name with -- (kept for tags' templates): 400", st == 400, (st, v))
    st, v = d.req("POST", "/v3/templates", {"name": "t" * 55 + ":v1"}, headers=A)
    check("a name too long to carry a tag: 400 saying so", st == 400 and "too long" in json.dumps(v), (st, v))
    st, _ = d.req("DELETE", "/templates/tb-tag", headers=B)
    check("another key cannot delete it: 404", st == 404, st)
    st, _ = d.req("DELETE", "/templates/tb-tag", headers=A)
    st2, v = d.req("GET", "/templates/tb-tag/tags", headers=A)
    left = [n for n in d.abox("template", "ls").stdout.split() if n.startswith("tb-tag")]
    check("DELETE /templates/{name}: 204, every tag's template gone", st == 204 and st2 == 404 and not left,
          (st, st2, left))

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
