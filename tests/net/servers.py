"""The internet of the network tests: started by world.py inside the
namespace that stands for it, on documentation addresses only.

    203.0.113.53  DNS (UDP and TCP 53); every question it gets is logged
    203.0.113.10  HTTP 80, HTTPS 443, UDP echo 7, a server-first banner
                  on 2222, an SMTP banner on 25, HTTP on 8080
    203.0.113.11  HTTP 80, HTTPS 443 (another site)
    203.0.113.12  a server-first banner on 80 (banner.test)
    169.254.169.254  HTTP 80: a stand-in for a cloud metadata service

usage: servers.py DIR   (DIR: the certificates, the query log, ready)"""
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

ZONE = {
    "allowed.test": "203.0.113.10",
    "www.allowed.test": "203.0.113.10",
    "api.allowed.test": "203.0.113.10",
    "other.test": "203.0.113.11",
    "www.other.test": "203.0.113.11",
    "rebind.test": "10.0.0.5",
    "www.rebind.test": "10.0.0.5",
    "meta.test": "169.254.169.254",
    "host.test": "198.51.100.2",
    "deny.test": "203.0.113.11",
    "banner.test": "203.0.113.12",
}

DIR = sys.argv[1]
log_lock = threading.Lock()
once_seen = set()


def log_query(name, qtype, how):
    with log_lock, open(os.path.join(DIR, "queries.log"), "a") as f:
        f.write(f"{how} {qtype} {name}\n")


def parse_name(m, off):
    labels = []
    while True:
        n = m[off]
        if n == 0:
            return ".".join(labels), off + 1
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(m[off + 1:off + 1 + n].decode("latin-1"))
        off += 1 + n


def dns_answer(m, how):
    qid, flags, qd = struct.unpack("!HHH", m[:6])
    name, off = parse_name(m, 12)
    qtype, qclass = struct.unpack("!HH", m[off:off + 4])
    log_query(name.lower(), qtype, how)
    question = m[12:off + 4]
    key = name.lower().rstrip(".")
    ans = b""
    rcode = 0
    if key in ZONE:
        if qtype == 1:
            ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(ZONE[key])
    elif key.endswith(".once.test") and qtype == 1:
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("203.0.113.10")
    elif key.endswith("txt.test") and qtype == 16:
        txt = b"hello"
        ans = b"\xc0\x0c" + struct.pack("!HHIH", 16, 1, 60, len(txt) + 1) + bytes([len(txt)]) + txt
    else:
        rcode = 3
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, 1 if ans else 0, 0, 0)
    return hdr + question + ans


class DNSUDP(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        try:
            a = dns_answer(data, "udp")
            # *.silent.test: logged, never answered (a query left open);
            # *.once.test: the first query of each name is lost
            if b"\x06silent\x04test\x00" in data:
                return
            if b"\x04once\x04test\x00" in data:
                with log_lock:
                    first = data[12:] not in once_seen
                    once_seen.add(data[12:])
                if first:
                    return
            sock.sendto(a, self.client_address)
        except (ValueError, IndexError, struct.error):
            pass


class DNSTCP(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            m = self.rfile.read(struct.unpack("!H", h)[0])
            try:
                a = dns_answer(m, "tcp")
            except (ValueError, IndexError, struct.error):
                return
            self.wfile.write(struct.pack("!H", len(a)) + a)


class HTTP(socketserver.StreamRequestHandler):
    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            c = self.rfile.read1(4096) if hasattr(self.rfile, "read1") else self.rfile.read(1)
            if not c:
                return
            head += c
            if len(head) > 65536:
                return
        host = ""
        upgrade = False
        for line in head.split(b"\r\n")[1:]:
            if line.lower().startswith(b"host:"):
                host = line[5:].strip().decode("latin-1")
            if line.lower().startswith(b"upgrade:") and b"websocket" in line.lower():
                upgrade = True
        if upgrade:
            # switched, then an echo of whatever comes
            self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            self.wfile.flush()
            while True:
                d = self.request.recv(4096)
                if not d:
                    return
                self.request.sendall(d)
        if head.startswith(b"GET /stream"):
            # a byte every 50 ms for a minute: a long flow to cut
            self.wfile.write(b"HTTP/1.1 200 OK\r\n\r\n")
            for _ in range(1200):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.05)
            return
        blob = os.path.join(DIR, "blob")
        if head.startswith(b"GET /blob") and os.path.exists(blob):
            # a large download for bench/net, sent by the kernel
            n = os.path.getsize(blob)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            self.wfile.flush()
            with open(blob, "rb") as f:
                off = 0
                while off < n:
                    off += os.sendfile(self.request.fileno(), f.fileno(), off, n - off)
            return
        sni = getattr(self.request, "abox_sni", "")
        here = self.request.getsockname()[0]
        body = f"hello from {here} host={host} sni={sni}\n".encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


class TLSServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, addr, handler, ctx):
        self.ctx = ctx
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        seen = {}

        def on_sni(s, name, c):
            seen["sni"] = name or ""

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(DIR, "server.pem"), os.path.join(DIR, "server.key"))
        ctx.sni_callback = on_sni
        ctx.set_alpn_protocols(["http/1.1", "h2"])
        sock.settimeout(10)
        try:
            t = ctx.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError):
            sock.close()
            raise OSError("handshake failed")
        t.abox_sni = seen.get("sni", "") + (",alpn=" + t.selected_alpn_protocol() if t.selected_alpn_protocol() else "")
        return t, addr


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        sock.sendto(data, self.client_address)


class Banner(socketserver.StreamRequestHandler):
    text = b"SSH-2.0-test-server\r\n"

    def handle(self):
        self.wfile.write(self.text)
        self.rfile.readline()


class SMTP(Banner):
    text = b"220 test ESMTP\r\n"


class TCP(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class UDP(socketserver.ThreadingUDPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(srv):
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def main():
    serve(UDP(("203.0.113.53", 53), DNSUDP))
    serve(TCP(("203.0.113.53", 53), DNSTCP))
    for ip in ("203.0.113.10", "203.0.113.11", "169.254.169.254"):
        serve(TCP((ip, 80), HTTP))
    for ip in ("203.0.113.10", "203.0.113.11"):
        serve(TLSServer((ip, 443), HTTP, None))
    serve(TCP(("203.0.113.10", 8080), HTTP))
    serve(UDP(("203.0.113.10", 7), Echo))
    serve(TCP(("203.0.113.10", 2222), Banner))
    serve(TCP(("203.0.113.10", 25), SMTP))
    serve(TCP(("203.0.113.12", 80), Banner))
    with open(os.path.join(DIR, "ready"), "w") as f:
        f.write("ok\n")
    threading.Event().wait()


if __name__ == "__main__":
    main()
