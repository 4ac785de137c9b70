"""The official E2B JS SDK's network options (e2b_network.mjs) against
aboxd inside the private world of world.py. The SDK is installed from
the npm registry into the build folder before the test enters its world
(the world has no way out).

usage: e2b_sdk.py BUILD_DIR SDK_VERSION"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402

BUILD, VER = os.path.abspath(sys.argv[1]), sys.argv[2]
SDK = world.js_sdk(BUILD, VER)
world.enter()

w = world.World(BUILD, f"e2b-{VER}")
daemon = None
try:
    port, admin = world.free_port(), world.free_port()
    key, other = "e2b_" + os.urandom(20).hex(), "e2b_" + os.urandom(20).hex()
    daemon = w.aboxd({"port": port, "adminPort": admin, "apiKeys": [key, other]})
    flow = os.path.join(SDK, "e2b_network.mjs")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_network.mjs")) as src, \
            open(flow, "w") as dst:
        dst.write(src.read())
    env = dict(w.env, E2B_API_KEY=key, E2B_API_URL=f"http://127.0.0.1:{port}",
               E2B_SANDBOX_URL=f"http://127.0.0.1:{port}")
    r = subprocess.run(["node", flow], cwd=SDK, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout
    n = sum(1 for ln in out.splitlines() if ln.startswith(("ok ", "not ok ")))

    # the same API over plain HTTP: what the SDK does not show
    import urllib.error
    import urllib.request

    def req(method, path, body=None, k=key):
        rq = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                    data=None if body is None else json.dumps(body).encode(),
                                    headers={"X-API-Key": k, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(rq, timeout=60) as resp:
                t = resp.read()
                return resp.status, json.loads(t) if t else None
        except urllib.error.HTTPError as e:
            t = e.read()
            return e.code, json.loads(t) if t else None

    more = []
    st, sb = req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60, "allow_internet_access": False,
                                           "network": {"denyOut": ["10.0.0.0/8"], "allowPublicTraffic": True}})
    sid = (sb or {}).get("sandboxID", "")
    st, det = req("GET", f"/sandboxes/{sid}")
    more.append(("GET shows the settings as given and allowInternetAccess beside them",
                 det.get("network", {}).get("denyOut") == ["10.0.0.0/8"] and det.get("allowInternetAccess") is False, det))
    st, body = req("PUT", f"/sandboxes/{sid}/network", {"denyOut": "all"})
    more.append(("PUT with a malformed body: 400", st == 400, body))
    st, body = req("PUT", f"/sandboxes/{sid}/network", {"allowOut": ["203.0.113.10"], "denyOut": ["0.0.0.0/0"]})
    st2, det = req("GET", f"/sandboxes/{sid}")
    more.append(("PUT replaces the egress (204), GET shows it, the ingress and allowInternetAccess kept",
                 st == 204 and det.get("network") == {"allowPublicTraffic": True, "allowOut": ["203.0.113.10"],
                                                      "denyOut": ["0.0.0.0/0"]}
                 and det.get("allowInternetAccess") is False, det))
    st, _ = req("PUT", f"/sandboxes/{sid}/network", {"allowOut": []}, k=other)
    more.append(("another key cannot change it (404)", st == 404, st))
    st, body = req("PUT", f"/sandboxes/{sid}/network", {"rules": {"api.test": [{"transform": {"headers": {"a": "b"}}}]}})
    more.append(("transform rules: E2B's 400 for a team without them",
                 st == 400 and body.get("message") == "Network transform rules are not available for your team.", body))
    st, body = req("POST", "/v2/sandboxes", {"templateID": "base", "network": {"maskRequestHost": "-https://abcd"}})
    more.append(("maskRequestHost that is no host: E2B's 400",
                 st == 400 and "mask request host is not valid" in (body or {}).get("message", ""), body))
    # ingress: allowPublicTraffic false wants the traffic token; the mask
    # is the Host the sandbox's server sees
    st, ib = req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 60,
                                           "network": {"allowPublicTraffic": False, "maskRequestHost": "app.test:${PORT}"}})
    iid, traffic = (ib or {}).get("sandboxID", ""), (ib or {}).get("trafficAccessToken", "")
    server = subprocess.Popen([os.path.join(BUILD, "abox"), "exec", iid, "--", "python3", "-c",
                               "import http.server\nclass H(http.server.BaseHTTPRequestHandler):\n"
                               "  def do_GET(self):\n    b=('host='+self.headers.get('Host','')).encode()\n"
                               "    self.send_response(200); self.send_header('Content-Length',str(len(b))); self.end_headers()\n"
                               "    self.wfile.write(b)\n"
                               "http.server.HTTPServer(('127.0.0.1',3000),H).serve_forever()"],
                              env=w.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)

    def through(token):
        h = {"E2b-Sandbox-Id": iid, "E2b-Sandbox-Port": "3000"}
        if token:
            h["E2B-Traffic-Access-Token"] = token
        rq = urllib.request.Request(f"http://127.0.0.1:{port}/", headers=h)
        try:
            with urllib.request.urlopen(rq, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
    st, body = through(None)
    more.append(("allowPublicTraffic false: the port refused without the traffic token (403)", st == 403, (st, body)))
    st, body = through(traffic)
    more.append(("... served with it, and the sandbox's server sees maskRequestHost as Host (${PORT} filled in)",
                 st == 200 and body == "host=app.test:3000", (st, body)))
    server.kill()
    server.wait()
    req("DELETE", f"/sandboxes/{iid}")
    req("DELETE", f"/sandboxes/{sid}")
    more.append(("kill removes the stored settings", not os.path.exists(os.path.join(w.state, "aboxd-network", sid)), sid))
    # Prometheus: egress summed, refusals by why (the flows above refused
    # names, proxied connections and packets by policy)
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=30) as resp:
        prom = resp.read().decode()
    vals = {ln.split(" ")[0]: float(ln.split(" ")[1]) for ln in prom.splitlines()
            if ln.startswith("abox_net_") and " " in ln}
    more.append(("Prometheus: egress counted, refusals by why",
                 "abox_net_bytes{direction=\"out\"}" in vals and vals.get('abox_net_dns_queries_total', 0) > 0
                 and vals.get('abox_net_refused_total{reason="dns"}', 0) > 0
                 and vals.get('abox_net_refused_total{reason="private"}', 0) > 0
                 and vals.get('abox_net_refused_total{reason="policy"}', 0) > 0,
                 "\n".join(ln for ln in prom.splitlines() if "abox_net" in ln)))
    for i, (name, ok, detail) in enumerate(more, n + 1):
        out += f"{'ok' if ok else 'not ok'} {i} - {name}\n" + ("" if ok else f"# {str(detail)[:800]}\n")
    n += len(more)

    left = w.wait_clean()
    extra = f"ok {n + 1} - nothing left in the world" if not any(left.values()) else \
        f"not ok {n + 1} - left in the world: {left}"
    print(out.replace(f"1..{n - len(more)}", f"1..{n + 1}", 1).rstrip())
    print(extra)
    if r.returncode or r.stderr.strip():
        for ln in r.stderr.strip().splitlines()[-20:]:
            print("# " + ln)
    status = 0 if r.returncode == 0 and extra.startswith("ok") and all(ok for _, ok, _ in more) else 1
except Exception as e:
    print("1..1\nnot ok 1 - the run broke: " + repr(e))
    status = 1
finally:
    if daemon:
        daemon.terminate()
        daemon.wait()
    w.stop()
sys.exit(status)
