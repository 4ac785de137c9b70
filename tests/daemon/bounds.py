#!/usr/bin/env python3
"""aboxd's memory under hostile requests, and the file plane's answers,
as TAP. The daemon's peak resident memory (VmHWM in /proc, reset through
clear_refs before each case) must stay within the bound docs/daemon.md
states while clients list a huge tree, send bodies over the JSON cap,
fill the buffered bodies' budget and upload big files at once. Also:
80 MB uploads (multipart as the SDKs send it, and octet-stream) land
whole; a listing's depth and size limits are 400s naming the limit; a
dangling symlink is a 404; EROFS, EXDEV are 4xx naming the cause.

usage: bounds.py BUILD_DIR"""
import base64
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, finish  # noqa: E402

build = sys.argv[1]
MiB = 1 << 20
d = Daemon(build, "bounds", keys=1, timeout=120)
key = d.keys[0]


def status_kb(field):
    with open(f"/proc/{d.proc.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def peak_growth(fn):
    """Runs fn; returns (its result, how far aboxd's peak RSS rose over
    its RSS before, in bytes)."""
    with open(f"/proc/{d.proc.pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    before = status_kb("VmRSS")
    out = fn()
    return out, (status_kb("VmHWM") - before) * 1024


def parallel(fns):
    out = [None] * len(fns)

    def run(i, f):
        try:
            out[i] = f()
        except Exception as e:  # the case reports it
            out[i] = e

    ts = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def raw_body(path, headers, total, chunked=False, piece=b"x" * (1 << 20)):
    """Sends total bytes of body (chunked or with a Content-Length) and
    returns the status line's code, or 0 when the daemon cut the
    connection before answering."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=120)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n"
    got = b""
    try:
        s.sendall(head.encode() + b"\r\n")
        sent = 0
        while sent < total:
            p = piece[: min(len(piece), total - sent)]
            s.sendall(b"%x\r\n%s\r\n" % (len(p), p) if chunked else p)
            sent += len(p)
        if chunked:
            s.sendall(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # answered early and closed: the answer is read below
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            got += c
            if b"\r\n\r\n" in got:
                break
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    try:
        return int(got.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


A = d.key(0)
sid = None
try:
    st, sb = d.req("POST", "/v2/sandboxes",
                  {"templateID": "base", "timeout": 600, "secure": True, "memoryMB": 2048, "diskSizeMB": 2048}, A)
    check("create a sandbox", st == 201, sb)
    sid, token = sb["sandboxID"], sb.get("envdAccessToken")
    plane = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983",
             "Authorization": "Basic " + base64.b64encode(b"root:").decode()}
    if token:
        plane["X-Access-Token"] = token

    def rpc(method, body):
        return d.req("POST", f"/filesystem.Filesystem/{method}", body, dict(plane, **{"Content-Type": "application/json"}))

    def sh(cmd):
        return subprocess.run([os.path.join(build, "abox"), "exec", "-u", "root", sid, "--", "sh", "-c", cmd],
                              capture_output=True, text=True, timeout=300)

    r = sh("mkdir -p /tmp/big/sub && cd /tmp/big && seq 1 80000 | xargs touch && "
           "cd sub && seq 1 30000 | xargs touch && echo made")
    check("a tree of 110,000 files is made in the sandbox", "made" in r.stdout, r.stderr[-400:])

    # ---- listings -------------------------------------------------------
    def list_big():
        st, body = rpc("ListDir", {"path": "/tmp/big", "depth": 1})
        return st, len(body["entries"]) if isinstance(body, dict) and "entries" in body else body

    out, grew = peak_growth(lambda: parallel([list_big] * 4))
    check("4 listings of 80,001 entries at once: all whole",
          all(o == (200, 80001) for o in out), out)
    check(f"... and aboxd's peak memory rose by less than 48 MiB ({grew // MiB} MiB)", grew < 48 * MiB, grew)

    (st, body), grew = peak_growth(lambda: rpc("ListDir", {"path": "/tmp/big", "depth": 2}))
    check("a listing over 100,000 entries: 400 naming the limit",
          st == 400 and isinstance(body, dict) and "100000" in body.get("message", ""), (st, body))
    check(f"... without holding the tree ({grew // MiB} MiB)", grew < 48 * MiB, grew)
    # the report's case: / at the greatest depth, 4 at once
    out, grew = peak_growth(lambda: parallel([lambda: rpc("ListDir", {"path": "/", "depth": 16})[0]] * 4))
    check("4 listings of / at depth 16 at once: each answered (200, or 400 over the entry limit)",
          all(o in (200, 400) for o in out), out)
    check(f"... and aboxd's peak memory rose by less than 48 MiB ({grew // MiB} MiB)", grew < 48 * MiB, grew)
    st, body = rpc("ListDir", {"path": "/", "depth": 17})
    check("depth 17: 400 naming the limit of 16",
          st == 400 and isinstance(body, dict) and "16" in body.get("message", ""), (st, body))
    st, body = rpc("ListDir", {"path": "/", "depth": -1})
    check("depth -1: 400 (not some other depth)", st == 400, (st, body))
    st, body = rpc("ListDir", {"path": "/tmp/big/sub", "depth": "1"})
    check("depth as a proto3 JSON string works", st == 200 and len(body.get("entries", [])) == 30000,
          (st, str(body)[:200]))
    sh("rm -rf /tmp/big")

    # each polling watcher is a thread, an init connection and its queue
    made = [rpc("CreateWatcher", {"path": "/tmp"}) for _ in range(9)]
    check("a 9th watcher of one sandbox: 429 naming the limit of 8",
          all(m[0] == 200 for m in made[:8]) and made[8][0] == 429 and "8 per sandbox" in str(made[8][1]),
          [m[0] for m in made] + [made[8][1]])
    for st, body in made:
        if st == 200:
            rpc("RemoveWatcher", {"watcherId": body["watcherId"]})
    st, body = rpc("CreateWatcher", {"path": "/tmp"})
    check("... and removing them frees their places", st == 200, st)
    if st == 200:
        rpc("RemoveWatcher", {"watcherId": body["watcherId"]})

    # ---- bodies ----------------------------------------------------------
    big = 70 * MiB
    out, grew = peak_growth(lambda: parallel(
        [lambda: raw_body("/v2/sandboxes", {"X-API-Key": key, "Content-Type": "application/json"}, big)] * 8))
    check("8 JSON bodies of 70 MB at once: 413 each", all(o == 413 for o in out), out)
    check(f"... and aboxd's peak memory rose by less than 32 MiB ({grew // MiB} MiB)", grew < 32 * MiB, grew)

    # a client that asks before it sends (curl does for big bodies) is
    # told at once, and sends nothing
    s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    s.sendall(f"POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {big}\r\nExpect: 100-continue\r\n\r\n".encode())
    try:
        first = s.recv(4096)
    except socket.timeout:
        first = b"(nothing in 10 s)"
    s.close()
    check("a 70 MB body announced with Expect: 100-continue: 413 before any of it is sent",
          first.startswith(b"HTTP/1.1 413"), first[:120])

    out, grew = peak_growth(lambda: parallel(
        [lambda: raw_body("/v2/sandboxes", {"X-API-Key": key, "Content-Type": "application/json"}, 60 * MiB,
                          chunked=True)] * 8))
    check("8 chunked JSON bodies of 60 MB at once: the budget turns some away (503), none is taken",
          all(o in (400, 503) for o in out) and 503 in out, out)
    check(f"... and aboxd's peak memory stays within the 128 MiB budget + 48 MiB ({grew // MiB} MiB)",
          grew < 176 * MiB, grew)

    # ---- uploads ---------------------------------------------------------
    def multipart(parts, boundary="----abox" + os.urandom(8).hex()):
        """parts: (field, filename, bytes) -> (content type, body)"""
        b = b""
        for field, fn, data in parts:
            fname = f"; filename=\"{fn}\"" if fn is not None else ""
            b += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"{fname}\r\n"
                  f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
        return f"multipart/form-data; boundary={boundary}", b + f"--{boundary}--\r\n".encode()

    def sandbox_sha(path):
        st, data = d.call("GET", f"/files?path={path}", headers=plane)
        return st, hashlib.sha256(data).hexdigest(), len(data)

    data80 = os.urandom(80 * MiB)
    ct, body = multipart([("file", "/home/user/big.bin", data80)])
    st, out = d.call("POST", "/files?path=/home/user/big.bin", body, dict(plane, **{"Content-Type": ct}))
    ok = st == 200 and json.loads(out)[0]["path"] == "/home/user/big.bin"
    check("an 80 MB multipart upload as the SDKs send it: 200", ok, (st, out[:300]))
    check("... and the file is the one sent", sandbox_sha("/home/user/big.bin") ==
          (200, hashlib.sha256(data80).hexdigest(), len(data80)))
    st, out = d.call("POST", "/files?path=/home/user/big2.bin", data80,
                     dict(plane, **{"Content-Type": "application/octet-stream"}))
    check("an 80 MB octet-stream upload: 200, the same bytes",
          st == 200 and sandbox_sha("/home/user/big2.bin")[1] == hashlib.sha256(data80).hexdigest(), (st, out[:300]))
    del body

    def upload70(i):
        # each its own bytes: concurrent writers must not mix them
        ct, b = multipart([("file", f"/tmp/u{i}.bin", data80[i * MiB: i * MiB + 70 * MiB])])
        return d.call("POST", f"/files?path=/tmp/u{i}.bin", b, dict(plane, **{"Content-Type": ct}))[0]

    out, grew = peak_growth(lambda: parallel([lambda i=i: upload70(i) for i in range(8)]))
    check("8 multipart uploads of 70 MB at once: 200 each", all(o == 200 for o in out), out)
    check(f"... and aboxd's peak memory rose by less than 48 MiB ({grew // MiB} MiB)", grew < 48 * MiB, grew)
    sums = sh("cd /tmp && sha256sum u0.bin u1.bin u2.bin u3.bin u4.bin u5.bin u6.bin u7.bin").stdout.split()[::2]
    want = [hashlib.sha256(data80[i * MiB: i * MiB + 70 * MiB]).hexdigest() for i in range(8)]
    check("... each file holds its own upload's bytes", sums == want, (sums, want))
    sh("rm -f /tmp/u*.bin /home/user/big.bin /home/user/big2.bin")

    # several files in one body, the delimiters falling across reads
    ct, body = multipart([("file", "/home/user/a.txt", b"alpha\r\n--not-a-boundary\r\n" * 5000),
                          ("note", None, b"a form field, not a file"),
                          ("file", "/home/user/b.txt", b"beta")])
    st, out = d.call("POST", "/files", body, dict(plane, **{"Content-Type": ct}))
    names = [e.get("path") for e in json.loads(out)] if st == 200 else out
    check("a multipart body of two files (no ?path=): each at its filename", names == ["/home/user/a.txt",
          "/home/user/b.txt"], (st, names))
    check("... with the bytes sent", sandbox_sha("/home/user/a.txt")[1] ==
          hashlib.sha256(b"alpha\r\n--not-a-boundary\r\n" * 5000).hexdigest() and
          sandbox_sha("/home/user/b.txt")[2] == 4)
    ct, body = multipart([("file", "/home/user/cut.txt", b"z" * 100000)])
    st, out = d.call("POST", "/files", body[:-200], dict(plane, **{"Content-Type": ct}))
    check("a multipart body that ends inside a part: 400, no half file",
          st == 400 and sandbox_sha("/home/user/cut.txt")[0] == 404, (st, out[:200]))
    st = raw_body("/v2/sandboxes", {"X-API-Key": key, "Content-Type": "application/json"}, 65 * MiB, chunked=True)
    check("the JSON body cap holds for JSON routes (chunked, so read until it is over): 413", st == 413, st)

    # ---- the file plane's answers -----------------------------------------
    sh("ln -sf /home/user/nowhere /home/user/dangling && printf 'target bytes' > /home/user/t.txt && "
       "ln -sf t.txt /home/user/link && ln -sf loop1 /home/user/loop2 && ln -sf loop2 /home/user/loop1 && "
       "echo x > /dev/shm/x")
    st, out = d.call("GET", "/files?path=/home/user/dangling", headers=plane)
    check("GET of a dangling symlink: 404 naming it", st == 404 and b"dangling" in out, (st, out[:200]))
    st, out = d.call("GET", "/files?path=/home/user/link", headers=plane)
    check("GET of a symlink: its target's bytes, whole", st == 200 and out == b"target bytes", (st, out[:200]))
    st, out = d.call("GET", "/files?path=/home/user/loop1", headers=plane)
    check("GET of a symlink cycle: 400", st == 400, (st, out[:200]))
    st, out = d.call("POST", "/files?path=/sys/abox-test", b"x",
                     dict(plane, **{"Content-Type": "application/octet-stream"}))
    check("a write on a read-only mount (EROFS): 403 naming the cause",
          st == 403 and b"Read-only file system" in out, (st, out[:200]))
    st, body = rpc("Move", {"source": "/dev/shm/x", "destination": "/home/user/x"})
    check("a move across filesystems (EXDEV): 400 naming the cause",
          st == 400 and "cross-device" in str(body), (st, body))
except Exception:
    broke()
finally:
    try:
        if sid:
            d.req("DELETE", f"/sandboxes/{sid}", headers=A)
        alive = d.proc.poll() is None
        check("aboxd is still serving at the end", alive and d.req("GET", "/health")[0] == 200)
    finally:
        d.stop()
finish()
