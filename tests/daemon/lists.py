#!/usr/bin/env python3
"""Lists as E2B's API has them, against a live aboxd, as TAP: sandboxes
newest first by default, `order=asc`, `startedAfter`/`startedBefore`,
the `template` and `state` filters, stable pages (a sandbox created
between two pages moves nothing), X-Total-Running; snapshots filtered by
`sandboxID` and `name`; metrics within `start`/`end`. A bad value of any
of them is a 400 naming it, never ignored.

usage: lists.py BUILD_DIR"""
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "lists")
A = d.key(0)
TAG = "lists-" + os.urandom(4).hex()


def get(path, **q):
    """status, body, headers of a GET with query q (and this test's tag)."""
    q = {"metadata": urllib.parse.urlencode({"t": TAG}), **{k: v for k, v in q.items() if v is not None}}
    st, body, headers = d.exchange("GET", path + "?" + urllib.parse.urlencode(q), headers=A)
    try:
        body = json.loads(body)
    except ValueError:
        pass
    return st, body, headers


def ids(v):
    return [s["sandboxID"] for s in v] if isinstance(v, list) else v


made = []
with d:
    for i in range(5):
        st, sb = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 300, "metadata": {"t": TAG}}, A)
        made.append(sb["sandboxID"])
        time.sleep(0.02)
    newest = list(reversed(made))
    st, v, h = get("/v2/sandboxes")
    check("the default order is newest first", st == 200 and ids(v) == newest, (st, ids(v), newest))
    check("X-Total-Running counts the matches", h.get("x-total-running") == "5", h)
    st, v, _ = get("/v2/sandboxes", order="asc")
    check("order=asc: oldest first", st == 200 and ids(v) == made, (st, ids(v)))
    st, v, _ = get("/sandboxes")
    check("the v1 list is newest first too", st == 200 and ids(v) == newest, (st, ids(v)))

    # pages: stable, each sandbox once, a new one between pages moves nothing
    seen, token, extra = [], None, None
    for page in range(10):
        st, v, h = get("/v2/sandboxes", limit="2", nextToken=token)
        if st != 200:
            break
        seen += ids(v)
        token = h.get("x-next-token")
        if page == 0:
            st2, sb = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 300, "metadata": {"t": TAG}}, A)
            extra = sb["sandboxID"]
            made.append(extra)
        if not token:
            break
    check("pages of 2 give every sandbox once, newest first, untouched by a create between them",
          seen == newest, (seen, newest, extra))
    seen, token = [], None
    for _ in range(10):
        st, v, h = get("/v2/sandboxes", limit="2", order="asc", nextToken=token)
        seen += ids(v) if st == 200 else []
        token = h.get("x-next-token")
        if st != 200 or not token:
            break
    check("pages with order=asc: oldest first, each once", seen == made, (seen, made))
    st, v, _ = get("/v2/sandboxes", nextToken="garbage")
    check("a token this server did not give: 400", st == 400 and "nextToken" in v.get("message", ""), (st, v))

    # the time window
    st, info = d.req("GET", f"/sandboxes/{made[2]}", headers=A)
    t2 = info["startedAt"]
    st, v, _ = get("/v2/sandboxes", startedAfter=t2, order="asc")
    check("startedAfter: that one and the later ones", st == 200 and ids(v) == made[2:], (st, ids(v), t2))
    st, v, _ = get("/v2/sandboxes", startedBefore=t2, order="asc")
    check("startedBefore: that one and the earlier ones", st == 200 and ids(v) == made[:3], (st, ids(v), t2))
    st, v, _ = get("/v2/sandboxes", startedAfter="yesterday")
    check("startedAfter that is no RFC 3339 time: 400 naming it",
          st == 400 and "startedAfter" in v.get("message", ""), (st, v))
    st, v, _ = get("/v2/sandboxes", order="sideways")
    check("order other than asc/desc: 400 naming it", st == 400 and "order" in v.get("message", ""), (st, v))
    st, v, _ = get("/v2/sandboxes", state="running,sleeping")
    check("an unknown state: 400 naming it", st == 400 and "sleeping" in v.get("message", ""), (st, v))

    # template and state filters
    st, v, _ = get("/v2/sandboxes", template="base")
    check("template=base: all of them (the built-in template)", st == 200 and len(v) == len(made), (st, len(v)))
    st, v, _ = get("/v2/sandboxes", template="another-template")
    check("template=another-template: none", st == 200 and v == [], (st, v))
    d.req("POST", f"/sandboxes/{made[0]}/pause", {"memory": False}, A)
    st, v, h = get("/v2/sandboxes", state="paused")
    check("state=paused: only the paused one", st == 200 and ids(v) == [made[0]], (st, ids(v)))
    st, v, h = get("/v2/sandboxes", state="running")
    check("state=running: the others", st == 200 and made[0] not in ids(v) and len(v) == len(made) - 1,
          (st, ids(v)))

    # snapshots by source and by name
    d.req("POST", f"/sandboxes/{made[1]}/snapshots", {"name": f"{TAG}-a"}, A)
    d.req("POST", f"/sandboxes/{made[2]}/snapshots", {"name": f"{TAG}-b"}, A)
    st, v = d.req("GET", "/snapshots?" + urllib.parse.urlencode({"sandboxID": made[1]}), headers=A)
    names = [n for s in v for n in s.get("names", [])] if st == 200 else v
    check("listSnapshots({sandboxId}): that sandbox's only", names == [f"{TAG}-a"], (st, names))
    st, v = d.req("GET", "/snapshots?" + urllib.parse.urlencode({"name": f"{TAG}-b"}), headers=A)
    names = [n for s in v for n in s.get("names", [])] if st == 200 else v
    check("listSnapshots({name}): that one only", names == [f"{TAG}-b"], (st, names))
    for s in (v if st == 200 else []):
        d.req("DELETE", f"/templates/{s['snapshotID']}", headers=A)
    st, v = d.req("GET", "/snapshots?" + urllib.parse.urlencode({"name": f"{TAG}-a"}), headers=A)
    for s in (v if st == 200 else []):
        d.req("DELETE", f"/templates/{s['snapshotID']}", headers=A)

    # metrics in a window
    now = int(time.time())
    st, v = d.req("GET", f"/sandboxes/{made[1]}/metrics?start={now - 60}&end={now + 60}", headers=A)
    check("metrics in a window around now: the sample", st == 200 and len(v) == 1, (st, v))
    st, v = d.req("GET", f"/sandboxes/{made[1]}/metrics?start={now - 7200}&end={now - 3600}", headers=A)
    check("metrics in a window in the past: none (no history is kept)", st == 200 and v == [], (st, v))
    st, v = d.req("GET", f"/sandboxes/{made[1]}/metrics?start={now}&end={now - 10}", headers=A)
    check("metrics with start after end: 400", st == 400, (st, v))
    st, v = d.req("GET", f"/sandboxes/{made[1]}/metrics?start=soon", headers=A)
    check("metrics with a start that is no number: 400", st == 400, (st, v))
finish()
