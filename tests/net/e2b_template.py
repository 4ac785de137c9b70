"""The official E2B JS SDK's Template SDK (e2b_template.mjs) building from
a registry image with apt and pip steps, all inside the private world of
world.py: no package comes from anywhere but this test.

    the image    a Debian root filesystem of this machine's apt, dpkg,
                 python3-pip, bash and what they depend on
                 (localsrc.debian_rootfs), its sources.list and pip.conf
                 pointing at 203.0.113.20; pushed with skopeo into
                 Debian's docker-registry on the world's loopback
    203.0.113.20 an HTTP server on "the internet" holding a flat apt
                 repository (package abox-hello) and a pip simple index
                 (abox-greet), both built here
    aboxd        in the world, with its default network (open): the
                 build's RUN steps reach 203.0.113.20 as sandboxes do

The SDK is installed from the npm registry into the build folder before
the test enters its world (the world has no way out).

usage: e2b_template.py BUILD_DIR SDK_VERSION"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pull"))
import localsrc  # noqa: E402
import registry  # noqa: E402
import world  # noqa: E402

BUILD, VER = os.path.abspath(sys.argv[1]), sys.argv[2]
SDK = world.js_sdk(BUILD, VER)
world.enter()

SITE = "203.0.113.20"
w = world.World(BUILD, f"tpl-{VER}")
scratch = tempfile.mkdtemp(prefix="abox-net-tpl-")
daemon = reg = site = None
status = 1
try:
    # the packages' server on "the internet"
    www = os.path.join(scratch, "www")
    localsrc.apt_repo(os.path.join(www, "apt"), "abox-hello", "echo hello from apt")
    localsrc.pip_index(www, "abox-greet", "abox_greet", "hello from pip")
    world.sh("ip", "addr", "add", f"{SITE}/32", "dev", "lo", ns=w.inet)
    site_log = os.path.join(scratch, "site.log")
    site = subprocess.Popen(["nsenter", "-t", str(w.inet), "-n", "--", sys.executable, "-m", "http.server",
                             "80", "--bind", SITE, "--directory", www],
                            stdout=subprocess.DEVNULL, stderr=open(site_log, "w"))
    w.procs.append(site)

    # the image: Debian with apt and pip, its sources the world's server
    root = os.path.join(scratch, "root")
    localsrc.debian_rootfs(root, ["apt", "python3-pip", "bash", "coreutils", "dpkg", "dash"])
    with open(os.path.join(root, "etc", "apt", "sources.list"), "w") as f:
        f.write(f"deb [trusted=yes] http://{SITE}/apt ./\n")
    with open(os.path.join(root, "etc", "pip.conf"), "w") as f:
        f.write(f"[global]\nindex-url = http://{SITE}/simple\ntrusted-host = {SITE}\n"
                "disable-pip-version-check = true\n")
    # as in the python images: pip installs system-wide
    for p in ("usr/lib/python3.11/EXTERNALLY-MANAGED",):
        if os.path.exists(os.path.join(root, p)):
            os.unlink(os.path.join(root, p))
    lay = registry.Layout(os.path.join(scratch, "layout"))
    lay.image([localsrc.layer_of(root)], env=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
    lay.write()
    shutil.rmtree(root)
    os.makedirs(os.path.join(scratch, "registry"))
    reg = registry.Registry(os.path.join(scratch, "registry"))
    image = f"127.0.0.1:{reg.port}/abox-tests/pyapt:1"
    registry.push(lay.dir, image)

    port = world.free_port()
    key = "e2b_" + os.urandom(20).hex()
    daemon = w.aboxd({"port": port, "apiKeys": [key]})
    flow = os.path.join(SDK, "e2b_template.mjs")
    shutil.copy(os.path.join(HERE, "e2b_template.mjs"), flow)
    shutil.copy(os.path.join(HERE, "..", "e2b", "lib.mjs"), os.path.join(SDK, "lib.mjs"))
    env = dict(w.env, E2B_API_KEY=key, E2B_API_URL=f"http://127.0.0.1:{port}",
               E2B_SANDBOX_URL=f"http://127.0.0.1:{port}", ABOX_TEST_IMAGE=image)
    r = subprocess.run(["node", flow], cwd=SDK, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout.rstrip()
    n = sum(1 for ln in out.splitlines() if ln.startswith(("ok ", "not ok ")))
    # the packages came from the world's server, by the build's sandboxes
    got = open(site_log).read()
    more = [("apt fetched the repository and the package from the world's server",
             "/Packages HTTP" in got and "abox-hello_1.0_all.deb" in got, got[-1500:]),
            ("pip fetched the index and the wheel from it", "/simple/abox-greet/" in got and ".whl" in got, got[-1500:])]
    daemon.terminate()
    daemon.wait()
    daemon = None
    for t in ("pyapt",):
        w.abox("template", "rm", t)
    w.abox("gc")
    left = w.wait_clean()
    more.append(("nothing left in the world", not any(left.values()), left))
    lines = out.splitlines()
    print(f"1..{n + len(more)}")
    print("\n".join(ln for ln in lines if not ln.startswith("1..")))
    for i, (name, ok, detail) in enumerate(more, n + 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for dl in str(detail)[:1500].splitlines():
                print("# " + dl)
    if r.returncode or r.stderr.strip():
        for ln in r.stderr.strip().splitlines()[-20:]:
            print("# " + ln)
    status = 0 if r.returncode == 0 and n > 0 and all(ok for _, ok, _ in more) else 1
except Exception as e:
    import traceback
    print("1..1\nnot ok 1 - the run broke: " + repr(e))
    for ln in traceback.format_exc().splitlines()[-15:]:
        print("# " + ln)
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    if reg:
        reg.stop()
    w.stop()
    shutil.rmtree(scratch, ignore_errors=True)
sys.exit(status)
