"""Egress on a host that withholds CAP_NET_ADMIN, with real packets in a
private world (world.py): abox and its netd run with the capability
dropped (bounding and inheritable sets, so nothing below gets it back),
sandboxes get no veth, and their egress is relayed — an HTTP proxy and
SOCKS5 on their own 127.0.0.1, proxy variables set — and decided by the
same policy as the routed path.

usage: relay.py BUILD_DIR"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402
from world import check  # noqa: E402

world.enter()
BUILD = sys.argv[1]
w = world.World(BUILD, "relay")
CA = "printf '%s' '" + open(os.path.join(w.dir, "ca.pem")).read() + "' > /tmp/ca.pem; "
NOCAP = ["setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin", "--"]
ABOX = os.path.join(BUILD, "abox")
PROXY = "http://127.0.0.1:3128"


def abox(*args, timeout=120):
    r = subprocess.run(NOCAP + [ABOX, *args], capture_output=True, text=True, env=w.env, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def run(net, cmd, timeout=60):
    return abox("run", *net, "--user", "root", "--", "sh", "-c", cmd, timeout=timeout)


def status():
    return w.netd_request({"op": "status"}) or {}


try:
    eff = subprocess.run(NOCAP + ["grep", "CapEff", "/proc/self/status"], capture_output=True, text=True).stdout
    check("the test runs abox without CAP_NET_ADMIN", int(eff.split()[1], 16) & (1 << 12) == 0, eff)

    rc, out = abox("doctor")
    check("doctor says egress is relayed, proxy only, and where",
          "no CAP_NET_ADMIN" in out and "127.0.0.1:3128" in out and "proxy" in out, out)

    # ---- none: still loopback, and a sandbox's root cannot administer it
    rc, out = run([], "python3 -c \"import socket,fcntl,struct\n"
                      "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); socket.create_connection(s.getsockname())\n"
                      "print('lo works')\n"
                      "try:\n  fcntl.ioctl(socket.socket(socket.AF_INET, socket.SOCK_DGRAM), 0x8914, struct.pack('16sH14s', b'lo', 0, b''))\n"
                      "  print('lo taken down')\n"
                      "except OSError as e: print('lo kept', e.errno)\"; env | grep -ci _proxy; true")
    check("none without CAP_NET_ADMIN: the sandbox starts, its loopback works", rc == 0 and "lo works" in out, out)
    check("none: the sandbox's root cannot take its loopback down (no capability over its namespace)",
          "lo kept 1" in out, out)
    check("none: no proxy variables", out.strip().endswith("0"), out)

    # ---- open
    rc, out = run(["--net", "open"], "env | grep -i _proxy | sort; cat /etc/resolv.conf; cat /proc/net/dev; "
                                     "curl -sS -m 5 http://allowed.test/")
    check("open: no interface but lo", "eth0" not in out and "lo:" in out, out)
    check("open: the proxy variables name the relay",
          f"HTTP_PROXY={PROXY}" in out and f"https_proxy={PROXY}" in out and
          "ALL_PROXY=socks5h://127.0.0.1:3128" in out and "NO_PROXY=localhost" in out, out)
    check("open: HTTP through the relay (a name it resolves itself)",
          "hello from 203.0.113.10 host=allowed.test" in out, out)
    rc, out = run(["--net", "open"], CA + "curl -sS -m 5 --cacert /tmp/ca.pem https://other.test/")
    check("open: HTTPS by CONNECT", "hello from 203.0.113.11" in out and "sni=other.test" in out, out)
    rc, out = run(["--net", "open"], CA + "curl -sS -m 5 -x socks5h://127.0.0.1:3128 --cacert /tmp/ca.pem "
                                          "https://www.other.test/; curl -sS -m 5 -x socks5://127.0.0.1:3128 "
                                          "http://203.0.113.10/")
    check("open: SOCKS5 with a name and with an address",
          "sni=www.other.test" in out and "hello from 203.0.113.10" in out, out)
    rc, out = run(["--net", "open"], "curl -sS -m 3 --noproxy '*' http://203.0.113.10/; echo rc=$?; "
                                     "getent hosts allowed.test; echo getent=$?")
    check("open: nothing goes out around the relay, at once", "rc=7" in out, out)
    check("open: the sandbox resolves no names itself", "getent=2" in out, out)

    # ---- what is never reached, through the relay
    for what, target in (("cloud metadata", "http://169.254.169.254/"),
                         ("a name that resolves to the metadata address", "http://meta.test/"),
                         ("a rebinding name (a private address)", "http://rebind.test/"),
                         ("the host's own address", "http://198.51.100.2:8080/"),
                         ("a name of the host's own address", "http://host.test:8080/"),
                         ("the host's loopback", "http://127.0.0.1:8081/"),
                         ("SMTP (TCP 25)", "http://203.0.113.10:25/")):
        rc, out = run(["--net", "open"], f"curl -sS -m 5 -x {PROXY} --noproxy '' -i {target}; echo rc=$?")
        check(f"open, relayed: {what} refused with a 403 naming abox's policy",
              "403" in out and "X-Abox-Egress" in out, out)
    rc, out = run(["--net", "open"], "curl -sS -m 5 -x socks5h://127.0.0.1:3128 http://meta.test/; echo rc=$?")
    check("SOCKS5: a refusal is the protocol's 'not allowed by ruleset'", "rc=97" in out, out)
    check("the host's services saw no sandbox", all(h.hits == 0 for h in w.host_services))

    # ---- filtered
    before = w.queries()
    rc, out = run(["--allow-out", "allowed.test", "--deny-out", "0.0.0.0/0"],
                  "curl -sS -m 5 http://allowed.test/; curl -sS -m 5 -i http://other.test/; "
                  "curl -sS -m 5 -i http://203.0.113.11/")
    check("filtered by name: the allowed name goes through", "hello from 203.0.113.10 host=allowed.test" in out, out)
    check("filtered by name: another name is refused, naming it",
          "403" in out and "'other.test' is not allowed" in out, out)
    check("filtered by name: an address no CIDR allows is refused", "'203.0.113.11' is not allowed" in out, out)
    check("filtered by name: the refused name never reached the internet's DNS",
          " other.test" not in w.queries()[len(before):], w.queries()[len(before):])
    rc, out = run(["--net", "filtered", "--allow-out", "203.0.113.10", "--deny-out", "0.0.0.0/0"],
                  "curl -sS -m 5 http://203.0.113.10/; curl -sS -m 5 -i http://203.0.113.11/")
    check("filtered by CIDR: the allowed address answers, another gets a 403",
          "hello from 203.0.113.10" in out and "403" in out, out)

    # ---- a long-lived sandbox: its policy changed while a relayed flow runs
    rc, out = abox("create", "--net", "open", "--timeout", "120")
    sid = out.strip()
    check("create --net open without CAP_NET_ADMIN", rc == 0 and len(sid) == 20, out)
    rc, out = abox("network", "--json", sid)
    info = json.loads(out) if rc == 0 else {}
    check("abox network names the relay and no address",
          info.get("proxy") == "127.0.0.1:3128" and not info.get("address"), out)
    bg = subprocess.Popen(NOCAP + [ABOX, "exec", sid, "--", "python3", "-c",
                                   "import socket,time\ns=socket.create_connection(('127.0.0.1',3128),3)\n"
                                   "s.sendall(b'CONNECT 203.0.113.10:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
                                   "print(s.recv(100).split(b'\\r\\n')[0], flush=True)\n"
                                   "n=0\nwhile True:\n"
                                   "  try:\n    s.sendall(b'x'*100); n+=1; time.sleep(0.05)\n"
                                   "  except OSError as e:\n    print('cut after', n, e.__class__.__name__, flush=True); break\n"],
                          env=w.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    rc, out = abox("network", sid, "--net", "filtered", "--allow-out", "203.0.113.11")
    check("abox network replaces the policy", rc == 0, out)
    try:
        out, _ = bg.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        bg.kill()
        out = "still running 20 s after the change"
    check("a policy change cuts a relayed flow to what it now denies", "200" in out and "cut after" in out, out)
    rc, out = abox("exec", sid, "--", "sh", "-c", "curl -sS -m 3 http://203.0.113.11/; curl -sS -m 3 -i http://203.0.113.10/")
    check("the new policy holds", "hello from 203.0.113.11" in out and "403" in out, out)
    rc, out = abox("network", "--json", sid)
    info = json.loads(out) if rc == 0 else {}
    check("its counters count relayed traffic and refusals",
          info.get("proxyConnections", 0) >= 3 and info.get("proxyRefused", 0) >= 1 and info.get("txBytes", 0) > 0, out)

    # ---- netd killed: nothing opens; back after gc, the listener made again
    pid = status().get("pid")
    check("netd runs relayed", pid and status().get("datapath") == "relay", status())
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)
    rc, out = abox("exec", sid, "--", "sh", "-c", "curl -sS -m 3 http://203.0.113.11/; echo rc=$?")
    check("with netd killed, relayed connections are refused at once", "rc=7" in out, out)
    abox("gc")
    st = status()
    rc, out = abox("exec", sid, "--", "sh", "-c", "curl -sS -m 3 http://203.0.113.11/; curl -sS -m 3 -i http://203.0.113.10/")
    log = open(os.path.join(w.state, "net", "netd.log")).read()[-1500:]
    check("after a gc netd is back and relays the sandbox again, with its policy",
          st.get("pid") not in (None, pid) and "hello from 203.0.113.11" in out and "403" in out, (st, out, log))

    abox("kill", sid)
    time.sleep(0.2)
    st = status()
    left = w.leftovers()
    check("nothing left after kill: no slot, nothing served, no veth",
          not left["slots"] and not left["veths"] and st.get("sandboxes") == 0, (left, st))
except Exception:
    world.broke()
finally:
    w.stop()
world.finish()
