#!/usr/bin/env python3
"""What E2B has and abox does not, as the SDKs ask for it, against a live
aboxd, as TAP: Template.exists of the built-in names is true (and of an
unknown one false), volumes and MCP are refused with a message naming
what is missing, never a bare "no route" or a silent create, and an
unknown code-interpreter language is a 400 naming it.

usage: unsupported.py BUILD_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "unsupported")
A = d.key(0)
with d:
    for name in ("base", "code-interpreter-v1", "host"):
        st, b = d.req("GET", f"/templates/aliases/{name}", headers=A)
        check(f"Template.exists('{name}'): 200 with its templateID", st == 200 and b.get("templateID") == name,
              (st, b))
    st, b = d.req("GET", "/templates/aliases/no-such-template", headers=A)
    check("an unknown alias: 404 naming it", st == 404 and "no-such-template" in b.get("message", ""), (st, b))
    st, b = d.req("GET", "/templates/aliases/base", headers={})
    check("the alias check wants an API key (401)", st == 401, (st, b))
    st, b = d.req("GET", "/volumes", headers=A)
    check("GET /volumes: 501 saying volumes are not supported",
          st == 501 and "volumes are not supported" in b.get("message", ""), (st, b))
    st, b = d.req("POST", "/volumes", {"name": "v"}, A)
    check("POST /volumes: 501 too", st == 501, (st, b))
    before = d.sandboxes()
    st, b = d.req("POST", "/sandboxes", {"templateID": "base", "volumeMounts": [{"name": "v", "path": "/data"}]}, A)
    check("create with volumeMounts: 400 naming them", st == 400 and "volumeMounts" in b.get("message", ""), (st, b))
    st, b = d.req("POST", "/sandboxes", {"templateID": "base", "mcp": {"github": {"token": "x"}}}, A)
    check("create with mcp: 400 naming it", st == 400 and "mcp" in b.get("message", ""), (st, b))
    check("the refused creates left nothing", d.sandboxes() == before, (before, d.sandboxes()))
    st, b = d.req("POST", "/sandboxes", {"templateID": "base", "timeout": 60, "mcp": None, "volumeMounts": []}, A)
    check("null mcp and empty volumeMounts ask for nothing: 201", st == 201, (st, b))
    sid = b.get("sandboxID") if st == 201 else None
    if sid:
        h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999", "Content-Type": "application/json",
             "X-Access-Token": b.get("envdAccessToken", "")}
        st, out = d.req_raw("POST", "/execute", b'{"code": "1", "language": "cobol"}', h)
        check("an unknown language: 400 naming it and the supported ones",
              st == 400 and b"cobol" in out and b"python" in out, (st, out[:300]))
finish()
