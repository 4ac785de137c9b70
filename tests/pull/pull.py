"""`abox template pull` against registries on loopback (registry.py):
TLS with the test's own CA, plain HTTP, token auth; single-platform
images and indexes; a blob altered in the registry's storage; a download
cut half way, resumed in the same pull and by the next one; layers
shared between images fetched once; hostile manifests and layers. After
each failure nothing is left: no template, no pull folder, no partial or
unverified blob.

usage: pull.py BUILD_DIR"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "net"))
import registry as R  # noqa: E402
from world import check, finish  # noqa: E402  (the TAP list the network tests keep)

R.enter()
BUILD = os.path.abspath(sys.argv[1])
ABOX = os.path.join(BUILD, "abox")


top = R.tmpdir("world")
STATE, RUN = os.path.join(top, "state"), os.path.join(top, "run")
HOME = os.path.join(top, "home")
os.makedirs(HOME)
BASE_ENV = dict(os.environ, ABOX_ROOT=STATE, ABOX_RUNTIME_DIR=RUN, HOME=HOME)
for k in ("DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR"):
    BASE_ENV.pop(k, None)


def abox(*args, input=None, env=None, timeout=180):
    e = dict(BASE_ENV, **(env or {}))
    return subprocess.run([ABOX, *args], capture_output=True, text=True, input=input, env=e, timeout=timeout)


def out(r):
    return r.stdout + r.stderr


def templates():
    return set(abox("template", "ls").stdout.split())


def leftovers():
    """What a failed pull must not leave: pull folders, partial blobs."""
    left = []
    p = os.path.join(STATE, "pull")
    if os.path.isdir(p):
        left += ["pull/" + n for n in os.listdir(p)]
    p = os.path.join(STATE, "blobs", "partial")
    if os.path.isdir(p):
        left += ["partial/" + n for n in os.listdir(p)]
    return left


def in_store(digest):
    return os.path.exists(os.path.join(STATE, "blobs", "sha256", digest[7:]))


def sandbox_cat(template, path):
    r = abox("run", "-t", template, "--", "/bin/cat", path)
    return r.stdout if r.returncode == 0 else "ERROR " + out(r)


servers = []
try:
    cert, key = R.make_cert(top)
    bb = ("file", "/bin/busybox")
    base = R.layer({"bin": ("dir",), "bin/busybox": bb, "bin/cat": ("link", "busybox"),
                    "bin/sh": ("link", "busybox"), "etc": ("dir",), "etc/hello": b"hello from layer 1\n",
                    "etc/gone": b"removed by layer 2\n"})
    top_layer = R.layer({"etc/hello": b"hello from layer 2\n", "etc/gone": ("whiteout",)})

    # ---- TLS with the test's CA: a single-platform image
    tls = R.Registry(R.tmpdir("tls"), cert, key)
    servers.append(tls)
    img = R.Layout(os.path.join(top, "img1"))
    m1 = img.image([base, top_layer], env=["PATH=/bin", "GREETING=hi"], entrypoint=["/bin/sh", "-c"],
                   cmd=["echo default command $GREETING"])
    img.write()
    R.push(img.dir, f"{tls.host}/team/app:v1")
    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/app:v1")
    check("TLS with --ca-file: pulled, the template's name printed (app-v1)",
          r.returncode == 0 and r.stdout.strip() == "app-v1", out(r))
    check("layers applied in order (layer 2 over layer 1)",
          sandbox_cat("app-v1", "/etc/hello") == "hello from layer 2\n", sandbox_cat("app-v1", "/etc/hello"))
    r = abox("run", "-t", "app-v1", "--", "/bin/sh", "-c", "test -e /etc/gone && echo there || echo gone; "
             "echo $GREETING")
    check("a whiteout removes a lower layer's file; the image's Env is the sandbox's",
          r.stdout == "gone\nhi\n", out(r))
    info = json.loads(abox("template", "inspect", "--json", "app-v1").stdout)
    check("the template records the digest it came from",
          info.get("source", "").startswith(f"{tls.host}/team/app@sha256:"), info)
    check("the image without a User runs as root", info.get("user") == "root", info)
    check("its Entrypoint and Cmd are the template's command",
          info.get("cmd") == ["/bin/sh", "-c", "echo default command $GREETING"], info)
    r = abox("run", "-t", "app-v1")
    check("abox run without a command runs it", r.returncode == 0 and r.stdout == "default command hi\n", out(r))
    check("nothing left of the pull but its blobs", not leftovers(), leftovers())

    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/app:v1")
    again = json.loads(abox("template", "inspect", "--json", "app-v1").stdout)
    check("pulled again, unchanged: 'up to date', the same version kept",
          r.returncode == 0 and "up to date" in r.stderr and again["version"] == info["version"], (out(r), again))
    img2 = R.Layout(os.path.join(top, "img2"))
    img2.image([base, R.layer({"etc/hello": b"hello from v1, moved\n"})])
    img2.write()
    R.push(img2.dir, f"{tls.host}/team/app:v1")
    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/app:v1")
    moved = json.loads(abox("template", "inspect", "--json", "app-v1").stdout)
    check("the tag moved: a new version, only the new layer fetched",
          r.returncode == 0 and moved["version"] != info["version"] and out(r).count("already here") == 1 and
          sandbox_cat("app-v1", "/etc/hello") == "hello from v1, moved\n", (out(r), moved))
    R.push(img.dir, f"{tls.host}/team/app:v1")
    r = abox("template", "pull", f"{tls.host}/team/app:v1", "app-noca")
    check("TLS without the CA: refused, naming --ca-file", r.returncode != 0 and "--ca-file" in out(r)
          and "app-noca" not in templates(), out(r))
    r = abox("template", "pull", "--tls-verify=false", f"{tls.host}/team/app:v1", "app-insecure")
    check("--tls-verify=false: pulled (every layer already here)",
          r.returncode == 0 and out(r).count("already here") == 2, out(r))

    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/app@{m1['digest']}", "bydigest")
    check("by digest: pulled", r.returncode == 0 and "bydigest" in templates(), out(r))
    wrong = "sha256:" + "0" * 64
    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/app@{wrong}", "wrongdigest")
    check("an unknown digest: refused with the registry's words", r.returncode != 0 and "has no image" in out(r)
          and "wrongdigest" not in templates(), out(r))
    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/nothing:v1", "nothing")
    check("an unknown image: 'has no image'", r.returncode != 0 and "has no image team/nothing:v1" in out(r), out(r))

    # ---- a Dockerfile FROM an image of a registry with its own CA
    tctx = os.path.join(top, "tctx")
    os.makedirs(tctx)
    with open(os.path.join(tctx, "Dockerfile"), "w") as fh:
        fh.write(f"FROM {tls.host}/team/app:v1\nRUN cat /etc/hello > /copied\n")
    r = abox("template", "build", "--network", "none", "-f", os.path.join(tctx, "Dockerfile"), "fromtls", tctx)
    check("a Dockerfile FROM a TLS registry without its CA: refused, naming --ca-file",
          r.returncode != 0 and "--ca-file" in out(r), out(r))
    r = abox("template", "build", "--network", "none", "--ca-file", cert, "-f", os.path.join(tctx, "Dockerfile"),
             "fromtls", tctx)
    check("... and with --ca-file: pulled and built on", r.returncode == 0 and
          sandbox_cat("fromtls", "/copied") == "hello from layer 2\n", out(r))
    r = abox("template", "import", "--ca-file", cert, "x", tctx)
    check("a registry option where no registry is used: refused by name",
          r.returncode != 0 and "--ca-file is an option of" in out(r), out(r))

    # ---- an index of platforms (with an attestation entry, as buildx makes)
    multi = R.Layout(os.path.join(top, "multi"))
    multi.attestation()
    multi.image([base, R.layer({"etc/arch": b"arm64\n"})], arch="arm64", variant="v8")
    multi.image([base, R.layer({"etc/arch": b"amd64\n"})], arch="amd64")
    idx = multi.write(as_index=True)
    R.push(multi.dir, f"{tls.host}/team/multi:v1", all_=True)
    r = abox("template", "pull", "--ca-file", cert, f"{tls.host}/team/multi:v1")
    check("an index: this machine's platform chosen", r.returncode == 0 and
          sandbox_cat("multi-v1", "/etc/arch") == "amd64\n", out(r))
    info = json.loads(abox("template", "inspect", "--json", "multi-v1").stdout)
    check("an index: the source names the index's digest", info.get("source", "").endswith(idx), (info, idx))
    r = abox("template", "pull", "--ca-file", cert, "--platform", "linux/arm64", f"{tls.host}/team/multi:v1",
             "multi-arm")
    check("--platform linux/arm64: the arm64 image", r.returncode == 0 and
          sandbox_cat("multi-arm", "/etc/arch") == "arm64\n", out(r))
    r = abox("template", "pull", "--ca-file", cert, "--platform", "linux/s390x", f"{tls.host}/team/multi:v1",
             "multi-s390x")
    check("a platform the index lacks: refused by name", r.returncode != 0 and "linux/s390x" in out(r), out(r))

    # ---- token auth
    tok = R.TokenServer(top, cert, key, {"alice": "s3cret"})
    servers.append(tok)
    auth = R.Registry(R.tmpdir("auth"), cert, key, token=tok)
    servers.append(auth)
    R.push(img.dir, f"{auth.host}/private/app:v1", creds="alice:s3cret")
    ref = f"{auth.host}/private/app:v1"
    r = abox("template", "pull", "--ca-file", cert, ref, "priv-anon")
    check("token auth, anonymous: refused, saying how to give credentials",
          r.returncode != 0 and "anonymous" in out(r) and "--username" in out(r), out(r))
    r = abox("template", "pull", "--ca-file", cert, "--username", "alice", "--password-stdin", ref, "priv-bad",
             input="wrong\n")
    check("token auth, a wrong password: refused", r.returncode != 0 and "refused the credentials" in out(r)
          and "priv-bad" not in templates(), out(r))
    r = abox("template", "pull", "--ca-file", cert, "--username", "alice", "--password-stdin", ref, "priv-ok",
             input="s3cret\n")
    check("token auth with --username/--password-stdin: pulled",
          r.returncode == 0 and sandbox_cat("priv-ok", "/etc/hello") == "hello from layer 2\n", out(r))
    check("the token server was asked with the credentials and the pull scope",
          any("scope=repository%3Aprivate%2Fapp%3Apull" in p and a.startswith("Basic ") for p, a in tok.requests),
          tok.requests)
    cfgdir = os.path.join(top, "dockercfg")
    os.makedirs(cfgdir)
    with open(os.path.join(cfgdir, "config.json"), "w") as f:
        json.dump({"auths": {auth.host: {"auth": "YWxpY2U6czNjcmV0"}}}, f)  # alice:s3cret
    r = abox("template", "pull", "--ca-file", cert, ref, "priv-cfg", env={"DOCKER_CONFIG": cfgdir})
    check("token auth with $DOCKER_CONFIG/config.json: pulled", r.returncode == 0, out(r))
    r = abox("template", "pull", "--ca-file", cert, "--authfile", os.path.join(cfgdir, "config.json"), ref,
             "priv-authfile")
    check("token auth with --authfile: pulled", r.returncode == 0, out(r))
    r = abox("template", "pull", "--ca-file", cert, "--authfile", os.path.join(top, "nope.json"), ref, "priv-x")
    check("a missing --authfile: refused by name", r.returncode != 0 and "nope.json" in out(r), out(r))

    # ---- plain HTTP (a registry on this machine), through a logging proxy
    plain = R.Registry(R.tmpdir("plain"))
    servers.append(plain)
    proxy = R.Proxy(plain.port)
    servers.append(proxy)
    shared = R.layer({"bin": ("dir",), "bin/busybox": bb, "bin/cat": ("link", "busybox"),
                      "bin/sh": ("link", "busybox"), "big": os.urandom(3 << 20)})
    a = R.Layout(os.path.join(top, "a"))
    ma = a.image([shared, R.layer({"etc/which": b"a\n"})])
    a.write()
    b = R.Layout(os.path.join(top, "b"))
    mb = b.image([shared, R.layer({"etc/which": b"b\n"})])
    b.write()
    R.push(a.dir, f"{plain.host}/x/a:1")
    R.push(b.dir, f"{plain.host}/x/b:1")
    shared_digest = R.sha(shared[1])
    r = abox("template", "pull", f"{proxy.host}/x/a:1", "a")
    check("plain HTTP on localhost: pulled (https tried first, as docker does)",
          r.returncode == 0 and sandbox_cat("a", "/etc/which") == "a\n", out(r))
    before = len(proxy.gets(shared_digest))
    r = abox("template", "pull", f"{proxy.host}/x/b:1", "b")
    check("a second image sharing a layer: only the new layer downloaded",
          r.returncode == 0 and before == 1 and len(proxy.gets(shared_digest)) == 1 and "already here" in out(r)
          and sandbox_cat("b", "/etc/which") == "b\n", (out(r), proxy.log))

    # ---- a Dockerfile FROM a registry image: pulled, then built on
    dctx = os.path.join(top, "dctx")
    os.makedirs(dctx)
    with open(os.path.join(dctx, "Dockerfile"), "w") as fh:
        fh.write(f"FROM {plain.host}/x/a:1\nRUN echo built on $(cat /etc/which) > /built\n")
    r = abox("template", "build", "--network", "none", "-f", os.path.join(dctx, "Dockerfile"), "fromimg", dctx)
    check("a Dockerfile FROM a registry image: pulled (as template a-1), then built on",
          r.returncode == 0 and sandbox_cat("fromimg", "/built") == "built on a\n" and "a-1" in templates(), out(r))

    # ---- a download cut half way: resumed by the same pull
    c = R.Layout(os.path.join(top, "c"))
    big = R.layer({"bin": ("dir",), "bin/busybox": bb, "bin/sh": ("link", "busybox"),
                   "blob": os.urandom(4 << 20)})
    c.image([big])
    c.write()
    R.push(c.dir, f"{plain.host}/x/c:1")
    big_digest, big_size = R.sha(big[1]), len(big[1])
    proxy.cut, proxy.stall_s = big_digest, 30
    r = abox("template", "pull", f"{proxy.host}/x/c:1", "c", env={"ABOX_PULL_STALL_SECONDS": "2"})
    ranges = proxy.gets(big_digest)
    check("a stalled download is resumed where it stopped (Range: bytes=HALF-)",
          r.returncode == 0 and ranges == [None, f"bytes={big_size // 2}-"] and
          abox("run", "-t", "c", "--", "/bin/sh", "-c", "wc -c < /blob").stdout.strip() == str(4 << 20),
          (out(r), ranges))

    # ---- cut, the pull killed, resumed by the next pull
    d = R.Layout(os.path.join(top, "d"))
    big2 = R.layer({"bin": ("dir",), "bin/busybox": bb, "bin/cat": ("link", "busybox"),
                    "etc": ("dir",), "etc/d": b"d\n", "blob": os.urandom(4 << 20)})
    d.image([big2])
    d.write()
    R.push(d.dir, f"{plain.host}/x/d:1")
    d_digest, d_size = R.sha(big2[1]), len(big2[1])
    proxy.cut, proxy.stall_s = d_digest, 120
    p = subprocess.Popen([ABOX, "template", "pull", f"{proxy.host}/x/d:1", "d"], env=BASE_ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    part = os.path.join(STATE, "blobs", "partial", d_digest[7:])
    end = time.time() + 60
    while time.time() < end and not (os.path.exists(part) and os.path.getsize(part) >= d_size // 2):
        time.sleep(0.05)
    got = os.path.getsize(part) if os.path.exists(part) else -1
    # abox-pull is the CLI's child: end it (by pid) as a crash would
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout.split()
    for k in kids:
        os.kill(int(k), 9)
    so, se = p.communicate(timeout=60)
    check("a pull whose helper is killed fails, saying so, and leaves no pull folder",
          p.returncode != 0 and "killed" in se and not os.listdir(os.path.join(STATE, "pull")) and "d" not in templates(),
          (p.returncode, se, got, kids))
    check("... but keeps the partial download", got == d_size // 2 and os.path.exists(part), (got, d_size))
    r = abox("template", "pull", f"{proxy.host}/x/d:1", "d")
    ranges = proxy.gets(d_digest)
    check("the next pull resumes it (Range: bytes=N-, N the bytes kept) and the image is whole",
          r.returncode == 0 and ranges == [None, f"bytes={d_size // 2}-"] and "resumed" in out(r)
          and sandbox_cat("d", "/etc/d") == "d\n" and not leftovers(), (out(r), ranges, leftovers()))

    # ---- two pulls of one image at once
    e = R.Layout(os.path.join(top, "e"))
    e.image([R.layer({"bin": ("dir",), "bin/busybox": bb, "bin/cat": ("link", "busybox"),
                      "blob": os.urandom(2 << 20)})])
    e.write()
    R.push(e.dir, f"{plain.host}/x/e:1")
    res = [None, None]

    def one(i):
        res[i] = abox("template", "pull", f"{plain.host}/x/e:1", f"e{i}")

    ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check("two pulls of one image at once: both succeed",
          all(x.returncode == 0 for x in res) and {"e0", "e1"} <= templates() and not leftovers(),
          [out(x) for x in res])

    # ---- a blob altered in the registry's storage
    f = R.Layout(os.path.join(top, "f"))
    bad_layer = R.layer({"etc": ("dir",), "etc/f": os.urandom(100000)})
    f.image([base, bad_layer])
    f.write()
    R.push(f.dir, f"{plain.host}/x/f:1")
    bad_digest = R.sha(bad_layer[1])
    path = plain.blob_path(bad_digest)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    r = abox("template", "pull", f"{plain.host}/x/f:1", "f")
    check("an altered blob is refused: 'does not match its digest'",
          r.returncode != 0 and "does not match its digest" in out(r) and "f" not in templates(), out(r))
    check("... and nothing of it is kept (no blob, no partial, no pull folder)",
          not in_store(bad_digest) and not leftovers(), leftovers())

    # ---- a layer that writes outside the root
    g = R.Layout(os.path.join(top, "g"))
    evil = R.layer({"../../../../tmp/abox-pull-escape": b"x"})
    g.image([base, evil])
    g.write()
    R.push(g.dir, f"{plain.host}/x/g:1")
    r = abox("template", "pull", f"{plain.host}/x/g:1", "g")
    check("a layer with ../ in a name: refused, the template not made",
          r.returncode != 0 and "g" not in templates() and not os.path.exists("/tmp/abox-pull-escape"), out(r))
    check("... its blobs are not kept, no pull folder left",
          not in_store(R.sha(evil[1])) and not leftovers(), leftovers())

    # ---- hostile manifests from a registry that lies
    fake = R.Fake()
    servers.append(fake)
    good = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "digest": "sha256:" + "a" * 64, "size": 2}, "layers": []}).encode()
    mt = {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}
    fake.routes["/v2/h/manifests/notjson"] = (200, mt, b"<html>not a manifest</html>")
    fake.routes["/v2/h/manifests/huge"] = (200, mt, b"{\"a\":\"" + b"x" * (5 << 20) + b"\"}")

    def endless(w):
        chunk = b"x" * 65536
        for _ in range(200):
            w.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    fake.routes["/v2/h/manifests/endless"] = (200, mt, endless)
    fake.routes["/v2/h/manifests/mismatch"] = (200, dict(mt, **{"Docker-Content-Digest": "sha256:" + "b" * 64}), good)
    fake.routes["/v2/h/manifests/schema1"] = (200, {"Content-Type":
                                                    "application/vnd.docker.distribution.manifest.v1+prettyjws"},
                                              b'{"schemaVersion":1,"fsLayers":[]}')
    trav = json.dumps({"schemaVersion": 2, "config": {"digest": "sha256:" + "a" * 64, "size": 2},
                       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                   "digest": "../../../etc/passwd", "size": 10}]}).encode()
    fake.routes["/v2/h/manifests/traversal"] = (200, mt, trav)
    fake.routes["/v2/h/manifests/cfgmismatch"] = (200, mt, good)
    fake.routes["/v2/h/blobs/sha256:" + "a" * 64] = (200, {}, b"{}")
    cases = {"notjson": "not one JSON object", "huge": "larger than 4 MiB", "endless": "larger than 4 MiB",
             "mismatch": "digest", "schema1": "schema 1", "traversal": "is not sha256",
             "cfgmismatch": "does not match its digest"}
    for tag, why in cases.items():
        before = templates()
        r = abox("template", "pull", f"{fake.host}/h:{tag}", "hostile", timeout=60)
        check(f"a hostile manifest ({tag}): refused, '{why}', nothing left",
              r.returncode != 0 and why in out(r) and templates() == before and not leftovers(), out(r))
    r = abox("template", "pull", "Bad/Name:x")
    check("a malformed reference: refused before any request", r.returncode != 0 and "lowercase" in out(r), out(r))
except Exception:
    import traceback
    check("the test ran to its end", False, traceback.format_exc())
finally:
    for s in reversed(servers):
        try:
            s.stop()
        except Exception:
            pass
    for t in list(templates()):
        if t != "host":
            abox("template", "rm", t)
    abox("gc")
    shutil.rmtree(top, ignore_errors=True)
    for s in servers:
        if hasattr(s, "dir"):
            shutil.rmtree(s.dir, ignore_errors=True)

finish()
