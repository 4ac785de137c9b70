#!/usr/bin/env python3
"""POST /sandboxes and the other JSON routes against a live aboxd, as TAP:
metadata and envVars are bounded (entries, name and value sizes) with a
400 that names the bound, wrong types, negative or huge timeouts,
duplicate keys and NUL bytes are a 400 naming the field — and no refused
create leaves a sandbox behind (`abox ls` before and after).

usage: create_input.py BUILD_DIR"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, broke, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "create-input")
A = d.key(0)


def refused(name, body, field, path="/v2/sandboxes", status=400):
    st, b = d.req("POST", path, body, A)
    msg = b.get("message", "") if isinstance(b, dict) else str(b)
    check(f"{name}: {status} naming '{field}'", st == status and field in msg and b.get("code") == status,
          (st, b))
    if st == 201 and isinstance(b, dict) and b.get("sandboxID"):
        d.req("DELETE", f"/sandboxes/{b['sandboxID']}", headers=A)


try:
    before = d.sandboxes()

    # item 6: bounded metadata; nothing is left running by a refused create
    refused("64 metadata entries", {"templateID": "base", "metadata": {f"k{i}": "v" for i in range(64)}},
            "metadata")
    refused("33 metadata entries", {"templateID": "base", "metadata": {f"k{i}": "v" for i in range(33)}},
            "at most 32")
    refused("a 129-byte metadata name", {"templateID": "base", "metadata": {"k" * 129: "v"}}, "at most 128")
    refused("a 1025-byte metadata value", {"templateID": "base", "metadata": {"k": "v" * 1025}}, "at most 1024")
    refused("a 10 MB metadata value", {"templateID": "base", "metadata": {"k": "v" * (10 << 20)}}, "metadata")
    refused("9 KiB of metadata in all", {"templateID": "base", "metadata": {f"k{i}": "v" * 1000 for i in range(9)}},
            "8192 bytes")
    refused("a 10 MB envVars value", {"templateID": "base", "envVars": {"K": "v" * (10 << 20)}}, "envVars")
    refused("1025 envVars", {"templateID": "base", "envVars": {f"K{i}": "v" for i in range(1025)}}, "envVars")
    check("no refused create left a sandbox", d.sandboxes() == before, (before, d.sandboxes()))

    meta = {f"k{i:02d}": "v" * (8192 // 32 - 3) for i in range(32)}  # 32 entries, 8192 bytes
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60, "metadata": meta}, A)
    check("32 entries within 8192 bytes: 201", st == 201, (st, sb))
    if st == 201:
        st, info = d.req("GET", f"/sandboxes/{sb['sandboxID']}", headers=A)
        check("... all 32 are shown", st == 200 and info.get("metadata") == meta, (st, info))
        d.req("DELETE", f"/sandboxes/{sb['sandboxID']}", headers=A)

    # item 12: types, ranges, duplicate keys, NUL bytes
    for field, value in [("timeout", "60"), ("timeout", -5), ("timeout", 10 ** 12), ("timeout", 1.5),
                         ("timeout", 2 ** 63), ("timeout", True),
                         ("templateID", 5), ("metadata", "x"), ("metadata", ["a"]), ("envVars", []),
                         ("secure", "yes"), ("autoPause", 1), ("memoryMB", "big"), ("memoryMB", -1),
                         ("memoryMB", 10 ** 12), ("diskSizeMB", 1.5), ("cpuCount", "2"), ("cpuCount", 0)]:
        refused(f"{field}: {json.dumps(value)[:20]}", {"templateID": "base", field: value}, field)
    refused("a body that is not an object", [1, 2], "JSON object")
    refused("duplicate top-level keys", b'{"templateID": "base", "timeout": 60, "timeout": 120}', "timeout")
    refused("duplicate metadata names", b'{"templateID": "base", "metadata": {"a": "1", "a": "2"}}', "metadata.a")
    refused("duplicate names spelled with escapes", b'{"templateID": "base", "metadata": {"a": "1", "\\u0061": "2"}}',
            "metadata.a")
    refused("a NUL in templateID", b'{"templateID": "base\\u0000x"}', "templateID")
    refused("a NUL in a metadata value", b'{"templateID": "base", "metadata": {"k": "a\\u0000b"}}', "metadata.k")
    refused("a NUL in a metadata name", b'{"templateID": "base", "metadata": {"k\\u0000x": "v"}}', "metadata")
    refused("a raw NUL byte in the body", b'{"templateID": "base", "metadata": {"k": "a\x00b"}}', "NUL")
    refused("a NUL in an envVars value", b'{"templateID": "base", "envVars": {"K": "a\\u0000b"}}', "envVars.K")
    check("no refused create left a sandbox (types)", d.sandboxes() == before, (before, d.sandboxes()))

    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60, "metadata": None,
                                             "envVars": None, "autoPause": None, "secure": True}, A)
    check("null means absent: 201", st == 201, (st, sb))
    sid = sb.get("sandboxID") if st == 201 else None
    if sid:
        refused("setTimeout: '60'", {"timeout": "60"}, "timeout", f"/sandboxes/{sid}/timeout")
        refused("setTimeout: duplicate keys", b'{"timeout": 60, "timeout": 0}', "timeout", f"/sandboxes/{sid}/timeout")
        refused("connect: timeout '60'", {"timeout": "60"}, "timeout", f"/sandboxes/{sid}/connect")
        refused("connect: timeout -5", {"timeout": -5}, "timeout", f"/sandboxes/{sid}/connect")
        refused("connect: duplicate keys", b'{"timeout": 60, "timeout": 10}', "timeout", f"/sandboxes/{sid}/connect")
        refused("fork: count '2'", {"count": "2"}, "count", f"/sandboxes/{sid}/fork")
        refused("fork: timeout -1", {"timeout": -1}, "timeout", f"/sandboxes/{sid}/fork")
        refused("fork: timeout huge", {"timeout": 10 ** 10}, "timeout", f"/sandboxes/{sid}/fork")
        refused("pause: memory 'no'", {"memory": "no"}, "memory", f"/sandboxes/{sid}/pause")
        refused("snapshot: name 5", {"name": 5}, "name", f"/sandboxes/{sid}/snapshots")
        refused("snapshot: a NUL in name", b'{"name": "a\\u0000b"}', "name", f"/sandboxes/{sid}/snapshots")
        # StreamInput's start message: "pid": "1" must not be read as pid 1
        msg = json.dumps({"start": {"process": {"pid": "1"}}}).encode()
        env = bytes([0]) + struct.pack(">I", len(msg)) + msg
        h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json",
             "X-Access-Token": sb.get("envdAccessToken") or ""}
        st, out = d.req_raw("POST", "/process.Process/StreamInput", env, h)
        check("StreamInput: pid '1' is invalid_argument naming start.process.pid",
              st == 200 and b"invalid_argument" in out and b"start.process.pid" in out, (st, out[:300]))
        st, info = d.req("GET", f"/sandboxes/{sid}", headers=A)
        check("the sandbox is still running after the refused calls", st == 200 and info.get("state") == "running",
              (st, info))
        st, _ = d.req("GET", "/v2/sandboxes?limit=5abc", headers=A)
        check("list: limit '5abc' is a 400", st == 400, st)
        d.req("DELETE", f"/sandboxes/{sid}", headers=A)
except Exception:
    broke()
finally:
    d.stop()
finish()
