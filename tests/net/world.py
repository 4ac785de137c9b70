"""A private world for the network tests: no packet of a network test
ever reaches this machine's real interfaces.

A test script calls world.enter() first: the script re-runs itself in a
network namespace of its own (unshare) — abox, its netd, its table and
every sandbox live there — and refuses to go on unless it finds itself
in one with nothing but loopback. World() then adds:

    up0 (198.51.100.2/24)  the uplink abox is configured to use, a veth
                           to a second namespace standing for the
                           internet (198.51.100.1, servers.py there:
                           203.0.113.0/24 and a metadata stand-in)
    198.51.100.2:8080, 127.0.0.1:8081   services of "the host" that no
                           sandbox may reach

and a state and runtime folder of the test's own, holding network.json.
world.stop() ends what it started (by pid) and removes its folders."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

# the daemon tests' way to find a free loopback port, shared
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from harness import free_port  # noqa: E402,F401

MARK = "ABOX_NET_WORLD"


def _ns_inode(pid):
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def enter():
    """Re-runs the calling script in a network namespace of its own."""
    if MARK not in os.environ:
        # the namespace we leave, to prove we left it
        env = dict(os.environ, **{MARK: str(_ns_inode("self"))})
        # --kill-child: the script dies with unshare, whatever happens
        os.execvpe("unshare", ["unshare", "--net", "--fork", "--kill-child", "--", sys.executable] + sys.argv, env)
    here = _ns_inode("self")
    try:
        init = _ns_inode(1)
    except OSError:
        init = None  # pid 1 of another user namespace: its own is not ours anyway
    if here == int(os.environ[MARK]) or here == init:
        sys.exit("world: refusing to run network tests in the machine's own network namespace")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout.splitlines()
    names = [ln.split(":")[1].strip().split("@")[0] for ln in links]
    if names != ["lo"]:
        sys.exit(f"world: this namespace is not a fresh one (links: {names}); refusing to run")


def js_sdk(build, ver):
    """The official JS SDK of version ver in BUILD/e2b-sdk-VER, installed
    from the npm registry when missing: before enter(), since the world
    has no way out. Its folder."""
    sdk = os.path.join(os.path.abspath(build), f"e2b-sdk-{ver}")
    if MARK not in os.environ and not os.path.exists(os.path.join(sdk, "node_modules", "e2b", "package.json")):
        os.makedirs(sdk, exist_ok=True)
        subprocess.run(["npm", "init", "-y"], cwd=sdk, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"e2b@{ver}",
                        f"@e2b/code-interpreter@{os.environ.get('ABOX_E2B_CI_VERSION', '2.8.0')}"],
                       cwd=sdk, stdout=subprocess.DEVNULL, check=True)
    return sdk


def sh(*cmd, ns=None, check=True):
    if ns is not None:
        cmd = ("nsenter", "-t", str(ns), "-n", "--") + cmd
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


class Host(threading.Thread):
    """A TCP service of the host: answers 'host' to anyone who connects."""

    def __init__(self, addr):
        super().__init__(daemon=True)
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind(addr)
        self.s.listen(16)
        self.hits = 0

    def run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.hits += 1
            try:
                c.sendall(b"HTTP/1.0 200 OK\r\n\r\nhost\n")
            finally:
                c.close()


class World:
    def __init__(self, build, name, config=None):
        self.build = os.path.abspath(build)
        self.dir = tempfile.mkdtemp(prefix=f"abox-net-{name}-")
        self.state = os.path.join(self.dir, "state")
        self.run_dir = os.path.join(self.dir, "run")
        os.makedirs(self.state)
        self.procs = []
        sh("ip", "link", "set", "lo", "up")
        self._ca()
        # the internet: a namespace held by a process of ours
        inet = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"])
        self.procs.append(inet)
        self.inet = inet.pid
        for _ in range(100):
            if _ns_inode(self.inet) != _ns_inode("self"):
                break
            time.sleep(0.01)
        sh("ip", "link", "add", "up0", "type", "veth", "peer", "name", "wan0", "netns", str(self.inet))
        sh("ip", "addr", "add", "198.51.100.2/24", "dev", "up0")
        sh("ip", "link", "set", "up0", "up")
        sh("ip", "route", "add", "default", "via", "198.51.100.1")
        for c in (("ip", "link", "set", "lo", "up"), ("ip", "addr", "add", "198.51.100.1/24", "dev", "wan0"),
                  ("ip", "link", "set", "wan0", "up")):
            sh(*c, ns=self.inet)
        for a in ("203.0.113.10/32", "203.0.113.11/32", "203.0.113.12/32", "203.0.113.53/32", "169.254.169.254/32"):
            sh("ip", "addr", "add", a, "dev", "lo", ns=self.inet)
        srv = subprocess.Popen(["nsenter", "-t", str(self.inet), "-n", "--", sys.executable,
                                os.path.join(os.path.dirname(__file__), "servers.py"), self.dir],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "servers.log"), "w"))
        self.procs.append(srv)
        for _ in range(500):
            if os.path.exists(os.path.join(self.dir, "ready")):
                break
            if srv.poll() is not None:
                raise RuntimeError("servers.py died: " + open(os.path.join(self.dir, "servers.log")).read())
            time.sleep(0.01)
        self.host_services = [Host(("198.51.100.2", 8080)), Host(("127.0.0.1", 8081))]
        for h in self.host_services:
            h.start()
        cfg = {"uplink": "up0", "resolvers": ["203.0.113.53"]}
        cfg.update(config or {})
        with open(os.path.join(self.state, "network.json"), "w") as f:
            json.dump(cfg, f)
        self.env = dict(os.environ, ABOX_ROOT=self.state, ABOX_RUNTIME_DIR=self.run_dir,
                        ABOX_INIT=os.path.join(self.build, "abox-init"),
                        ABOX_NETD=os.path.join(self.build, "abox-netd"), ABOX_NETD_IDLE_S="600")

    def _ca(self):
        d = self.dir
        cnf = os.path.join(d, "san.cnf")
        with open(cnf, "w") as f:
            f.write("subjectAltName=DNS:allowed.test,DNS:*.allowed.test,DNS:other.test,DNS:*.other.test,"
                    "DNS:deny.test\n")
        for c in (["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                   "/CN=abox test CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem"],
                  ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=allowed.test",
                   "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr"],
                  ["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey",
                   f"{d}/ca.key", "-CAcreateserial", "-days", "2", "-extfile", cnf, "-out", f"{d}/server.pem"]):
            sh(*c)
        os.chmod(d, 0o755)
        os.chmod(f"{d}/ca.pem", 0o644)

    def aboxd(self, config):
        """aboxd with config (a dict), its log beside the world's state,
        once it listens on config["port"]: the process (the caller ends it)."""
        conf = os.path.join(self.dir, "aboxd.json")
        with open(conf, "w") as f:
            json.dump(config, f)
        p = subprocess.Popen([os.path.join(self.build, "aboxd"), "--config", conf], env=self.env,
                             stderr=open(os.path.join(self.dir, "aboxd.log"), "w"))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", config["port"]), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        return p

    def abox(self, *args, timeout=120, stdin=None):
        return subprocess.run([os.path.join(self.build, "abox"), *args], capture_output=True, text=True,
                              env=self.env, timeout=timeout, input=stdin)

    def queries(self):
        """Every question the internet's DNS server has been asked."""
        try:
            return open(os.path.join(self.dir, "queries.log")).read()
        except FileNotFoundError:
            return ""

    def netd_name(self):
        """This world's abox-netd's abstract socket name (no leading NUL)."""
        import hashlib
        return "abox-netd-" + hashlib.sha256(self.state.encode()).hexdigest()[:32]

    def netd_request(self, req):
        """A request straight to this world's abox-netd (None: not running)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect("\0" + self.netd_name())
            s.send(json.dumps(req).encode())
            return json.loads(s.recv(65536))
        except OSError:
            return None
        finally:
            s.close()

    def leftovers(self):
        """What abox left in this world: veths, table elements, flows,
        slots (empty lists when nothing)."""
        out = {}
        links = sh("ip", "-o", "link").stdout
        out["veths"] = [ln.split(":")[1].strip().split("@")[0] for ln in links.splitlines() if ": abx" in ln]
        els = []
        for s in ("ifaces", "sbx", "allow4", "deny4", "learned4", "denyall", "proxied"):
            r = sh("nft", "-j", "list", "set", "inet", "abox", s, check=False)
            if r.returncode == 0:
                for item in json.loads(r.stdout)["nftables"]:
                    els += [(s, json.dumps(e)) for e in item.get("set", {}).get("elem", [])]
        out["elements"] = els
        # from the pool, and to it (a packet toward a sandbox that is
        # gone makes an entry the other way round)
        ct = sh("conntrack", "-L", "-s", "10.231.0.0/16", check=False).stdout
        ct += sh("conntrack", "-L", "-d", "10.231.0.0/16", check=False).stdout
        out["flows"] = sorted({ln for ln in ct.splitlines() if ln.strip()})
        sd = os.path.join(self.state, "net", "slots")
        # slot files are numbers (netd keeps a few files made ahead beside them)
        out["slots"] = sorted(n for n in os.listdir(sd) if n.isdigit()) if os.path.isdir(sd) else []
        return out

    def wait_clean(self, secs=10):
        """leftovers() once it is empty, or what is left after secs
        (a veth goes with its sandbox's namespace, a moment later)."""
        end = time.time() + secs
        while True:
            left = self.leftovers()
            if not any(left.values()) or time.time() > end:
                return left
            time.sleep(0.1)

    def stop(self):
        # every sandbox still there (a test or bench that failed half-way)
        # is killed before its state folder goes: removing the folder
        # alone would leave their processes, cgroups and mounts behind
        rows = self.abox("ls").stdout.splitlines()[1:]  # a header, then one sandbox a line
        ids = [r.split()[0] for r in rows if r.strip()]
        for i in range(0, len(ids), 50):
            self.abox("kill", *ids[i:i + 50], timeout=600)
        self.abox("gc")
        self.netd_request({"op": "stop"})
        for h in self.host_services:
            h.s.close()
        for p in reversed(self.procs):
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", self.dir])


# ---- TAP ----------------------------------------------------------------

results = []


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))
    return bool(cond)


def finish():
    print(f"1..{len(results)}")
    for i, (name, ok, detail) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok:
            for dl in str(detail)[:2000].splitlines():
                print(f"# {dl}")
    sys.exit(0 if results and all(ok for _, ok, _ in results) else 1)


def broke():
    import traceback
    check("no step raised", False, traceback.format_exc()[-1500:])
