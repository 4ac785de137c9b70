#!/usr/bin/env python3
"""An OCI container in a user namespace of its own (Kubernetes'
hostUsers: false), as TAP (this test is the shim, tests/oci/shim.py):
made from the config's uidMappings/gidMappings, its root is a host id of
that range and nothing of the host's root (a host root's 0600 file bound
in cannot be read, a device cannot be made), while it owns what abox makes
for it (/dev, /dev/shm, a config's tmpfs) and its own files; init runs
as that host id too and its /proc files stay host root's; an exec lands in
the same namespace; a second container joins the first's namespace by
path, as a pod's containers join its sandbox's; a container engine's
default (abox.confinement=compat) keeps noNewPrivileges false and a
seccomp profile in it. Refused, naming the cause and leaving nothing:
host id 0 in a map, uid 0 and gid 0 on different host ids, a map without
root, a range of abox's own pool, a namespace of host root's to join.

usage: userns.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-userns-")
HOST = 300000  # the container's root on the host: below abox's pool (2^31), as a kubelet's ranges are
SIZE = 65536


def userns(base=HOST, gid_base=None, path=None, maps=True, more=None):
    def edit(c):
        ns = [n for n in c["linux"]["namespaces"] if n["type"] != "user"]
        ns.append({"type": "user", **({"path": path} if path else {})})
        c["linux"]["namespaces"] = ns
        if maps:
            c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": base, "size": SIZE}]
            c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": base if gid_base is None else gid_base,
                                          "size": SIZE}]
        c["root"]["readonly"] = False
        if more:
            more(c)
    return edit


def owned_bundle(name, args, edit):
    """A busybox bundle whose files are the container root's (what a
    container engine's snapshotter gives a pod with a user namespace)."""
    b = bundle(name, args, edit)
    subprocess.run(["chown", "-hR", f"{HOST}:{HOST}", os.path.join(b, "rootfs")], check=True)
    return b


def start(name, args, edit):
    b = owned_bundle(name, args, edit)
    r, pid, _ = create(name, b)
    if r.returncode != 0:
        raise RuntimeError(f"create {name}: {r}")
    s = oci("start", name)
    if s.returncode != 0:
        raise RuntimeError(f"start {name}: {s}")
    return pid


def stop(name, pid):
    oci("kill", name, "KILL")
    reap(pid)
    oci("delete", "--force", name)


def refused(name, edit, want):
    b = owned_bundle(name, ["/bin/true"], edit)
    r, _, _ = create(name, b)
    ok = r.returncode != 0 and want in r.stderr and name not in containers()
    check(f"refused: {name}, naming the cause", ok, r)


def containers():
    return sorted(c for c in os.listdir(root) if "=" not in c) if os.path.isdir(root) else []


def host_uid(pid):
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            if ln.startswith("Uid:"):
                return int(ln.split()[1])
    return None


try:
    secret = os.path.join(work, "host-secret")
    with open(secret, "w") as f:
        f.write("host root's\n")
    os.chmod(secret, 0o600)
    theirs = os.path.join(work, "theirs")
    with open(theirs, "w") as f:
        f.write("the pod's\n")
    os.chmod(theirs, 0o600)
    os.chown(theirs, HOST + 1000, HOST + 1000)

    def binds(c):
        c["mounts"].append({"destination": "/secret", "type": "bind", "source": secret, "options": ["rbind", "ro"]})
        c["mounts"].append({"destination": "/theirs", "type": "bind", "source": theirs, "options": ["rbind", "ro"]})
        c["mounts"].append({"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
                            "options": ["nosuid", "nodev", "mode=755"]})
        c["mounts"].append({"destination": "/owned", "type": "tmpfs", "source": "tmpfs",
                            "options": ["uid=1000", "gid=1000", "mode=700"]})

    pid = start("pod", ["/bin/sleep", "600"], userns(more=binds))
    init = json.loads(oci("state", "pod").stdout)["pid"]
    look = oci("exec", "pod", "/bin/sh", "-c",
               "exec 2>&1; cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g; "
               "cat /secret || echo SECRET=denied; cat /theirs; "
               "mknod /tmp/null c 1 3 || echo MKNOD=denied; "
               "touch /made-here && echo TOUCH=ok; stat -c 'dev=%u:%g' /dev; stat -c 'shm=%u:%g' /dev/shm; "
               "touch /dev/shm/x && echo SHM=ok; stat -c 'scratch=%u:%g' /scratch; touch /scratch/x && echo SCR=ok; "
               "stat -c 'owned=%u:%g' /owned; echo hi > /dev/null && echo NULL=ok; "
               "readlink /proc/self/ns/user")
    out = look.stdout
    maps = [ln.split() for ln in out.splitlines()[:2]]
    check("the container's uid and gid maps are the config's (0 -> host 300000, 65536 ids)",
          look.returncode == 0 and maps == [["0", str(HOST), str(SIZE)]] * 2, look)
    check("... its process is root inside (uid 0, gid 0)", "\n0\n0\n" in out, look)
    check("... a host root's 0600 file bound in cannot be read by the container's root",
          "SECRET=denied" in out and "host root's" not in out, look)
    check("... a file of a host id the container maps (its uid 1000's) reads as root's would", "the pod's" in out,
          look)
    check("... no device node can be made (CAP_MKNOD holds only in its own namespace)", "MKNOD=denied" in out, look)
    st = os.stat(os.path.join(work, "pod", "rootfs", "made-here"))
    check("... a file it makes in its root is the container root's host id on disk",
          "TOUCH=ok" in out and st.st_uid == HOST and st.st_gid == HOST, (out, st.st_uid))
    check("... /dev and /dev/shm are its root's, and it can write /dev/shm",
          "dev=0:0" in out and "shm=0:0" in out and "SHM=ok" in out and "NULL=ok" in out, look)
    check("... a config's tmpfs is its root's unless the config names an owner (uid=1000: that user's)",
          "scratch=0:0" in out and "SCR=ok" in out and "owned=1000:1000" in out, look)
    host_ns = os.readlink("/proc/self/ns/user")
    ns = out.strip().splitlines()[-1]
    check("... in a user namespace that is not the host's", ns.startswith("user:[") and ns != host_ns, look)
    check("init runs as the container root's host id, as does the process",
          host_uid(init) == HOST and host_uid(pid) == HOST, (host_uid(init), host_uid(pid)))
    e = oci("exec", "pod", "/bin/sh", "-c", "cat /proc/1/environ >/dev/null && echo INIT-READ; "
            "echo -1000 > /proc/1/oom_score_adj && echo INIT-OOM; true")
    check("... and the container's root can neither read init's memory nor change its OOM score",
          "INIT-READ" not in e.stdout and "INIT-OOM" not in e.stdout, e)

    # idmapped binds (a pod's volumes): a host root's folder seen as the
    # container root's through the container's maps, or as its uid
    # 1000's through maps of the mount's own
    vol = os.path.join(work, "volume")
    os.makedirs(vol)
    with open(os.path.join(vol, "data"), "w") as f:
        f.write("volume data\n")
    os.chmod(os.path.join(vol, "data"), 0o600)

    def idmapped(c):
        c["mounts"].append({"destination": "/vol", "type": "bind", "source": vol, "options": ["rbind", "idmap"]})
        c["mounts"].append({"destination": "/vol1000", "type": "bind", "source": vol, "options": ["bind", "ridmap"],
                            "uidMappings": [{"containerID": 0, "hostID": HOST + 1000, "size": 1}],
                            "gidMappings": [{"containerID": 0, "hostID": HOST + 1000, "size": 1}]})
    code, out = shim.run_to_end("idmap", ["/bin/sh", "-c", "exec 2>&1; stat -c 'vol=%u:%g' /vol/data; cat /vol/data; "
                                          "echo new > /vol/made && echo WROTE=ok; stat -c 'vol1000=%u:%g' /vol1000/data"],
                                userns(more=idmapped))
    made = os.stat(os.path.join(vol, "made")) if os.path.exists(os.path.join(vol, "made")) else None
    check("an idmapped bind of a host root's folder (idmap, no maps of its own: the container's) is its root's "
          "inside, readable and writable", code == 0 and "vol=0:0" in out and "volume data" in out
          and "WROTE=ok" in out, (code, out))
    check("... and what it writes there is host root's on disk, as the folder's other files",
          made is not None and made.st_uid == 0 and made.st_gid == 0, made)
    check("... and with maps of the mount's own (ridmap, host root as host id 300000+1000) the same file is its "
          "uid 1000's", "vol1000=1000:1000" in out, out)
    feats = json.loads(oci("features").stdout)
    check("features says user namespaces and idmapped mounts are there",
          "user" in feats["linux"]["namespaces"] and feats["linux"]["mountExtensions"]["idmap"]["enabled"]
          and "idmap" in feats["mountOptions"] and "ridmap" in feats["mountOptions"], feats)

    # a pod's second container joins the first's namespace by its path
    side = start("side", ["/bin/sleep", "600"], userns(path=f"/proc/{init}/ns/user"))
    j = oci("exec", "side", "/bin/sh", "-c", "readlink /proc/self/ns/user; id -u")
    check("a second container joins the first's user namespace by path, as a pod's containers do",
          j.returncode == 0 and j.stdout.split()[:2] == [ns, "0"], j)
    stop("side", side)
    side = start("side2", ["/bin/sleep", "600"], userns(path=f"/proc/{init}/ns/user", maps=False))
    j = oci("exec", "side2", "/bin/sh", "-c", "readlink /proc/self/ns/user; stat -c '%u' /dev")
    check("... also without maps in its config (the namespace's own are read from it)",
          j.returncode == 0 and j.stdout.split()[:2] == [ns, "0"], j)
    stop("side2", side)
    refused("side-maps", userns(base=HOST + SIZE, path=f"/proc/{init}/ns/user"),
            "not the maps of the user namespace")

    # a sandbox of abox's own (its pool's ids) is no pod's to join
    nstate, nrun = os.path.join(work, "native-state"), os.path.join(work, "native-run")
    native = [shim.ABOX, "--root", nstate, "--runtime-dir", nrun]
    made = subprocess.run(native + ["create", "--userns", "on"], capture_output=True, text=True, timeout=60)
    nid = made.stdout.strip().split()[-1] if made.returncode == 0 and made.stdout.strip() else ""
    info = subprocess.run(native + ["info", "--json", nid], capture_output=True, text=True, timeout=60) if nid else None
    npid = json.loads(info.stdout).get("pid") if info and info.returncode == 0 else None
    try:
        if npid:
            refused("native", userns(path=f"/proc/{npid}/ns/user", maps=False), "of abox's own pool")
        else:
            check("a sandbox of abox's own to join", False, (made, info))
    finally:
        if nid:
            subprocess.run(native + ["kill", nid], capture_output=True, timeout=60)

    # what the user namespace does to a container engine's default
    ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]

    def compat(c):
        c.setdefault("annotations", {})["abox.confinement"] = "compat"
        c["process"]["noNewPrivileges"] = False
        c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ARCHES,
                                 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                                               "errnoRet": 1}]}
    code, out = shim.run_to_end("compat", ["/bin/sh", "-c", "exec 2>&1; mkdir /tmp/d; echo mkdir=$?; "
                                           "grep -E '^(NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb))' /proc/self/status; "
                                           "grep -E '^Cap(Inh|Eff|Bnd)' /proc/1/status | sed 's/^/init/'"],
                                lambda c: (userns()(c), compat(c)))
    check("compat in a user namespace: no no_new_privs, the seccomp profile holds (mkdir: EPERM)",
          code == 0 and "NoNewPrivs:\t0" in out and "mkdir=1" in out, (code, out))
    sets = {ln.split(":")[0]: int(ln.split(":")[1], 16) for ln in out.splitlines() if ln.startswith(("Cap", "init"))}
    check("... and CAP_SYS_ADMIN (held by init for the profile) is in none of the process's sets, nor "
          "effective, inheritable or bounding in init", len(sets) == 8 and not any(v & (1 << 21) for v in sets.values()),
          sets)

    stop("pod", pid)
    check("deleted: no process of the container's host id is left",
          not [p for p in os.listdir("/proc") if p.isdigit() and host_uid(p) == HOST], None)

    refused("host-root", userns(base=0), "maps host id 0")
    refused("split", userns(gid_base=HOST + SIZE), "the same host id for both")
    refused("no-root", userns(more=lambda c: c["linux"].update(
        uidMappings=[{"containerID": 1, "hostID": HOST, "size": 100}])), "needs uid 0 and gid 0 mapped")
    refused("pool", userns(base=2147483648), "of abox's own pool")
    refused("no-ns", lambda c: (userns()(c), c["linux"].update(namespaces=[n for n in c["linux"]["namespaces"]
                                                                            if n["type"] != "user"])),
            "id mappings need a user namespace")
    refused("idmap-tmpfs", userns(more=lambda c: c["mounts"].append(
        {"destination": "/t", "type": "tmpfs", "source": "tmpfs", "options": ["idmap"]})), "only a bind can be idmapped")
    refused("maps-no-idmap", userns(more=lambda c: c["mounts"].append(
        {"destination": "/v", "type": "bind", "source": vol, "options": ["rbind"],
         "uidMappings": [{"containerID": 0, "hostID": HOST, "size": 1}],
         "gidMappings": [{"containerID": 0, "hostID": HOST, "size": 1}]})), "without the idmap or ridmap option")
    refused("idmap-host-root", userns(more=lambda c: c["mounts"].append(
        {"destination": "/v", "type": "bind", "source": vol, "options": ["rbind", "idmap"],
         "uidMappings": [{"containerID": 0, "hostID": 0, "size": 1}],
         "gidMappings": [{"containerID": 0, "hostID": HOST, "size": 1}]})), ".uidMappings[0]: maps host id 0")

    def idmap_no_userns(c):
        userns()(c)
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "user"]
        del c["linux"]["uidMappings"], c["linux"]["gidMappings"]
        c["mounts"].append({"destination": "/v", "type": "bind", "source": vol, "options": ["rbind", "idmap"]})
    refused("idmap-no-userns", idmap_no_userns, "and it has none")
    # a namespace host root made (not one abox made for a pod)
    other = subprocess.Popen(["unshare", "-U", "sleep", "60"])
    try:
        time.sleep(0.3)
        refused("foreign", userns(path=f"/proc/{other.pid}/ns/user", maps=False), "belongs to host uid 0")
    finally:
        other.kill()
        other.wait()
    refused("not-userns", userns(path="/proc/self/ns/net", maps=False), "is not a user namespace")
    check("nothing is left of the refused ones", containers() == [], containers())
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
