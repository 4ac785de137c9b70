#!/usr/bin/env python3
"""Connections and request heads against a live aboxd, as TAP.

Malformed heads: differing duplicate Content-Length, an unknown
Transfer-Encoding (answered at once, not after the idle cut), NUL bytes in
the request target (raw and %00, in /files paths too) and in header values,
headers folded over lines.

One client cannot lock the others out: a flood of idle connections with
no key (from another address, and from the same address as the client
with a key) leaves the client with a key served at once; one address keeps
at most its cap of connections; a connection that never finishes its head
is cut at the head deadline, however slowly it trickles bytes, while an
idle connection that did send a request with a key keeps the idle timeout.

usage: conns.py BUILD_DIR"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, broke, check, finish, recv_until  # noqa: E402

build = sys.argv[1]
# the idle timeout the issue saw locking everyone out; the head deadline
# and per-client cap are left at their defaults (10 s, 64)
d = Daemon(build, "conns", keys=1, timeout=30, extra_config={"idleTimeoutSeconds": 60})
key = d.keys[0]
KEY = d.key(0)


def raw_exchange(payload, wait=5.0, source=None):
    """Sends payload, reads until the daemon closes or wait passes:
    (seconds taken, status or None, the answer)."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=wait + 5,
                                 source_address=(source, 0) if source else None)
    t0 = time.time()
    s.sendall(payload)
    s.settimeout(wait)
    out = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            out += c
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    st = int(out[9:12]) if out.startswith(b"HTTP/1.1 ") and out[9:12].isdigit() else None
    return time.time() - t0, st, out


def head(line, *headers, body=b""):
    return (line + b"\r\nHost: x\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body)


K = b"X-API-Key: " + key.encode()
try:
    # -- malformed heads ---------------------------------------------------
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", K, b"Content-Length: 0", b"Content-Length: 5"))
    check("differing duplicate Content-Length: 400 naming it", st == 400 and b"Content-Length" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", K, b"Content-Length: 0, 7"))
    check("a Content-Length list that differs: 400", st == 400, out[:300])
    t, st, out = raw_exchange(head(b"POST /v2/sandboxes HTTP/1.1", K, b"Content-Type: application/json",
                                   b"Transfer-Encoding: gzip", body=b"{}"))
    check("an unknown Transfer-Encoding: 501 naming it, at once (not at the idle cut)",
          st == 501 and b"gzip" in out and t < 3, (round(t, 1), out[:300]))
    t, st, out = raw_exchange(head(b"POST /v2/sandboxes HTTP/1.1", K, b"Content-Type: application/json",
                                   b"Transfer-Encoding: chunked, identity", body=b"0\r\n\r\n"))
    check("chunked with another coding: 501", st == 501 and b"identity" in out and t < 3, (round(t, 1), out[:300]))
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes\x00/junk HTTP/1.1", K))
    check("a raw NUL in the request target: 400 naming it", st == 400 and b"NUL" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET\x00X /v2/sandboxes HTTP/1.1", K))
    check("a raw NUL in the method: 400 naming it", st == 400 and b"method" in out, out[:300])
    t, st, out = raw_exchange(head(b"G" * 80 + b"\x00 /v2/sandboxes HTTP/1.1", K, b"X-Other: a\x00b"))
    check("a long method with a NUL, and a NUL in a header: 400", st == 400 and b"NUL" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes%00/junk HTTP/1.1", K))
    check("%00 in the path: 400 naming it", st == 400 and b"NUL" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes?state=running%00paused HTTP/1.1", K))
    check("%00 in the query: 400 naming it", st == 400 and b"NUL" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", K + b"\x00junk"))
    check("a raw NUL in a header value: 400 naming the header", st == 400 and b"X-API-Key" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", K, b"X-Other: a\x00b", b"Connection: close"))
    check("a raw NUL in another header (not the last): 400 naming it", st == 400 and b"X-Other" in out, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", b"X-Fold: a", b"  b", K, b"Connection: close"))
    check("a header folded over lines: 400 naming it (not joined into its name)",
          st == 400 and b"folded" in out, out[:300])
    t, st, out = raw_exchange(b"GET /v2/sandboxes HTTP/1.1\nHost: x\n" + K + b"\nX-Trail: v \t\nConnection: close\n\n")
    check("bare LF line ends and trailing blanks are no NUL (200)", st == 200, out[:300])
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", K, b"Content-Length: 0", b"Content-Length: 0",
                                   b"Connection: close"))
    check("equal duplicate Content-Length and plain heads still served (200)", st == 200, out[:300])

    # a NUL in a /files path named another file than the one sent
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "secure": True}, KEY)
    check("create a sandbox (201)", st == 201, sb)
    sid, token = sb["sandboxID"], sb.get("envdAccessToken", "")
    plane = [b"E2b-Sandbox-Id: " + sid.encode(), b"E2b-Sandbox-Port: 49983", b"X-Access-Token: " + token.encode()]
    files_h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
    t, st, out = raw_exchange(head(b"POST /files?path=/tmp/cut%00.txt HTTP/1.1", *plane,
                                   b"Content-Type: application/octet-stream", b"Content-Length: 4", body=b"data"))
    st2, _ = d.req_raw("GET", "/files?path=/tmp/cut", headers=files_h)
    check("/files?path=/tmp/cut%00.txt: 400 naming the NUL, and no /tmp/cut written",
          st == 400 and b"NUL" in out and st2 == 404, (st, st2, out[:300]))
    chunked = (b"POST /files?path=/tmp/chunked.txt HTTP/1.1\r\nHost: x\r\n" + b"".join(h + b"\r\n" for h in plane) +
               b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
               b"5\r\nhello\r\n0\r\n\r\n")
    t, st, out = raw_exchange(chunked)
    st2, got = d.req_raw("GET", "/files?path=/tmp/chunked.txt", headers=files_h)
    check("a chunked upload is still taken", st == 200 and got == b"hello", (st, st2, got, out[:300]))
    # many requests with a token in progress from one address (an SDK's
    # command streams and uploads) are not held against its cap
    ups = []
    for i in range(70):
        u = socket.create_connection(("127.0.0.1", d.port), timeout=30, source_address=("127.0.0.6", 0))
        u.sendall(head(f"POST /files?path=/tmp/up{i} HTTP/1.1".encode(), *plane,
                       b"Content-Type: application/octet-stream", b"Content-Length: 1", b"Connection: close"))
        ups.append(u)
    time.sleep(1.0)
    answers = []
    for u in ups:
        try:
            u.sendall(b"x")
            answers.append(recv_until(u)[:12])
        except OSError as e:
            answers.append(repr(e))
        u.close()
    check("70 uploads with a token at once from one address (over its cap of 64): all taken",
          answers.count(b"HTTP/1.1 200") == 70, sorted(set(map(str, answers))))
    d.req("DELETE", f"/sandboxes/{sid}", headers=KEY)

    # -- one client cannot lock the others out -----------------------------
    def flood(source, n):
        out = []
        for _ in range(n):
            try:
                out.append(socket.create_connection(("127.0.0.1", d.port), timeout=5, source_address=(source, 0)))
            except OSError:
                break
        return out

    def still_open(socks):
        time.sleep(1.0)  # what the daemon cuts, it cuts as they come; let it settle
        n = 0
        for s in socks:
            s.setblocking(False)
            try:
                n += s.recv(1, socket.MSG_PEEK) != b""
            except BlockingIOError:
                n += 1
            except OSError:
                pass
        return n

    def close_all(socks):
        for s in socks:
            s.close()

    keyed = head(b"GET /v2/sandboxes HTTP/1.1", K, b"Connection: close")
    idle = flood("127.0.0.2", 1000)
    kept = still_open(idle)
    check("1000 idle connections from one address: at most 64 kept", len(idle) == 1000 and 0 < kept <= 64,
          (len(idle), kept))
    t, st, out = raw_exchange(keyed)
    check("and a client with a key (another address) is served at once", st == 200 and t < 3, (round(t, 1), out[:200]))
    same = flood("127.0.0.1", 1000)
    t, st, out = raw_exchange(keyed)
    check("1000 idle connections from the key holder's own address: it is still served at once",
          st == 200 and t < 3, (round(t, 1), out[:200]))
    t, st, out = raw_exchange(head(b"GET /health HTTP/1.1", b"Connection: close"), source="127.0.0.3")
    check("and so is a client without a key from a third address", st == 200 and t < 3, (round(t, 1), out[:200]))
    close_all(idle + same)
    many = []
    for i in range(16):
        many += flood(f"127.0.1.{i + 1}", 64)
    kept = still_open(many)
    t, st, out = raw_exchange(keyed)
    check("16 addresses x 64 idle connections (more than maxConnections): a tenth is kept for keys, "
          "the client with a key is served at once", len(many) == 1024 and kept <= 900 and st == 200 and t < 3,
          (len(many), kept, round(t, 1), out[:200]))
    close_all(many)
    time.sleep(1.0)

    # 64 requests without a key holding their connections (bodies that
    # never come) from one address: a client with a key from that address
    # still gets in, one more without a key is refused at once
    slow = []
    for _ in range(64):
        u = socket.create_connection(("127.0.0.1", d.port), timeout=10, source_address=("127.0.0.7", 0))
        u.sendall(head(b"POST /v2/sandboxes HTTP/1.1", b"Content-Type: application/json", b"Content-Length: 100",
                       body=b"{"))
        slow.append(u)
    time.sleep(0.5)
    t, st, out = raw_exchange(keyed, source="127.0.0.7")
    check("64 busy requests without a key from one address: a client with a key from it is served at once",
          st == 200 and t < 3, (round(t, 1), out[:200]))
    t, st, out = raw_exchange(head(b"GET /v2/sandboxes HTTP/1.1", b"Connection: close"), source="127.0.0.7")
    check("and one more without a key is refused at once (503 naming the limit)",
          st == 503 and b"maxConnectionsPerClient" in out and t < 3, (round(t, 1), out[:300]))
    close_all(slow)
    time.sleep(0.5)

    # the head deadline (10 s by default): a head trickled a byte a second
    # is cut at it, though the idle timeout (60 s) never passes; between
    # requests, a connection without a key gets it too, one with a key
    # keeps the idle timeout
    import threading
    ends = {}

    def trickle():
        s = socket.create_connection(("127.0.0.1", d.port), source_address=("127.0.0.4", 0))
        t0 = time.time()
        s.sendall(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n")
        try:
            for _ in range(30):
                s.sendall(b"X")
                s.settimeout(1.0)
                try:
                    if s.recv(4096) == b"":
                        break
                except socket.timeout:
                    pass
        except OSError:
            pass
        ends["trickle"] = time.time() - t0
        s.close()

    def idle_after(name, payload):
        s = socket.create_connection(("127.0.0.1", d.port), source_address=("127.0.0.4", 0))
        t0 = time.time()
        s.sendall(payload)
        s.settimeout(30)
        got = b""
        try:
            while b"\r\n\r\n" not in got:
                got += s.recv(4096)
            time.sleep(13)
            s.sendall(head(b"GET /health HTTP/1.1", b"Connection: close"))
            second = s.recv(4096)
        except OSError:
            second = b""
        ends[name] = (got[:12], second[:12], time.time() - t0)
        s.close()

    ts = [threading.Thread(target=trickle),
          threading.Thread(target=idle_after, args=("nokey", head(b"GET /v2/sandboxes HTTP/1.1"))),
          threading.Thread(target=idle_after, args=("key", head(b"GET /v2/sandboxes HTTP/1.1", K)))]
    for th in ts:
        th.start()
    for th in ts:
        th.join(60)
    check("a head trickled a byte a second is cut at the head deadline (~10 s)",
          8 <= ends.get("trickle", 0) <= 13, ends.get("trickle"))
    nk = ends.get("nokey", (b"", b"", 0))
    check("a connection idle after a request without a key is cut at the head deadline",
          nk[0].startswith(b"HTTP/1.1 401") and not nk[1].startswith(b"HTTP/1.1 200"), nk)
    wk = ends.get("key", (b"", b"", 0))
    check("one idle after a request with a key keeps the idle timeout and serves the next request",
          wk[0].startswith(b"HTTP/1.1 200") and wk[1].startswith(b"HTTP/1.1 200"), wk)

    st, _ = d.req("GET", "/health")
    check("the daemon still serves after all that", st == 200)
except Exception:
    broke()
finally:
    d.stop()
finish()
