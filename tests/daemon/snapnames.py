#!/usr/bin/env python3
"""Snapshots as E2B's, against a live aboxd, as TAP: a name can be used
again and then means the newest snapshot (the older stays reachable by
its id); deleting a snapshot sandboxes were started from succeeds, leaves
them running (commands, files, pause and resume), and its layers go with
the last of them.

usage: snapnames.py BUILD_DIR"""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, envelope, envelopes, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "snapnames")
A = d.key(0)
NAME = "snapnames-" + os.urandom(3).hex()


def run(sb, cmd):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json",
         "X-Access-Token": sb.get("envdAccessToken", "")}
    msg = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}})
    st, data = d.req_raw("POST", "/process.Process/Start", msg, h)
    out = b""
    for _, m in envelopes(data) if st == 200 else []:
        ev = m.get("event", {})
        if "data" in ev and "stdout" in ev["data"]:
            out += base64.b64decode(ev["data"]["stdout"])
    return out.decode(errors="replace").strip()


def create(tmpl):
    return d.req("POST", "/sandboxes", {"templateID": tmpl, "timeout": 300}, A)


def layers():
    return {p for p in os.listdir(os.path.join(state, "snapshots")) if len(p) == 20}


state = os.environ.get("ABOX_ROOT") or os.path.join(build, "test-state")
with d:
    st, src = create("base")
    run(src, "echo one > /tmp/v")
    st, s1 = d.req("POST", f"/sandboxes/{src['sandboxID']}/snapshots", {"name": NAME}, A)
    run(src, "echo two > /tmp/v")
    st2, s2 = d.req("POST", f"/sandboxes/{src['sandboxID']}/snapshots", {"name": NAME}, A)
    check("a snapshot name can be used again (201 both times)", st == 201 and st2 == 201, (st, s1, st2, s2))
    st, a = create(NAME)
    check("the name means the newest snapshot", st == 201 and run(a, "cat /tmp/v") == "two", (st, a))
    st, b = create(s1["snapshotID"])
    check("the older one is still there by its id", st == 201 and run(b, "cat /tmp/v") == "one", (st, b))
    st, v = d.req("GET", "/snapshots?name=" + NAME, headers=A)
    check("listSnapshots({name}) gives the newest under that name",
          st == 200 and [x["snapshotID"] for x in v] == [s2["snapshotID"]], (st, v))

    # delete what a running sandbox was started from
    before = layers()
    st, _ = d.req("DELETE", f"/templates/{s2['snapshotID']}", headers=A)
    check("deleting a snapshot a sandbox was started from succeeds (204)", st == 204, st)
    st, v = d.req("GET", "/snapshots", headers=A)
    check("it is gone from the list", st == 200 and s2["snapshotID"] not in [x["snapshotID"] for x in v], v)
    st, _ = create(s2["snapshotID"])
    check("and cannot be started from (404)", st == 404, st)
    check("the sandbox started from it runs on, its files intact", run(a, "cat /tmp/v; echo more > /tmp/w; cat /tmp/w")
          == "two\nmore", run(a, "cat /tmp/v"))
    st, _ = d.req("POST", f"/sandboxes/{a['sandboxID']}/pause", {"memory": False}, A)
    st2, _ = d.req("POST", f"/sandboxes/{a['sandboxID']}/connect", {"timeout": 60}, A)
    check("it pauses and resumes with its files", st == 204 and st2 == 201 and run(a, "cat /tmp/v /tmp/w") == "two\nmore",
          (st, st2))
    check("its layers stay while it runs", s2["snapshotID"] in layers(), (before, layers()))
    d.req("DELETE", f"/sandboxes/{a['sandboxID']}", headers=A)
    d.abox("gc", "-q")
    check("once that sandbox is gone, gc removes the deleted snapshot's layers",
          s2["snapshotID"] not in layers(), layers())
    st, _ = d.req("DELETE", f"/templates/{s1['snapshotID']}", headers=A)
    check("the older one deletes too", st == 204, st)
finish()
