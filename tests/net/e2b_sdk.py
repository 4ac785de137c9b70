"""The official E2B JS SDK's network options (e2b_network.mjs) against
aboxd inside the private world of world.py. The SDK is installed from
the npm registry into the build folder before the test enters its world
(the world has no way out).

usage: e2b_sdk.py BUILD_DIR SDK_VERSION"""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402

BUILD, VER = os.path.abspath(sys.argv[1]), sys.argv[2]
SDK = os.path.join(BUILD, f"e2b-sdk-{VER}")
if "ABOX_NET_WORLD" not in os.environ and not os.path.exists(os.path.join(SDK, "node_modules", "e2b", "package.json")):
    os.makedirs(SDK, exist_ok=True)
    subprocess.run(["npm", "init", "-y"], cwd=SDK, stdout=subprocess.DEVNULL, check=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"e2b@{VER}",
                    f"@e2b/code-interpreter@{os.environ.get('ABOX_E2B_CI_VERSION', '2.8.0')}"],
                   cwd=SDK, stdout=subprocess.DEVNULL, check=True)
world.enter()

w = world.World(BUILD, f"e2b-{VER}")
daemon = None
try:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    key = "e2b_" + os.urandom(20).hex()
    conf = os.path.join(w.dir, "aboxd.json")
    with open(conf, "w") as f:
        json.dump({"port": port, "adminPort": 0, "apiKeys": [key]}, f)
    daemon = subprocess.Popen([os.path.join(BUILD, "aboxd"), "--config", conf], env=w.env,
                              stderr=open(os.path.join(w.dir, "aboxd.log"), "w"))
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    flow = os.path.join(SDK, "e2b_network.mjs")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_network.mjs")) as src, \
            open(flow, "w") as dst:
        dst.write(src.read())
    env = dict(w.env, E2B_API_KEY=key, E2B_API_URL=f"http://127.0.0.1:{port}",
               E2B_SANDBOX_URL=f"http://127.0.0.1:{port}")
    r = subprocess.run(["node", flow], cwd=SDK, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout
    n = sum(1 for ln in out.splitlines() if ln.startswith(("ok ", "not ok ")))
    left = w.wait_clean()
    extra = f"ok {n + 1} - nothing left in the world" if not any(left.values()) else \
        f"not ok {n + 1} - left in the world: {left}"
    print(out.replace(f"1..{n}", f"1..{n + 1}", 1).rstrip())
    print(extra)
    if r.returncode or r.stderr.strip():
        for ln in r.stderr.strip().splitlines()[-20:]:
            print("# " + ln)
    status = 0 if r.returncode == 0 and extra.startswith("ok") else 1
except Exception as e:
    print("1..1\nnot ok 1 - the run broke: " + repr(e))
    status = 1
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    w.stop()
sys.exit(status)
