"""The official E2B Python SDK's network options (e2b_python_flows.py)
against aboxd inside the private world of world.py, then what the world
holds afterwards: nothing of the sandboxes. e2b_python.sh finds the SDK
and sets ABOX_E2B_PYTHONPATH.

usage: e2b_python.py BUILD_DIR"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
world.enter()

w = world.World(BUILD, "e2b-python")
daemon = None
try:
    port = world.free_port()
    key = "e2b_" + os.urandom(20).hex()
    daemon = w.aboxd({"port": port, "apiKeys": [key]})
    env = dict(w.env, E2B_API_KEY=key, E2B_API_URL=f"http://127.0.0.1:{port}",
               E2B_SANDBOX_URL=f"http://127.0.0.1:{port}", PYTHONPATH=os.environ.get("ABOX_E2B_PYTHONPATH", ""))
    flows = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_python_flows.py")
    r = subprocess.run(["/usr/bin/python3", "-s", flows], env=env, capture_output=True, text=True, timeout=600)
    for ln in r.stdout.splitlines():
        m = re.match(r"(not ok|ok) \d+ - (.*)", ln)
        if m:
            world.check(m.group(2), m.group(1) == "ok")
        elif ln.startswith("# ") and world.results:
            name, ok, detail = world.results[-1]
            world.results[-1] = (name, ok, (detail + "\n" if detail else "") + ln[2:])
    if not world.results:
        world.check("the flows ran", False, r.stderr[-2000:])
    elif r.returncode and all(ok for _, ok, _ in world.results):
        world.check("the flows' program ended well", False, r.stderr[-2000:])
    left = w.wait_clean()
    world.check("nothing of the sandboxes left in the world", not any(left.values()), left)
except Exception as e:
    world.check("the run did not break", False, repr(e))
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    w.stop()
world.finish()
