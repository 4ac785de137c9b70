"""Spare namespaces (abox-netd's pool, src/netd/spares.h) in a private
world (world.py): a create is handed one and finishes it (its host end
renamed to the sandbox's), creates beyond the pool make their own, a
pool of 0 is the slow path alone, and the spares go with netd whether it
leaves or is killed: nothing of them is left behind.

usage: spares.py BUILD_DIR"""
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402
from world import check, sh  # noqa: E402

world.enter()
BUILD = sys.argv[1]
w = world.World(BUILD, "spares")


def links(prefix):
    out = sh("ip", "-o", "link").stdout
    return [ln.split(":")[1].strip().split("@")[0] for ln in out.splitlines() if f": {prefix}" in ln]


def until(cond, secs=10):
    end = time.time() + secs
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    return cond()


def status():
    return w.netd_request({"op": "status"}) or {}


def curl(sid):
    r = w.abox("exec", sid, "--", "sh", "-c", "curl -sS -m 5 http://allowed.test/")
    return "hello from 203.0.113.10" in r.stdout


def v6_off(link):
    try:
        with open(f"/proc/sys/net/ipv6/conf/{link}/disable_ipv6") as f:
            return f.read().strip() == "1"
    except FileNotFoundError:
        return False


def v6_routes():
    return len(sh("ip", "-6", "route", "show", "table", "all").stdout.splitlines())


def config(**kv):
    cfg = {"uplink": "up0", "resolvers": ["203.0.113.53"]}
    cfg.update(kv)
    with open(os.path.join(w.state, "network.json"), "w") as f:
        json.dump(cfg, f)


try:
    # netd starts with the first networked sandbox and fills its pool
    r = w.abox("run", "--net", "open", "--", "true")
    check("a first networked run starts abox-netd", r.returncode == 0, r.stderr)
    check("netd keeps 4 spares by default", until(lambda: status().get("spares") == 4), status())
    check("... each a veth whose host end waits under abp*", until(lambda: len(links("abp")) == 4), links(""))

    check("... with IPv6 off before they are up", all(v6_off(ln) for ln in links("abp")),
          {ln: v6_off(ln) for ln in links("abp")})
    routes = v6_routes()
    r = w.abox("create", "--net", "open", "--timeout", "300")
    sid = r.stdout.strip()
    check("a create with a spare", r.returncode == 0, r.stderr)
    mine = "abx" + sid[:12]
    check("its host end renamed to the sandbox's name", mine in links("abx"), links(""))
    # every host end's link-local routes in the host's one IPv6 table
    # made each link change walk them all (attach.h)
    check("... IPv6 off on it: the host's IPv6 routes did not grow", v6_off(mine) and v6_routes() == routes,
          (v6_off(mine), routes, v6_routes()))
    check("... and egress works through it", curl(sid))
    r = w.abox("exec", sid, "--", "sh", "-c", "ip -o link | cut -d: -f2 | cut -d@ -f1; echo --; ip -4 -o addr; ip route")
    names = r.stdout.split("--")[0].split()
    check("inside: lo and eth0 only, the slot's address, the default route",
          names == ["lo", "eth0"] and "eth0    inet 10.231." in r.stdout and "default via 10.231." in r.stdout,
          r.stdout)
    check("the pool is filled again", until(lambda: status().get("spares") == 4 and len(links("abp")) == 4),
          (status(), links("")))
    w.abox("kill", sid)
    check("kill: its veth is gone, the spares stay", until(lambda: mine not in links("abx")) and
          len(links("abp")) == 4, links(""))

    # the library's take, by hand on connections of our own held open:
    # netd takes and records the slot, and remakes the pool between
    # creates, not under them, unless it runs below half
    def take(req):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.connect("\0" + w.netd_name())
        c.send(json.dumps(req).encode())
        return c, json.loads(c.recv(65536))  # the spare's fd, not taken, is closed by the kernel

    def slot_record(n):
        try:
            with open(os.path.join(w.state, "net", "slots", str(n))) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    OPEN = {"mode": "open", "allowOut": [], "denyOut": []}
    fakes = [f"takenbyhand{i:09d}" for i in range(4)]
    c1, a1 = take({"op": "take", "id": fakes[0], "policy": OPEN})
    check("take: a slot, its resolver's address and a spare in one answer",
          a1.get("ok") and a1.get("spare") is True and isinstance(a1.get("slot"), int) and
          a1.get("gateway", "").startswith("10.231."), a1)
    check("... the slot recorded for that id and policy",
          until(lambda: slot_record(a1.get("slot")).get("id") == fakes[0]) and
          slot_record(a1.get("slot")).get("policy", {}).get("mode") == "open", slot_record(a1.get("slot")))
    time.sleep(0.5)
    check("while that create is under way the pool is not remade (3 of 4)", status().get("spares") == 3, status())
    c2, a2 = take({"op": "take", "id": fakes[1], "policy": OPEN})
    c3, a3 = take({"op": "take", "id": fakes[2], "policy": OPEN})
    check("below half (1 of 4) it is remade at once, up to half", until(lambda: status().get("spares") == 2), status())
    time.sleep(0.5)
    check("... and no further while creates are under way", status().get("spares") == 2, status())
    for c in (c1, c2, c3):
        c.close()
    check("creates over: the pool is whole again", until(lambda: status().get("spares") == 4), status())
    # a library that made its slot itself (older than netd's takes)
    n = 16001
    os.makedirs(os.path.join(w.state, "net", "slots"), exist_ok=True)
    with open(os.path.join(w.state, "net", "slots", str(n)), "w") as f:
        json.dump({"id": fakes[3], "policy": OPEN}, f)
    c4, a4 = take({"op": "take", "id": fakes[3], "slot": n})
    c4.close()
    check("a take naming a slot made by its library is served: that slot, a spare",
          a4.get("ok") and a4.get("slot") == n and a4.get("spare") is True, a4)
    bad = take({"op": "take", "id": fakes[3], "policy": {"mode": "filtered", "allowOut": ["example.com"],
                                                         "denyOut": []}})
    bad[0].close()
    check("a take whose policy E2B would refuse is refused, naming why",
          not bad[1].get("ok") and "deny out" in bad[1].get("error", ""), bad[1])
    for f, a in zip(fakes, (a1, a2, a3, a4)):
        w.netd_request({"op": "remove", "id": f, "slot": a.get("slot", 0), "release": True})
    left = w.wait_clean()
    check("removes with release: nothing of them left, slots included", not any(left.values()), left)

    # a policy too big for one message goes as a file
    names = [f"name{i:04d}-" + "x" * 50 + ".test" for i in range(1000)] + ["allowed.test"]
    args = [a for nm in names for a in ("--allow-out", nm)] + ["--deny-out", "0.0.0.0/0"]
    r = w.abox("create", "--timeout", "300", *args)
    sid = r.stdout.strip()
    info = json.loads(w.abox("network", "--json", sid).stdout or "{}") if r.returncode == 0 else {}
    check("a policy of 1001 names (≈ 64 KB) is taken whole", r.returncode == 0 and
          len(info.get("allowOut", [])) == 1001, (r.stderr, str(info)[:300]))
    check("... and in force", curl(sid))
    w.abox("kill", sid)

    # more creates at once than there are spares: the rest make their own
    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        made = list(ex.map(lambda _: w.abox("create", "--net", "open", "--timeout", "300"), range(10)))
    ids = [m.stdout.strip() for m in made if m.returncode == 0]
    check("10 creates at once against a pool of 4: all made", len(ids) == 10, [m.stderr for m in made])
    check("... each with egress", all(curl(i) for i in ids))
    check("... each its own veth", len(set(links("abx"))) == 10, links(""))
    w.abox("kill", *ids)
    left = w.wait_clean()
    check("all killed: nothing of theirs left", not any(left.values()), left)

    # a create that fails after it was handed a spare: nothing of it left
    env = dict(w.env, ABOX_INIT="/bin/false")
    r = subprocess.run([os.path.join(BUILD, "abox"), "run", "--net", "open", "--", "true"], env=env,
                       capture_output=True, text=True, timeout=60)
    check("a create whose init fails fails, saying so", r.returncode != 0 and r.stderr.strip(), r.stderr)
    left = w.wait_clean()
    check("... and leaves no veth, element, flow or slot", not any(left.values()), left)
    check("... the pool filled again", until(lambda: status().get("spares") == 4), status())

    # ones that fail before their clone (netd was asked at their start,
    # and finishes a spare it handed out whether or not the creator is
    # still there: a remove that overtook that finish left the spare's
    # elements behind, a few times in 60 before the creator read netd's
    # answer first)
    runs = [w.abox("run", "--net", "open", "--template", "no-such-template", "--", "true") for _ in range(40)]
    check("creates from a missing template fail, naming it",
          all(r.returncode != 0 and "no-such-template" in r.stderr for r in runs), [r.stderr for r in runs][:2])
    left = w.wait_clean()
    check("... and leave no veth, element, flow or slot", not any(left.values()), left)

    # netd leaves: its spares go with it
    w.netd_request({"op": "stop"})
    check("netd stopped: no spare left", until(lambda: not links("abp")), links(""))

    # a create that connects while netd leaves (asked to stop; the same
    # happens when it leaves after a minute without sandboxes) is answered
    # by a netd started anew, never "Connection reset by peer"
    bad = []
    for _ in range(8):
        w.netd_request({"op": "stop"})
        r = w.abox("run", "--net", "open", "--", "true")
        if r.returncode != 0:
            bad.append(r.stderr.strip())
    check("creates racing netd's leaving all succeed", not bad, bad)

    # the netd `abox run` started blocks no signal: run blocks those it
    # passes on to its process, and a netd it started once inherited the
    # mask and ignored a plain kill
    def netd_pids():
        found = []
        for p in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmd[:1] == [b"abox-netd"] and w.state.encode() in cmd:
                found.append(int(p))
        return found
    pids = netd_pids()
    blocked = [ln for p in pids for ln in open(f"/proc/{p}/status") if ln.startswith("SigBlk:")]
    check("the netd a run started blocks no signal", len(pids) == 1 and blocked == ["SigBlk:\t0000000000000000\n"],
          (pids, blocked))
    if pids:
        os.kill(pids[0], signal.SIGTERM)
    check("... and SIGTERM ends it", until(lambda: not netd_pids()), netd_pids())
    w.netd_request({"op": "stop"})
    until(lambda: not links("abp"))

    # a pool of 0: only the slow path
    config(spares=0)
    r = w.abox("create", "--net", "open", "--timeout", "300")
    sid = r.stdout.strip()
    check("spares 0: a create makes its own namespace", r.returncode == 0 and curl(sid), r.stderr)
    check("... its host end with IPv6 off", v6_off("abx" + sid[:12]), links("abx"))
    check("... and netd keeps none", status().get("spares") == 0 and not links("abp"), (status(), links("")))
    w.abox("kill", sid)
    r = w.abox("run", "--net", "open", "--", "true")
    w.netd_request({"op": "stop"})
    config(spares=70)
    r = w.abox("run", "--net", "open", "--", "true")
    check("spares above 64: refused, naming the key", r.returncode != 0 and "spares" in r.stderr, r.stderr)

    # netd killed: the spares still go (only its fds held them)
    config(spares=3)
    w.abox("run", "--net", "open", "--", "true")
    check("a new netd fills a pool of 3", until(lambda: status().get("spares") == 3 and len(links("abp")) == 3),
          (status(), links("")))
    pid = status().get("pid")
    if pid:
        os.kill(pid, signal.SIGKILL)
    check("netd killed: its spares go with it", until(lambda: not links("abp")), links(""))
    left = w.wait_clean()
    check("nothing left", not any(left.values()), left)
except Exception:
    world.broke()
finally:
    w.stop()
world.finish()
