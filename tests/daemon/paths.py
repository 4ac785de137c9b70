#!/usr/bin/env python3
"""Paths as envd reads them, against a live aboxd, as TAP: a relative path
(and "~") is below the user's home for every file operation (upload,
download, stat, list, make_dir, move, remove, watch) and for a command's
cwd, as `user`, as `root` and as a user made inside with useradd (whose
home is its /etc/passwd's); removing what is not there succeeds. Names a
sandbox lacks, and names that are no user name at all, are refused with
envd's 401 on every plane, never run as the default user.

usage: paths.py BUILD_DIR"""
import base64
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, envelope, envelopes, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "paths")
A = d.key(0)


def plane(sid, token, user="user", ctype="application/json"):
    return {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": ctype,
            "X-Access-Token": token, "Authorization": "Basic " + base64.b64encode(f"{user}:".encode()).decode()}


def rpc(sid, token, method, body, user="user"):
    return d.req("POST", f"/filesystem.Filesystem/{method}", body, plane(sid, token, user))


def upload(sid, token, path, data, user="user"):
    q = urllib.parse.urlencode({"path": path, "username": user})
    return d.req_raw("POST", f"/files?{q}", data, {**plane(sid, token, user, "application/octet-stream")})


def download(sid, token, path, user="user"):
    q = urllib.parse.urlencode({"path": path, "username": user})
    return d.req_raw("GET", f"/files?{q}", None, plane(sid, token, user))


def run(sid, token, cmd, cwd=None, user="user"):
    """stdout of a command (process.Process/Start)."""
    proc = {"cmd": "/bin/sh", "args": ["-c", cmd]}
    if cwd is not None:
        proc["cwd"] = cwd
    st, data = d.req_raw("POST", "/process.Process/Start", envelope({"process": proc}),
                         plane(sid, token, user, "application/connect+json"))
    out, end = b"", None
    for _, frame in envelopes(data) if st == 200 else []:
        ev = frame.get("event", {})
        if "data" in ev and "stdout" in ev["data"]:
            out += base64.b64decode(ev["data"]["stdout"])
        if "end" in ev:
            end = ev["end"]
    return out.decode(errors="replace"), end, (st, data[-300:])


with d:
    st, sb = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 300}, A)
    sid, tok = sb["sandboxID"], sb["envdAccessToken"]

    out, end, why = run(sid, tok, "useradd -m -d /srv/agent-home agent && echo made", user="root")
    check("useradd inside makes 'agent'", out.strip() == "made", (out, end, why))
    for user, home in (("user", "/home/user"), ("root", "/root"), ("agent", "/srv/agent-home")):
        st, body = upload(sid, tok, "rel.txt", b"hello " + user.encode(), user)
        entry = (json.loads(body) or [{}])[0] if st == 200 else {}
        check(f"{user}: upload of 'rel.txt' lands in {home} (200, path {home}/rel.txt)",
              st == 200 and entry.get("path") == f"{home}/rel.txt", (st, body[:300]))
        out, _, _ = run(sid, tok, f"cat {home}/rel.txt", user=user)
        check(f"{user}: the file is {home}/rel.txt inside", out == f"hello {user}", out)
        st, body = download(sid, tok, "rel.txt", user)
        check(f"{user}: download of 'rel.txt' reads it", st == 200 and body == b"hello " + user.encode(),
              (st, body[:200]))
        st, body = download(sid, tok, "~/rel.txt", user)
        check(f"{user}: '~/rel.txt' is the same file", st == 200 and body == b"hello " + user.encode(),
              (st, body[:200]))
        st, s = rpc(sid, tok, "Stat", {"path": "rel.txt"}, user)
        check(f"{user}: Stat of 'rel.txt' names {home}/rel.txt",
              st == 200 and s.get("entry", {}).get("path") == f"{home}/rel.txt", (st, s))
        st, m = rpc(sid, tok, "MakeDir", {"path": "sub/deeper"}, user)
        check(f"{user}: MakeDir 'sub/deeper' makes {home}/sub/deeper",
              st == 200 and m.get("entry", {}).get("path") == f"{home}/sub/deeper", (st, m))
        st, ls = rpc(sid, tok, "ListDir", {"path": "sub", "depth": 1}, user)
        names = [e.get("path") for e in (ls or {}).get("entries", [])] if st == 200 else []
        check(f"{user}: ListDir 'sub' lists {home}/sub/deeper", f"{home}/sub/deeper" in names, (st, ls))
        st, mv = rpc(sid, tok, "Move", {"source": "rel.txt", "destination": "sub/moved.txt"}, user)
        check(f"{user}: Move 'rel.txt' -> 'sub/moved.txt' stays in the home",
              st == 200 and mv.get("entry", {}).get("path") == f"{home}/sub/moved.txt", (st, mv))
        out, end, why = run(sid, tok, "pwd; cat moved.txt", cwd="sub", user=user)
        check(f"{user}: a command with cwd 'sub' runs in {home}/sub",
              out == f"{home}/sub\nhello {user}", (out, end, why))
        # a watch on a relative folder names its events relative to it
        st, w = rpc(sid, tok, "CreateWatcher", {"path": "sub"}, user)
        wid = (w or {}).get("watcherId")
        run(sid, tok, f"echo x > {home}/sub/new.txt", user=user)
        names = []
        for _ in range(20):
            st2, ev = rpc(sid, tok, "GetWatcherEvents", {"watcherId": wid}, user)
            names += [e.get("name") for e in (ev or {}).get("events", [])]
            if "new.txt" in names:
                break
            time.sleep(0.1)
        check(f"{user}: a watch of 'sub' reports 'new.txt'", st == 200 and wid and "new.txt" in names,
              (st, w, names))
        rpc(sid, tok, "RemoveWatcher", {"watcherId": wid}, user)
        st, r = rpc(sid, tok, "Remove", {"path": "sub"}, user)
        out, _, _ = run(sid, tok, f"test -e {home}/sub && echo there || echo gone", user=user)
        check(f"{user}: Remove 'sub' removes {home}/sub", st == 200 and out.strip() == "gone", (st, r, out))
        st, r = rpc(sid, tok, "Remove", {"path": "never-was.txt"}, user)
        check(f"{user}: Remove of a missing file succeeds, as envd's", st == 200, (st, r))
        st, r = rpc(sid, tok, "Remove", {"path": "/tmp/never/was"}, user)
        check(f"{user}: so does an absolute missing path", st == 200, (st, r))

    # names the sandbox lacks, and names that are no user name at all
    for bad in ("nosuch", "a:b", "../root", "x" * 40, "-rf", "us er"):
        st, body = download(sid, tok, "/etc/hostname", bad)
        check(f"/files as {bad[:12]!r}: 401 naming the lookup, not the default user's read",
              st == 401 and b"error looking up user" in body, (st, body[:200]))
        st, body = upload(sid, tok, "/tmp/by-bad.txt", b"x", bad)
        check(f"upload as {bad[:12]!r}: 401", st == 401, (st, body[:200]))
        out, end, why = run(sid, tok, "id -un", user=bad)
        check(f"a command as {bad[:12]!r}: unauthenticated, nothing runs",
              out == "" and end is None and b"unauthenticated" in why[1], (out, end, why))
    out, _, _ = run(sid, tok, "test -e /tmp/by-bad.txt && echo there || echo none", user="root")
    check("no upload by a refused name was written", out.strip() == "none", out)

    # absolute paths are as given, and what a user may not touch is still refused
    st, body = upload(sid, tok, "/tmp/abs.txt", b"abs")
    check("an absolute path is as given", st == 200 and b"/tmp/abs.txt" in body, (st, body[:200]))
    st, body = upload(sid, tok, "/root/nope.txt", b"x", "user")
    check("user still may not write in /root (403)", st == 403, (st, body[:200]))
finish()
