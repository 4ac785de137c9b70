"""Egress modes through the CLI, with real packets in a private world
(world.py): none, open, filtered by CIDR and by name; DNS as policy; the
always-denied ranges; E2B's validation texts; a policy change cutting a
flow; nothing left after kill.

usage: modes.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402
from world import check  # noqa: E402

world.enter()
BUILD = sys.argv[1]
w = world.World(BUILD, "modes")
CA = "printf '%s' '" + open(os.path.join(w.dir, "ca.pem")).read() + "' > /tmp/ca.pem; "


def run(net, cmd, *opts, timeout=60):
    r = w.abox("run", *net, *opts, "--user", "root", "--", "sh", "-c", cmd, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


try:
    # ---- none: loopback only (the default)
    rc, out = run([], "cat /proc/net/dev; curl -sS -m 3 http://203.0.113.10/; echo rc=$?")
    check("none (the default): no interface but lo", "eth0" not in out and "lo:" in out, out)
    check("none: nothing goes out", "rc=7" in out or "rc=6" in out, out)

    # ---- open
    rc, out = run(["--net", "open"], "ip -br addr show eth0; cat /etc/resolv.conf; curl -sS -m 5 http://allowed.test/")
    check("open: eth0 with an address of the pool", "10.231." in out, out)
    check("open: resolv.conf names the sandbox's gateway", "nameserver 10.231." in out, out)
    check("open: a name resolves and its server answers", "hello from 203.0.113.10 host=allowed.test" in out, out)
    rc, out = run(["--net", "open"], CA + "curl -sS -m 5 --cacert /tmp/ca.pem https://other.test/")
    check("open: HTTPS to any name", "hello from 203.0.113.11" in out and "sni=other.test" in out, out)
    rc, out = run(["--net", "open"], "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                  "s.settimeout(3); s.sendto(b'ping', ('203.0.113.10', 7)); print(s.recvfrom(100)[0])\"")
    check("open: UDP out and back", "b'ping'" in out, out)
    rc, out = run(["--net", "open"], "curl -sS -m 3 telnet://203.0.113.10:25 </dev/null; echo rc=$?")
    check("open: SMTP (TCP 25) refused by default", "rc=7" in out and "Connection refused" in out or "Couldn't connect" in out, out)
    rc, out = run(["--net", "open"], "python3 -c 'import socket; s = socket.socket(); s.bind((\"0.0.0.0\", 80)); "
                  "print(\"bound\")'")
    check("open: sandbox root binds port 80 (its network namespace lets anyone below 1024)", "bound" in out, out)
    rc, out = run(["--net", "open"], "cat /proc/net/if_inet6; curl -sS -m 3 -6 'http://[2001:db8::1]/'; echo rc=$?")
    check("open: no IPv6 address but ::1, and no IPv6 out", "eth0" not in out.split("rc=")[0] and "rc=7" in out, out)

    # ---- the always-denied ranges and the host, in open mode
    for what, url in (("cloud metadata 169.254.169.254", "http://169.254.169.254/"),
                      ("the host's uplink address", "http://198.51.100.2:8080/"),
                      ("the sandbox's gateway (a host address)", "http://10.231.0.1:15380/"),
                      ("a private range", "http://10.0.0.5/")):
        rc, out = run(["--net", "open"], f"curl -sS -m 3 {url}; echo rc=$?")
        check(f"open: {what} refused at once (a reset, not a timeout)", "rc=7" in out, out)
    check("the host's services saw no sandbox", all(h.hits == 0 for h in w.host_services))

    # ---- filtered by CIDR
    rc, out = run(["--net", "filtered", "--allow-out", "203.0.113.10"],
                  "curl -sS -m 3 http://203.0.113.10/; curl -sS -m 3 http://203.0.113.11/; echo rc=$?; "
                  "getent hosts allowed.test; echo getent=$?")
    check("filtered by CIDR: the allowed address answers", "hello from 203.0.113.10" in out, out)
    check("filtered by CIDR: another is refused", "rc=7" in out, out)
    check("filtered by CIDR only: names are refused (no DNS out)", "getent=2" in out, out)
    rc, out = run(["--net", "filtered", "--deny-out", "203.0.113.11"],
                  "curl -sS -m 3 http://203.0.113.10/; curl -sS -m 3 http://203.0.113.11/; echo rc=$?")
    check("filtered, deny list only: the rest is open", "hello from 203.0.113.10" in out and "rc=7" in out, out)
    rc, out = run(["--net", "filtered", "--allow-out", "203.0.113.11", "--deny-out", "203.0.113.0/24"],
                  "curl -sS -m 3 http://203.0.113.11/; curl -sS -m 3 http://203.0.113.10/; echo rc=$?")
    check("filtered: allow wins over deny", "hello from 203.0.113.11" in out and "rc=7" in out, out)

    # ---- filtered by name
    before = w.queries()
    rc, out = run(["--allow-out", "allowed.test", "--allow-out", "*.other.test", "--deny-out", "0.0.0.0/0"],
                  CA + "curl -sS -m 5 http://allowed.test/; curl -sS -m 5 --cacert /tmp/ca.pem https://www.other.test/; "
                  "curl -sS -m 5 http://other.test/; echo rc=$?; getent hosts deny.test; echo getent=$?")
    check("filtered by name: an allowed name over HTTP", "hello from 203.0.113.10 host=allowed.test" in out, out)
    check("filtered by name: *.other.test allows www.other.test over HTTPS",
          "hello from 203.0.113.11 host=www.other.test sni=www.other.test" in out, out)
    check("filtered by name: *.other.test does not allow other.test itself (as E2B)", "rc=6" in out, out)
    check("filtered by name: a name off the list does not resolve", "getent=2" in out, out)
    asked = w.queries()[len(before):]
    check("filtered by name: names off the list never reached the internet's DNS",
          "deny.test" not in asked and " other.test" not in asked.replace("www.other.test", ""), asked)
    rc, out = run(["--allow-out", "allowed.test", "--deny-out", "0.0.0.0/0"],
                  "curl -sS -m 5 -H 'Host: other.test' http://203.0.113.11/; echo; "
                  "curl -sS -m 5 -k https://203.0.113.11/; echo rc=$?")
    check("filtered by name: HTTP to an address with another name gets a 403 naming the policy",
          "not allowed" in out and "other.test" in out, out)
    check("filtered by name: TLS without a server name is refused with an alert", "rc=35" in out, out)

    # ---- E2B's validation, its texts
    for args, text in ((["--deny-out", "example.com"], "invalid denied CIDR example.com"),
                       (["--allow-out", "0.0.0.0"], "invalid allowed address 0.0.0.0"),
                       (["--allow-out", "example.com", "--deny-out", "10.0.0.0/8"],
                        "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out")):
        rc, out = run(args, "true")
        check(f"E2B's validation: {args} refused with its text", rc == 125 and text in out, out)
    rc, out = run(["--net", "open", "--allow-out", "1.2.3.4"], "true")
    check("--allow-out with --net open is refused, naming the fix", rc == 125 and "filtered" in out, out)

    # ---- a long-lived sandbox's policy changed while a flow runs
    r = w.abox("create", "--net", "open", "--timeout", "120")
    sid = r.stdout.strip()
    check("create --net open", r.returncode == 0 and len(sid) == 20, r.stderr)
    r = w.abox("network", "--json", sid)
    info = json.loads(r.stdout or "{}")
    check("abox network shows the mode and address", info.get("mode") == "open" and info.get("address", "").startswith("10.231."), r.stdout + r.stderr)
    bg = subprocess.Popen([os.path.join(BUILD, "abox"), "exec", sid, "--", "python3", "-c",
                           "import socket,time\ns=socket.create_connection(('203.0.113.10',80),3)\n"
                           "n=0\nwhile True:\n"
                           "  try:\n    s.sendall(b'x'*100); n+=1; time.sleep(0.05)\n"
                           "  except OSError as e:\n    print('cut after', n, e.__class__.__name__, flush=True); break\n"],
                          env=w.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    t0 = time.time()
    r = w.abox("network", sid, "--net", "filtered", "--allow-out", "203.0.113.11")
    check("abox network replaces the policy", r.returncode == 0, r.stderr)
    try:
        out, _ = bg.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        bg.kill()
        out = "still running 20 s after the change"
    check("a policy change cuts a flow to what it now denies", "cut after" in out, out)
    r = w.abox("exec", sid, "--", "sh", "-c", "curl -sS -m 3 http://203.0.113.11/; curl -sS -m 3 http://203.0.113.10/; echo rc=$?")
    check("the new policy holds", "hello from 203.0.113.11" in r.stdout and "rc=7" in r.stdout, r.stdout + r.stderr)
    r = w.abox("network", "--json", sid)
    info = json.loads(r.stdout or "{}")
    check("abox network shows the new policy and counts traffic",
          info.get("mode") == "filtered" and info.get("allowOut") == ["203.0.113.11"] and info.get("txBytes", 0) > 0,
          r.stdout + r.stderr)
    r = w.abox("metrics", sid)
    check("abox metrics shows its traffic", "net:" in r.stdout and "bytes out" in r.stdout, r.stdout + r.stderr)
    r = w.abox("network", sid, "--net", "none")
    check("a sandbox cannot lose its interface (said how to deny everything)",
          r.returncode != 0 and "0.0.0.0/0" in r.stderr, r.stderr)
    w.abox("kill", sid)

    # ---- a networked sandbox through pause, fork and snapshots
    r = w.abox("create", "--net", "filtered", "--allow-out", "203.0.113.10", "--timeout", "120")
    sid = r.stdout.strip()
    ok = lambda i: "hello from 203.0.113.10" in w.abox("exec", i, "--", "curl", "-sS", "-m", "5", "http://203.0.113.10/").stdout
    w.abox("pause", sid)
    w.abox("resume", sid)
    check("a frozen and thawed sandbox keeps its network", ok(sid))
    r = w.abox("pause", "--to-disk", sid)
    check("pause --to-disk of a sandbox with networking: refused, saying why (no memory checkpoint of it yet)",
          r.returncode != 0 and "networking" in r.stderr, r.stderr)
    addr = json.loads(w.abox("network", "--json", sid).stdout or "{}").get("address")
    r = w.abox("pause", "--no-memory", sid)
    check("pause without memory", r.returncode == 0, r.stderr)
    r = w.abox("resume", sid)
    check("... and its resume (a fresh init, a fresh interface) keeps the policy",
          r.returncode == 0 and ok(sid) and "rc=7" in w.abox("exec", sid, "--", "sh", "-c",
                                                             "curl -sS -m 3 http://203.0.113.11/; echo rc=$?").stdout)
    again = json.loads(w.abox("network", "--json", sid).stdout or "{}").get("address")
    check("... and its address", addr and again == addr, (addr, again))
    r = w.abox("fork", "--count", "2", sid)
    forks = r.stdout.split()
    check("fork: each copy its own address, the same policy", r.returncode == 0 and len(forks) == 2 and all(
        ok(f) for f in forks) and len({json.loads(w.abox("network", "--json", f).stdout)["address"] for f in forks}) == 2,
        r.stdout + r.stderr)
    w.abox("kill", sid, *forks)

    r = w.abox("create")
    sid = r.stdout.strip()
    r = w.abox("network", sid, "--net", "open")
    check("a sandbox made without networking cannot get it later (said so)",
          r.returncode != 0 and "without networking" in r.stderr, r.stderr)
    w.abox("kill", sid)

    # ---- a query lost on its way to the upstream resolver: abox-netd
    # sends it again itself, so the one query a client sends (no retry of
    # its own here) gets its answer rather than SERVFAIL
    rc, out = run(["--net", "open"], "python3 -c \"import socket, struct\n"
                  "ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]\n"
                  "q = struct.pack('!HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0) + b'\\x02a1\\x04once\\x04test\\x00' + "
                  "struct.pack('!HH', 1, 1)\n"
                  "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(6); s.sendto(q, (ns, 53))\n"
                  "r = s.recv(512); print('rcode', r[3] & 15, 'answers', struct.unpack('!H', r[6:8])[0])\"")
    check("a lost upstream query is sent again: the answer, not SERVFAIL", "rcode 0 answers 1" in out, out)
    check("... and the world's DNS server saw it twice", w.queries().count("udp 1 a1.once.test") == 2, w.queries())

    # ---- a query still open upstream when its sandbox ends: the
    # resolver's late answer (SERVFAIL at the upstream's 2.5 s deadline)
    # is not sent, so no flow toward the dead sandbox's address is left
    # behind (nor would it reach the next sandbox given that address)
    left = w.wait_clean()
    check("clean before the open query", not any(left.values()), left)
    r = w.abox("create", "--net", "open", "--timeout", "120")
    sid = r.stdout.strip()
    w.abox("exec", "-d", sid, "--", "getent", "hosts", "q.silent.test")
    end = time.time() + 10
    while "q.silent.test" not in w.queries() and time.time() < end:
        time.sleep(0.05)
    check("the query reached the world's DNS server and waits there", "q.silent.test" in w.queries())
    w.abox("kill", sid)
    time.sleep(4)
    left = w.leftovers()
    check("a late DNS answer leaves no flow after kill", not left["flows"], left)

    left = w.wait_clean()
    check("nothing left: no veth, element, flow or slot", not any(left.values()), left)
except Exception:
    world.broke()
finally:
    w.stop()
world.finish()
