"""get_host() of the official Python SDK against an aboxd with no `domain`
configured, as TAP (run by tests/e2b/python/run.sh): the host names this
daemon, never the public cloud, and reaches the sandbox's port both by
name (a client that resolves *.localhost, as curl does) and by Host
header."""
import subprocess
import time
import urllib.parse

import httpx

from tap import acreate, check, create, eq, run, test

api = urllib.parse.urlparse(__import__("os").environ["E2B_API_URL"])


def serve(s):
    s.commands.run("mkdir -p /tmp/www && echo served > /tmp/www/i.txt && cd /tmp/www && "
                   "exec python3 -m http.server 8000 --bind 127.0.0.1", background=True)
    for _ in range(50):
        if s.commands.run("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))' "
                          "2>/dev/null && echo up || true").stdout.strip() == "up":
            return
        time.sleep(0.1)
    raise AssertionError("the server in the sandbox did not start")


@test("get_host without a configured domain names this daemon, not e2b.app")
def _():
    s = create()
    h = s.get_host(8000)
    check("e2b.app" not in h, f"the public cloud: {h}")
    eq(h, f"8000-{s.sandbox_id}.localhost:{api.port}", "the host")


@test("get_host reaches the sandbox's port by Host header and by name")
def _():
    s = create()
    serve(s)
    h = s.get_host(8000)
    r = httpx.get(f"http://127.0.0.1:{api.port}/i.txt", headers={"Host": h})
    eq((r.status_code, r.text), (200, "served\n"), "by Host header")
    # curl resolves *.localhost to loopback itself (RFC 6761)
    out = subprocess.run(["curl", "-s", f"http://{h}/i.txt"], capture_output=True, text=True, timeout=30)
    eq(out.stdout, "served\n", "by name")


@test("the async client's get_host too")
async def _():
    s = await acreate()
    eq(s.get_host(3000), f"3000-{s.sandbox_id}.localhost:{api.port}", "the host")


run()
