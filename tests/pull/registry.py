"""A private registry world for the pull tests: every server runs on
loopback inside a network namespace of the test's own (enter()), so no
request can leave the machine.

    Registry   Debian's docker-registry (the CNCF distribution registry)
               with its own storage folder: plain HTTP, TLS with a
               certificate the test made, or TLS with token auth
    TokenServer  the token service such a registry sends clients to: it
               checks Basic credentials and signs a JWT with the test's
               key (openssl does the RS256 signature)
    Proxy      plain HTTP in front of a registry: logs every request
               (method, path, Range) and can cut one blob's body half way
    Fake       a registry that answers what a test tells it to (hostile
               manifests)

Images are built here from files (layer tarballs, an OCI layout, an
index of several platforms) and pushed with skopeo. Everything started
is ended by its pid in stop()."""
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from harness import free_port  # noqa: E402

MARK = "ABOX_PULL_WORLD"


def enter():
    """Re-runs the calling script in a network namespace of its own, with
    loopback up and nothing else."""
    if MARK not in os.environ:
        env = dict(os.environ, **{MARK: str(os.stat("/proc/self/ns/net").st_ino)})
        os.execvpe("unshare", ["unshare", "--net", "--fork", "--kill-child", "--", sys.executable] + sys.argv, env)
    if os.stat("/proc/self/ns/net").st_ino == int(os.environ[MARK]):
        sys.exit("registry: refusing to run in the machine's own network namespace")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def make_cert(d):
    """A self-signed certificate for localhost and 127.0.0.1 (also the
    token server's signing key)."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", os.path.join(d, "key.pem"), "-out", os.path.join(d, "cert.pem")],
                   check=True, capture_output=True)
    return os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")


def _wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


class Registry:
    def __init__(self, d, cert=None, key=None, token=None):
        self.dir = d
        self.port = free_port()
        self.storage = os.path.join(d, "storage")
        os.makedirs(self.storage, exist_ok=True)
        lines = ["version: 0.1", "log:", "  level: warn", "storage:", "  filesystem:",
                 f"    rootdirectory: {self.storage}", "  delete:", "    enabled: true",
                 "http:", f"  addr: 127.0.0.1:{self.port}"]
        if cert:
            lines += ["  tls:", f"    certificate: {cert}", f"    key: {key}"]
        if token:
            lines += ["auth:", "  token:", f"    realm: {token.realm}", f"    service: {token.service}",
                      f"    issuer: {token.issuer}", f"    rootcertbundle: {token.cert}"]
        cfg = os.path.join(d, "config.yml")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = open(os.path.join(d, "registry.log"), "w")
        self.proc = subprocess.Popen(["docker-registry", "serve", cfg], stdout=self.log, stderr=self.log)
        _wait_port(self.port)
        self.host = f"localhost:{self.port}"

    def blob_path(self, digest):
        h = digest.split(":")[1]
        return os.path.join(self.storage, "docker/registry/v2/blobs/sha256", h[:2], h, "data")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def _b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class TokenServer:
    """Docker's token flow: GET realm?service=S&scope=repository:R:pull
    with Basic credentials; answers {"token": JWT} for the right ones."""

    def __init__(self, d, cert, key, users):
        self.cert, self.key, self.users = cert, key, users
        self.service, self.issuer = "abox-test-registry", "abox-test-issuer"
        self.requests = []
        der = subprocess.run(["openssl", "x509", "-in", cert, "-outform", "DER"], capture_output=True,
                             check=True).stdout
        self.x5c = base64.b64encode(der).decode()
        server = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                auth = self.headers.get("Authorization", "")
                server.requests.append((self.path, auth))
                user = None
                if auth.startswith("Basic "):
                    u, _, p = base64.b64decode(auth[6:]).decode().partition(":")
                    if server.users.get(u) == p:
                        user = u
                if not user:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                scope = q.get("scope", [""])[0].split(":")
                access = [{"type": scope[0], "name": scope[1], "actions": scope[2].split(",")}] if len(scope) == 3 else []
                body = json.dumps({"token": server.sign(user, access), "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.realm = f"https://127.0.0.1:{self.port}/token"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def sign(self, user, access):
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.x5c]}
        claims = {"iss": self.issuer, "sub": user, "aud": self.service, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": os.urandom(8).hex(), "access": access}
        signing = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signing.encode(),
                             capture_output=True, check=True).stdout
        return signing + "." + _b64url(sig)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Proxy:
    """Plain HTTP in front of a registry, one upstream connection per
    request. cut: a blob digest whose first whole-body GET is cut after
    half its bytes; the connection then stalls until stall_s passes (or
    the client goes)."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.log = []
        self.cut = None
        self.stall_s = 3600
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.host = f"localhost:{self.port}"
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def gets(self, digest):
        """The requests for a blob: [(range header or None)]."""
        return [rng for (m, path, rng) in self.log if path.endswith("/blobs/" + digest)]

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            f = c.makefile("rb")
            line = f.readline(65536).decode("latin-1")
            parts = line.split()
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                return  # a TLS hello, or junk: hang up
            headers = {}
            while True:
                h = f.readline(65536).decode("latin-1")
                if h in ("\r\n", "\n", ""):
                    break
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
            method, path = parts[0], parts[1]
            self.log.append((method, path, headers.get("range")))
            up = socket.create_connection(("127.0.0.1", self.upstream))
            fwd = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.upstream}", "Connection: close"]
            for k in ("accept", "authorization", "range"):
                if k in headers:
                    fwd.append(f"{k}: {headers[k]}")
            up.sendall(("\r\n".join(fwd) + "\r\n\r\n").encode())
            uf = up.makefile("rb")
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                b = uf.read(1)
                if not b:
                    break
                head += b
            cutting = self.cut and path.endswith("/blobs/" + self.cut) and "range" not in headers
            if cutting:
                self.cut = None
            c.sendall(head)
            length = None
            for hl in head.decode("latin-1").split("\r\n"):
                if hl.lower().startswith("content-length:"):
                    length = int(hl.split(":")[1])
            limit = length // 2 if cutting and length else None
            sent = 0
            while True:
                want = 65536 if limit is None else min(65536, limit - sent)
                if want <= 0:
                    break
                b = uf.read(want)
                if not b:
                    break
                c.sendall(b)
                sent += len(b)
            if limit is not None:
                end = time.time() + self.stall_s
                while time.time() < end and not self.stopping:
                    time.sleep(0.1)
            up.close()
        except OSError:
            pass
        finally:
            c.close()

    def stop(self):
        self.stopping = True
        self.lsock.close()


class Fake:
    """A registry whose answers are set per path: routes[path] = (status,
    headers, body)."""

    def __init__(self):
        self.routes = {"/v2/": (200, {}, b"{}")}
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                status, headers, body = fake.routes.get(self.path, (404, {}, b'{"errors":[{"code":"NOT_FOUND"}]}'))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if callable(body):
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    try:
                        body(self.wfile)
                    except OSError:
                        pass
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class S(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # abox's TLS hello first (a loopback registry may speak TLS)

        self.httpd = S(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        self.host = f"localhost:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---- images

def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def layer(files):
    """A gzipped layer tarball from {path: content | ("link", target) |
    ("file", host_path) | ("whiteout",) | ("dir",)}; (raw tar, gz)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for path, v in files.items():
            ti = tarfile.TarInfo(path)
            ti.mtime = 0
            if isinstance(v, tuple) and v[0] == "link":
                ti.type, ti.linkname = tarfile.SYMTYPE, v[1]
                t.addfile(ti)
            elif isinstance(v, tuple) and v[0] == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
            elif isinstance(v, tuple) and v[0] == "whiteout":
                d, b = os.path.split(path)
                ti.name = os.path.join(d, ".wh." + b)
                t.addfile(ti, io.BytesIO(b""))
            else:
                data = open(v[1], "rb").read() if isinstance(v, tuple) else v
                ti.size, ti.mode = len(data), 0o755 if isinstance(v, tuple) else 0o644
                t.addfile(ti, io.BytesIO(data))
    r = raw.getvalue()
    return r, gzip.compress(r, mtime=0)


class Layout:
    """An OCI image layout being built: blobs, manifests, an index."""

    def __init__(self, d):
        self.dir = d
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "blobs", "sha256"))
        self.manifests = []

    def blob(self, b):
        d = sha(b)
        with open(os.path.join(self.dir, "blobs", "sha256", d[7:]), "wb") as f:
            f.write(b)
        return {"digest": d, "size": len(b)}

    def image(self, layers, env=None, arch="amd64", variant=None, user=None, cmd=None, entrypoint=None):
        """layers: [(raw, gz)]; adds a manifest, returns its descriptor."""
        cfg = {"architecture": arch, "os": "linux", "config": {"Env": env or ["PATH=/bin"]},
               "rootfs": {"type": "layers", "diff_ids": [sha(r) for r, _ in layers]}}
        if user:
            cfg["config"]["User"] = user
        if cmd:
            cfg["config"]["Cmd"] = cmd
        if entrypoint:
            cfg["config"]["Entrypoint"] = entrypoint
        if variant:
            cfg["variant"] = variant
        c = self.blob(json.dumps(cfg).encode())
        ls = [dict(self.blob(gz), mediaType="application/vnd.oci.image.layer.v1.tar+gzip") for _, gz in layers]
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "config": dict(c, mediaType="application/vnd.oci.image.config.v1+json"), "layers": ls}
        d = dict(self.blob(json.dumps(m).encode()), mediaType="application/vnd.oci.image.manifest.v1+json")
        plat = {"os": "linux", "architecture": arch}
        if variant:
            plat["variant"] = variant
        self.manifests.append(dict(d, platform=plat))
        return d

    def attestation(self):
        """An entry as buildx adds them: platform unknown/unknown."""
        c = self.blob(b"{}")
        m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "config": dict(c, mediaType="application/vnd.oci.image.config.v1+json"), "layers": []}
        d = dict(self.blob(json.dumps(m).encode()), mediaType="application/vnd.oci.image.manifest.v1+json")
        self.manifests.append(dict(d, platform={"os": "unknown", "architecture": "unknown"}))

    def write(self, as_index=False):
        """index.json naming the one image, or (as_index) an index blob of
        all of them, the way a multi-platform image is stored."""
        if as_index:
            idx = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": self.manifests}
            d = dict(self.blob(json.dumps(idx).encode()), mediaType="application/vnd.oci.image.index.v1+json")
            top = {"schemaVersion": 2, "manifests": [d]}
        else:
            top = {"schemaVersion": 2, "manifests": [{k: v for k, v in self.manifests[-1].items() if k != "platform"}]}
        with open(os.path.join(self.dir, "index.json"), "w") as f:
            json.dump(top, f)
        with open(os.path.join(self.dir, "oci-layout"), "w") as f:
            f.write('{"imageLayoutVersion":"1.0.0"}')
        return top["manifests"][0]["digest"]


def push(layout, dest, creds=None, all_=False):
    cmd = ["skopeo", "copy", "--quiet", "--dest-tls-verify=false"]
    if all_:
        cmd.append("--all")
    if creds:
        cmd += ["--dest-creds", creds]
    cmd += [f"oci:{layout}", f"docker://{dest}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"skopeo: {r.stderr}")


def tmpdir(tag):
    return tempfile.mkdtemp(prefix=f"abox-pull-{tag}-")
