#!/usr/bin/env python3
"""Credentials of the sandbox planes against a live aboxd, as TAP, in
plain HTTP (what curl or any local process can send):

- every sandbox gets an access token, `secure` or not, and envd and the
  code plane refuse requests without it (or with another's, or a wrong
  one), by E2b-Sandbox-* headers and by the Host form alike, /execute
  included;
- signed /files URLs as the SDKs build them (no sandbox in them) work as
  plain requests, reach the right sandbox, and grant exactly their one
  operation on their one path, as their user, until they expire;
- the token secret is kept 0600, and a secret others could read is
  refused.

usage: auth.py BUILD_DIR"""
import base64
import hashlib
import hmac
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, envelope, finish, free_port  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "auth", keys=1, extra_config={"domain": "abox.test"})
API = d.key(0)


def plane(sid, port_=49983, token=None, host=False, **extra):
    """Headers for a sandbox plane: E2b-Sandbox-* or the Host form."""
    h = {"Host": f"{port_}-{sid}.abox.test"} if host else {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(port_)}
    if token:
        h["X-Access-Token"] = token
    h.update(extra)
    return h


def signed(path, op, token, user=None, exp=None):
    """A /files URL signed the way the SDKs sign it (E2B's v1 scheme)."""
    raw = f"{path}:{op}:{user or ''}:{token}" + (f":{exp}" if exp is not None else "")
    sig = "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")
    q = {"path": path}
    if user:
        q["username"] = user
    q["signature"] = sig
    if exp is not None:
        q["signature_expiration"] = str(exp)
    return "/files?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote)


def multipart(name, data):
    b = "abox" + os.urandom(8).hex()
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{b}--\r\n".encode()
    return body, f"multipart/form-data; boundary={b}"


with d:
    # --- every sandbox has a token, and envd wants it ---------------------
    st, a = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, API)
    st2, b = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "secure": False}, API)
    hexre = re.compile(r"^[0-9a-f]{64}$")
    check("a sandbox created without `secure` gets an envdAccessToken",
          st == 201 and hexre.match(a.get("envdAccessToken", "")), a)
    check("so does one created with secure: false",
          st2 == 201 and hexre.match(b.get("envdAccessToken", "")), b)
    check("and a trafficAccessToken, not the same as the access token",
          a.get("trafficAccessToken") and a["trafficAccessToken"] != a["envdAccessToken"], a)
    check("tokens differ between sandboxes", a["envdAccessToken"] != b["envdAccessToken"])
    sa, ta, tra = a["sandboxID"], a["envdAccessToken"], a["trafficAccessToken"]
    sb, tb = b["sandboxID"], b["envdAccessToken"]
    st, info = d.req("GET", f"/sandboxes/{sa}", headers=API)
    check("GET /sandboxes/ID answers the same token", info.get("envdAccessToken") == ta, info)
    st, con = d.req("POST", f"/sandboxes/{sa}/connect", {"timeout": 120}, API)
    check("connect answers the same token", con.get("envdAccessToken") == ta, con)

    secret = "content-" + os.urandom(6).hex()
    st, _ = d.call("POST", "/files?path=/home/user/secret.txt", secret.encode(),
                   plane(sa, token=ta, **{"Content-Type": "application/octet-stream"}))
    check("the token writes a file", st == 200, st)
    for form in (False, True):
        name = "Host form" if form else "E2b-Sandbox-* headers"
        st, body = d.call("GET", "/files?path=/home/user/secret.txt", headers=plane(sa, host=form))
        check(f"/files without a token is refused, {name} (401)", st == 401 and secret.encode() not in body,
              (st, body[:100]))
        st, body = d.call("GET", "/files?path=/home/user/secret.txt", headers=plane(sa, token="0" * 64, host=form))
        check(f"/files with a wrong token is refused, {name} (401)", st == 401 and secret.encode() not in body, st)
        st, body = d.call("GET", "/files?path=/home/user/secret.txt", headers=plane(sa, token=tb, host=form))
        check(f"another sandbox's token is refused, {name} (401)", st == 401 and secret.encode() not in body, st)
        st, body = d.call("GET", "/files?path=/home/user/secret.txt", headers=plane(sa, token=tra, host=form))
        check(f"the traffic token does not open envd, {name} (401)", st == 401, st)
        st, body = d.call("GET", "/files?path=/home/user/secret.txt", headers=plane(sa, token=ta, host=form))
        check(f"its own token reads it, {name}", st == 200 and body == secret.encode(), (st, body[:100]))

    st, _ = d.call("POST", "/files?path=/tmp/planted", b"x", plane(sa, **{"Content-Type": "application/octet-stream"}))
    check("an upload without a token is refused (401)", st == 401, st)
    st, _ = d.call("GET", "/files?path=/tmp/planted", headers=plane(sa, token=ta))
    check("and wrote nothing", st == 404, st)
    stat_h = plane(sa, **{"Content-Type": "application/json"})
    st, _ = d.call("POST", "/filesystem.Filesystem/Stat", {"path": "/"}, stat_h)
    check("a Connect RPC without a token is refused (401)", st == 401, st)
    start = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", "touch /tmp/ran"]}})
    st, _ = d.call("POST", "/process.Process/Start", start,
                   plane(sa, host=True, **{"Content-Type": "application/connect+json"}))
    check("process.Process/Start without a token is refused, Host form (401)", st == 401, st)
    st, _ = d.call("GET", "/health", headers=plane(sa))
    check("envd /health without a token is refused (401)", st == 401, st)
    st, _ = d.call("GET", "/health", headers=plane(sa, token=ta))
    check("envd /health with the token: 204", st == 204, st)

    # --- the code plane ---------------------------------------------------
    code = {"code": "open('/tmp/ran', 'w').write('x')", "language": "python"}
    for form in (False, True):
        name = "Host form" if form else "E2b-Sandbox-* headers"
        st, body = d.call("POST", "/execute", code, plane(sa, 49999, host=form, **{"Content-Type": "application/json"}))
        check(f"/execute without a token is refused, {name} (401)", st == 401, (st, body[:200]))
        st, body = d.call("POST", "/execute", code,
                          plane(sa, 49999, token=tb, host=form, **{"Content-Type": "application/json"}))
        check(f"/execute with another sandbox's token is refused, {name} (401)", st == 401, st)
    st, _ = d.call("GET", "/files?path=/tmp/ran", headers=plane(sa, token=ta))
    check("and no code ran", st == 404, st)
    st, _ = d.call("POST", "/contexts", {"language": "python"}, plane(sa, 49999, **{"Content-Type": "application/json"}))
    check("/contexts without a token is refused (401)", st == 401, st)
    st, _ = d.call("GET", "/contexts", headers=plane(sa, 49999, **{"E2B-Traffic-Access-Token": "0" * 64}))
    check("/contexts with a wrong traffic token is refused (401)", st == 401, st)
    st, _ = d.call("GET", "/health", headers=plane(sa, 49999))
    check("code plane /health without a token is refused (401)", st == 401, st)
    st, ctx = d.req("POST", "/contexts", {"language": "python"},
                    plane(sa, 49999, **{"Content-Type": "application/json", "E2B-Traffic-Access-Token": tra}))
    check("/contexts with the traffic token (what @e2b/code-interpreter sends): 200", st == 200, (st, ctx))
    st, body = d.call("POST", "/execute", {"code": "print(6 * 7)"},
                      plane(sa, 49999, token=ta, **{"Content-Type": "application/json"}))
    check("/execute with the token runs the code", st == 200 and b"42" in body, (st, body[:300]))

    # --- signed URLs, as plain requests ------------------------------------
    for sid, tok in ((sa, ta), (sb, tb)):
        d.call("POST", "/files?path=/tmp/who", sid.encode(), plane(sid, token=tok, **{"Content-Type": "application/octet-stream"}))
    exp = int(time.time()) + 120
    st, body = d.call("GET", signed("/tmp/who", "read", tb))
    check("a signed download URL with no sandbox in it reads from the sandbox that signed it",
          st == 200 and body == sb.encode(), (st, body[:100]))
    st, body = d.call("GET", signed("/tmp/who", "read", ta, exp=exp))
    check("the other sandbox's, with an expiry, reads its own", st == 200 and body == sa.encode(), (st, body[:100]))
    st, body = d.call("GET", signed("/tmp/who", "read", ta), headers={"Host": f"49983-{sa}.abox.test"})
    check("a signed URL by the Host form", st == 200 and body == sa.encode(), (st, body[:100]))
    st, body = d.call("GET", signed("/tmp/who", "read", ta), headers=plane(sb))
    check("a signature sent to another sandbox is refused (401)", st == 401, st)
    up, ctype = multipart("up.txt", b"multipart upload")
    st, body = d.call("POST", signed("/tmp/up.txt", "write", ta, exp=exp), up, {"Content-Type": ctype})
    check("a signed upload URL takes a plain multipart POST", st == 200, (st, body[:200]))
    st, body = d.call("GET", "/files?path=/tmp/up.txt", headers=plane(sa, token=ta))
    check("and the file is there", body == b"multipart upload", (st, body[:100]))
    st, _ = d.call("POST", signed("/tmp/raw.txt", "write", ta), b"octets", {"Content-Type": "application/octet-stream"})
    check("a signed upload URL takes an octet-stream POST", st == 200, st)
    st, body = d.call("GET", "/files?path=/tmp/raw.txt", headers=plane(sa, token=ta))
    check("and writes where it was signed for", body == b"octets", (st, body[:100]))

    refusals = [
        ("an expired signature", "GET", signed("/tmp/who", "read", ta, exp=int(time.time()) - 2)),
        ("a write signature used to read", "GET", signed("/tmp/who", "write", ta)),
        ("a read signature used to write", "POST", signed("/tmp/who", "read", ta)),
        ("a signature made with a wrong token", "GET", signed("/tmp/who", "read", "0" * 64)),
        ("a signature made with the traffic token", "GET", signed("/tmp/who", "read", tra)),
        ("a signature for another path", "GET", signed("/tmp/up.txt", "read", ta).replace("up.txt", "who", 1)),
        ("a signature with a later expiry than signed", "GET",
         signed("/tmp/who", "read", ta, exp=exp).replace(str(exp), str(exp + 3600))),
        ("a signature whose expiry was dropped", "GET",
         re.sub(r"&signature_expiration=\d+", "", signed("/tmp/who", "read", ta, exp=exp))),
        ("a signature for another user", "GET",
         signed("/tmp/who", "read", ta, user="user").replace("username=user", "username=root")),
    ]
    sig = signed("/tmp/who", "read", ta)
    flipped = sig[:-1] + ("A" if sig[-1] != "A" else "B")
    refusals.append(("a tampered signature", "GET", flipped))
    for name, method, url in refusals:
        body = b"nope" if method == "POST" else None
        hdr = {"Content-Type": "application/octet-stream"} if body else {}
        st, got = d.call(method, url, body, hdr)
        check(f"{name} is refused (401)", st == 401 and got not in (sa.encode(), sb.encode()), (st, got[:100]))
    st, body = d.call("GET", "/files?path=/tmp/who", headers=plane(sa, token=ta))
    check("no refused upload changed the file", body == sa.encode(), body[:100])
    qs = sig.split("?", 1)[1]
    st, _ = d.call("POST", "/filesystem.Filesystem/Stat?" + qs, {"path": "/"}, plane(sa, **{"Content-Type": "application/json"}))
    check("a signature opens no other route (401)", st == 401, st)

    st, _ = d.call("POST", "/files?path=/root/only.txt", b"root's",
                   plane(sa, token=ta, **{"Content-Type": "application/octet-stream",
                                          "Authorization": "Basic " + base64.b64encode(b"root:").decode()}))
    st1, body1 = d.call("GET", signed("/root/only.txt", "read", ta, user="root"))
    check("a URL signed for root reads as root", st == 200 and st1 == 200 and body1 == b"root's", (st, st1, body1[:80]))
    st2, _ = d.call("GET", signed("/root/only.txt", "read", ta),
                    {"Authorization": "Basic " + base64.b64encode(b"root:").decode()})
    check("a URL signed for the default user stays that user, whatever Authorization says (403)", st2 == 403, st2)

    # --- the secret, and sandboxes aboxd did not make --------------------
    state = os.environ.get("ABOX_ROOT", "/var/lib/abox")
    sp = os.path.join(state, "aboxd.secret")
    m = os.stat(sp).st_mode
    check("the token secret is a 0600 file in the state folder", stat.S_ISREG(m) and stat.S_IMODE(m) == 0o600, oct(m))
    key_bytes = bytes.fromhex(open(sp).read().strip())

    def derived(sid):
        return hmac.new(key_bytes, f"envd:{sid}".encode(), hashlib.sha256).hexdigest()

    check("the token is HMAC-SHA256 of the sandbox id under the secret", ta == derived(sa), ta)
    abox = os.path.join(build, "abox")
    # made on the host, with no token anywhere: what a sandbox made before
    # tokens existed looks like
    plain = subprocess.run([abox, "create", "--timeout", "120"], capture_output=True, text=True, timeout=60).stdout.strip()
    # made secure by an older aboxd: its record keeps the token it was given
    kept = os.urandom(16).hex()
    legacy = subprocess.run([abox, "create", "--timeout", "120", "--metadata", f"_aboxToken={kept}"],
                            capture_output=True, text=True, timeout=60).stdout.strip()
    st, _ = d.call("GET", "/files?path=/etc/hostname", headers=plane(plain))
    check("a sandbox made without any token refuses a request without one (401)", st == 401, (plain, st))
    st, _ = d.call("GET", "/files?path=/etc/hostname", headers=plane(plain, token=derived(plain)))
    check("and opens to its derived token", st == 200, st)
    st, _ = d.call("GET", "/files?path=/etc/hostname", headers=plane(legacy, token=kept))
    check("a sandbox made secure before keeps the token it was given", st == 200, (legacy, st))
    st, _ = d.call("GET", "/files?path=/etc/hostname", headers=plane(legacy, token=derived(legacy)))
    check("and only that one (401)", st == 401, st)
    st, _ = d.call("GET", signed("/etc/hostname", "read", kept))
    check("a URL signed with the kept token reaches it", st == 200, st)
    bad = tempfile.mkdtemp(prefix="aboxd-auth-")
    with open(os.path.join(bad, "aboxd.secret"), "w") as f:
        f.write("00" * 32 + "\n")
    os.chmod(os.path.join(bad, "aboxd.secret"), 0o644)
    bconf = os.path.join(bad, "conf.json")
    with open(bconf, "w") as f:
        json.dump({"port": free_port(), "adminPort": 0, "apiKeys": d.keys, "stateDir": bad}, f)
    p = subprocess.run([os.path.join(build, "aboxd"), "--config", bconf], capture_output=True, timeout=20)
    check("aboxd refuses a secret others can read", p.returncode != 0 and b"0600" in p.stderr, p.stderr[-300:])
    for n in os.listdir(bad):
        os.unlink(os.path.join(bad, n))
    os.rmdir(bad)
finish()
