#!/usr/bin/env python3
"""The proxy to other ports inside a sandbox, as TAP: HTTP (query strings,
bodies, status codes, headers, by E2b-Sandbox-* headers and by the Host
form), a WebSocket echo both ways, a closed port (502), another key's
sandbox, and no port opened on the host.

usage: proxy.py BUILD_DIR"""
import base64
import hashlib
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, envelope, finish, recv_until, wait_for  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "proxy", keys=1, extra_config={"domain": "abox.test"}, timeout=30)

# an HTTP server and a WebSocket echo server, run inside the sandbox
SERVER = r'''
import base64, hashlib, http.server, socket, socketserver, struct, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("path=" + self.path).encode()
        self.send_response(200); self.send_header("X-From", "sandbox")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); data = self.rfile.read(n)
        self.send_response(201); self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data[::-1])
    def log_message(self, *a): pass
threading.Thread(target=http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever, daemon=True).start()
def ws(c):
    req = b""
    while b"\r\n\r\n" not in req: req += c.recv(4096)
    k = [l.split(b":", 1)[1].strip() for l in req.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
    acc = base64.b64encode(hashlib.sha1(k + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acc + b"\r\n\r\n")
    while True:
        h = c.recv(2)
        if len(h) < 2: return
        n = h[1] & 127; mask = c.recv(4); data = bytearray(c.recv(n))
        for i in range(n): data[i] ^= mask[i % 4]
        c.sendall(bytes([0x81, n]) + bytes(data).upper())
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); srv.bind(("127.0.0.1", 8001)); srv.listen()
open("/tmp/ready", "w").close()
while True:
    c, _ = srv.accept(); threading.Thread(target=ws, args=(c,), daemon=True).start()
'''


def envd_run(sid, cmd):
    d.call("POST", "/process.Process/Start", envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}),
           {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/connect+json",
            "X-Access-Token": token})


with d:
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, d.key(0))
    sid, token = sb["sandboxID"], sb["envdAccessToken"]
    envd_run(sid, "cat > /tmp/srv.py <<'EOF'\n" + SERVER + "\nEOF\nnohup python3 /tmp/srv.py >/dev/null 2>&1 &")
    envd = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "X-Access-Token": token}
    wait_for(lambda: d.call("GET", "/files?path=/tmp/ready", headers=envd)[0], lambda st: st == 200, 100, 0.1)

    to8000 = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8000"}
    st, data, hdrs = d.exchange("GET", "/some/path?q=a%20b&x=1", headers=to8000)
    check("GET through the proxy, query string intact", st == 200 and data == b"path=/some/path?q=a%20b&x=1", (st, data))
    check("upstream headers come back", hdrs.get("X-From") == "sandbox", hdrs)
    st, data = d.call("POST", "/echo", b"abcdef", to8000)
    check("POST body through the proxy, status kept", st == 201 and data == b"fedcba", (st, data))
    st, data = d.call("GET", "/by-host", headers={"Host": f"8000-{sid}.abox.test"})
    check("the Host form routes too", st == 200 and data == b"path=/by-host", (st, data))
    st, data = d.call("GET", "/", headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "8009"})
    check("a closed port is a 502 naming it", st == 502 and b"8009" in data, (st, data))
    st, data = d.call("GET", "/", headers={"E2b-Sandbox-Id": "a" * 20, "E2b-Sandbox-Port": "8000"})
    check("an unknown sandbox is a 502", st == 502, (st, data))
    listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout
    check("no port 8000/8001 opened on the host", ":8000 " not in listening and ":8001 " not in listening, listening)

    c = socket.create_connection(("127.0.0.1", d.port), timeout=10)
    wskey = base64.b64encode(os.urandom(16))
    c.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " +
              wskey + b"\r\nSec-WebSocket-Version: 13\r\nE2b-Sandbox-Id: " + sid.encode() +
              b"\r\nE2b-Sandbox-Port: 8001\r\n\r\n")
    resp = recv_until(c, lambda got: b"\r\n\r\n" in got)
    want = base64.b64encode(hashlib.sha1(wskey + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    check("WebSocket upgrade through the proxy (101, accept key)", resp.startswith(b"HTTP/1.1 101") and want in resp, resp[:200])
    echoed = []
    for word in (b"hello", b"again"):
        mask = os.urandom(4)
        c.sendall(bytes([0x81, 0x80 | len(word)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(word)))
        h = c.recv(2)
        echoed.append(c.recv(h[1] & 127) if len(h) == 2 else b"")
    c.close()
    check("WebSocket frames both ways", echoed == [b"HELLO", b"AGAIN"], echoed)
finish()
