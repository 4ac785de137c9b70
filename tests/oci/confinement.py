#!/usr/bin/env python3
"""A config's own confinement under abox's, as TAP (this test is the
shim, tests/oci/shim.py): linux.seccomp is loaded with abox's strict
loader and runs over abox's policy in the container's process and in
every exec (the kernel runs both filters and the stricter answer wins,
so a profile can take away and never give back); a profile abox cannot
load fails the create, naming it, with nothing left behind. linux.sysctl
sets the container's own namespaces' settings (and refuses the host
kernel's). hugepageLimits are accepted where the host's pool cannot
exceed them (named in the log where it can), unified files are written in
the container's cgroup v2 folder (abox's own files and ones not there
refused by name). `update`
changes a running container's memory, pids and CPU limits (the shim's
--resources on stdin, or runc's flags).

usage: confinement.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-confine-")

ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
NO_MKDIR = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ARCHES,
            "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}


def with_profile(profile):
    def edit(c):
        c["linux"]["seccomp"] = profile
        c["root"]["readonly"] = False
    return edit


def run(name, args, profile, edit=None):
    """Runs a container to its end: (exit status, its output)."""
    return shim.run_to_end(name, args, edit or with_profile(profile))


try:
    code, out = run("nomkdir", ["/bin/sh", "-c", "exec 2>&1; mkdir /tmp/a; echo mkdir=$?; touch /tmp/b && echo touch=0"],
                    NO_MKDIR)
    check("a profile's ERRNO rule holds in the container's process (mkdir: EPERM), the rest runs",
          code == 0 and "mkdir=1" in out and "Operation not permitted" in out and "touch=0" in out, (code, out))

    # the same profile in an exec into the running container
    b = bundle("execd", ["/bin/sleep", "60"], with_profile(NO_MKDIR))
    r, pid, _ = create("execd", b)
    oci("start", "execd")
    proc = os.path.join(work, "process.json")
    with open(proc, "w") as f:
        json.dump({"args": ["/bin/sh", "-c", "exec 2>&1; mkdir /tmp/x; echo mkdir=$?; touch /tmp/y && echo touch=0"],
                   "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}, f)
    e = oci("exec", "--process", proc, "execd")
    check("... and in an exec into the container (runc's exec runs under the container's profile)",
          "mkdir=1" in e.stdout and "touch=0" in e.stdout, e)
    sb = json.load(open(os.path.join(root, "execd", "state.json")))["sandbox"]
    a = subprocess.run([shim.ABOX, "--root", os.path.join(root, "abox=state"), "--runtime-dir",
                        os.path.join(root, "abox=run"), "exec", "-u", "root", "-w", "/", sb, "--", "/bin/sh", "-c",
                        "exec 2>&1; mkdir /tmp/z; echo mkdir=$?"], capture_output=True, text=True, timeout=60)
    check("... and in a command started through abox's own API (abox exec of the container's sandbox)",
          "mkdir=1" in a.stdout, a)
    oci("kill", "execd", "KILL")
    reap(pid)
    oci("delete", "execd")

    # a profile that allows everything takes nothing of abox's policy away
    code, out = run("allowall", ["/bin/sh", "-c", "exec 2>&1; unshare -U true; echo unshare=$?; echo ran"],
                    {"defaultAction": "SCMP_ACT_ALLOW"})
    check("a profile allowing everything leaves abox's policy in force (unshare still refused)",
          code == 0 and "ran" in out and "unshare=0" not in out, (code, out))

    # a default-deny profile with an allow list, as Kubernetes' RuntimeDefault
    # is: installed last, so abox-init's set-up of the process (its user,
    # groups, limits) is not judged by it, only the program is
    allow = ["execve", "brk", "arch_prctl", "mmap", "munmap", "mprotect", "read", "write", "writev", "close",
             "exit", "exit_group", "getuid", "geteuid", "getgid", "getegid", "getpid", "getppid", "fstat",
             "newfstatat", "stat", "lstat", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "ioctl", "getcwd",
             "set_tid_address", "set_robust_list", "rseq", "prlimit64", "uname", "open", "openat", "fcntl",
             "dup2", "dup3", "wait4", "clone", "fork", "vfork", "access", "faccessat", "faccessat2", "poll",
             "getpgrp", "setpgid", "getrandom", "statx", "sysinfo", "readlink", "readlinkat", "lseek"]
    code, out = run("defaultdeny", ["/bin/sh", "-c", "exec 2>&1; echo hello; id -u; mkdir /tmp/z; echo mkdir=$?"],
                    {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "architectures": ARCHES,
                     "syscalls": [{"names": allow, "action": "SCMP_ACT_ALLOW"}]})
    check("a default-deny profile with an allow list: the program runs, what is not listed fails "
          "(ENOSYS, the profile's defaultErrnoRet)", code == 0 and "hello" in out and "mkdir=1" in out
          and "Function not implemented" in out, (code, out))

    # profiles abox cannot load: refused at create, naming the field
    def refused(name, profile, want):
        before = sorted(os.listdir(root)) if os.path.isdir(root) else []
        b = bundle(name, ["/bin/sh", "-c", "true"], with_profile(profile))
        r, _, _ = create(name, b)
        after = sorted(os.listdir(root)) if os.path.isdir(root) else []
        check(f"a profile with {name}: the create fails naming '{want}', nothing left",
              r.returncode != 0 and want in r.stderr and after == before, (r, after, before))

    refused("an-unknown-action", {"defaultAction": "SCMP_ACT_ALLOW",
                                  "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_SOMETIMES"}]},
            "linux.seccomp: syscalls[0].action")
    refused("a-notify-listener", {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/agent.sock"},
            "seccomp user notification is not supported")
    refused("an-unknown-field", {"defaultAction": "SCMP_ACT_ALLOW", "defaultAktion": "SCMP_ACT_KILL"},
            "linux.seccomp: unknown top-level field 'defaultAktion'")
    # linux.sysctl: the container's own namespaces' settings (what
    # containerd 2 gives every pod: unprivileged ports and ping)
    def host(key):
        return open("/proc/sys/" + key.replace(".", "/")).read().strip()
    keys = {"net.ipv4.ip_unprivileged_port_start": "0", "net.ipv4.ping_group_range": "0 2147483647",
            "kernel.shm_rmid_forced": "1", "fs.mqueue.msg_max": "20"}
    was = {k: host(k) for k in keys}
    code, out = run("sysctl", ["/bin/sh", "-c", "cat " + " ".join("/proc/sys/" + k.replace(".", "/") for k in keys)],
                    None, lambda c: c["linux"].update(sysctl=keys))
    check("linux.sysctl: network, ipc and mqueue settings hold in the container", code == 0
          and out.split("\n")[:5] == ["0", "0\t2147483647", "1", "20", ""], (code, out))
    check("... and the host's stay as they were", {k: host(k) for k in keys} == was, was)

    def refused_sysctl(name, kv, want):
        before = sorted(os.listdir(root))
        r, _, _ = create(name, bundle(name, ["/bin/sh", "-c", "true"], lambda c: c["linux"].update(sysctl=kv)))
        check(f"linux.sysctl {kv}: refused at create, naming it, nothing left", r.returncode != 0
              and want in r.stderr and sorted(os.listdir(root)) == before, r)
    refused_sysctl("sysctl-host", {"vm.swappiness": "10"}, "'vm.swappiness' is not the container's own")
    refused_sysctl("sysctl-climb", {"net/../../kernel/pid_max": "100"}, "is not a sysctl name")
    refused_sysctl("sysctl-missing", {"net.ipv4.no_such_knob": "1"}, "net.ipv4.no_such_knob=1: No such file")

    # process.apparmorProfile (containerd names one on every container of
    # an AppArmor host): entered at the process's exec there; on a host
    # without AppArmor (as this kind is) an error, never run unconfined
    try:
        aa_on = open("/sys/module/apparmor/parameters/enabled").read().startswith("Y")
    except OSError:
        aa_on = False
    before = sorted(os.listdir(root))
    code, out = run("apparmor", ["/bin/cat", "/proc/self/attr/current"], None,
                    lambda c: c["process"].update(apparmorProfile="unconfined"))
    if aa_on:
        check("process.apparmorProfile on an AppArmor host: the process runs under it", code == 0
              and out.strip() == "unconfined", (code, out))
    else:
        check("process.apparmorProfile on a host without AppArmor: the create fails saying so, nothing left",
              code is None and "AppArmor is not enabled on this host" in out and sorted(os.listdir(root)) == before,
              (code, out))

    # process.oomScoreAdj: the process's, never init's shield (-1000)
    code, out = run("oom", ["/bin/cat", "/proc/self/oom_score_adj"], None,
                    lambda c: c["process"].update(oomScoreAdj=500))
    check("process.oomScoreAdj: the process gets it", code == 0 and out.strip() == "500", (code, out))

    # capability sets: a process that is not root keeps its ambient set
    # through its exec (the kernel raises one only when inheritable too)
    def capsets(user, inh, amb):
        def edit(c):
            c["process"]["user"] = {"uid": user, "gid": user}
            c["process"]["capabilities"]["inheritable"] = inh
            c["process"]["capabilities"]["ambient"] = amb
        return edit

    def caps_of(out):
        return {ln.split(":")[0]: int(ln.split(":")[1], 16) for ln in out.splitlines() if ln.startswith("Cap")}
    bind, kill = 1 << 10, 1 << 5
    code, out = run("ambient", ["/bin/grep", "^Cap", "/proc/self/status"], None,
                    capsets(1000, ["CAP_NET_BIND_SERVICE", "CAP_KILL"], ["CAP_NET_BIND_SERVICE"]))
    c = caps_of(out)
    check("capabilities.ambient for a process that is not root: it holds exactly its ambient set "
          "(inheritable as asked)", code == 0 and c.get("CapAmb") == bind and c.get("CapEff") == bind
          and c.get("CapPrm") == bind and c.get("CapInh") == bind | kill, (code, out))
    code, out = run("ambient-none", ["/bin/grep", "^Cap", "/proc/self/status"], None, capsets(1000, [], []))
    c = caps_of(out)
    check("... and without one it holds none", code == 0 and c.get("CapEff") == 0 and c.get("CapAmb") == 0,
          (code, out))
    code, out = run("inh-root", ["/bin/grep", "^Cap", "/proc/self/status"], None,
                    capsets(0, ["CAP_KILL"], []))
    c = caps_of(out)
    check("capabilities.inheritable for root: set as asked, its bounding set effective",
          code == 0 and c.get("CapInh") == kill and c.get("CapEff") == c.get("CapBnd") and c.get("CapBnd", 0) & bind,
          (code, out))
    before = sorted(os.listdir(root))
    code, out = run("amb-not-inh", ["/bin/sh", "-c", "true"], None, capsets(1000, [], ["CAP_NET_BIND_SERVICE"]))
    check("an ambient capability that is not inheritable: the create fails naming it, nothing left",
          code is None and "process.capabilities.ambient: CAP_NET_BIND_SERVICE is not in the inheritable" in out
          and sorted(os.listdir(root)) == before, (code, out))
    code, out = run("amb-beyond", ["/bin/sh", "-c", "true"], None,
                    capsets(1000, ["CAP_SYS_ADMIN"], ["CAP_SYS_ADMIN"]))
    check("an ambient capability beyond abox's set: refused by name",
          code is None and "process.capabilities.inheritable: CAP_SYS_ADMIN is beyond" in out, (code, out))

    # what a config asks for and abox does not enforce is said, not dropped
    open(log, "w").close()
    code, out = run("mountlabel", ["/bin/sh", "-c", "true"], None,
                    lambda c: c["linux"].update(mountLabel="system_u:object_r:container_file_t:s0:c1,c2"))
    if os.path.exists("/sys/fs/selinux/enforce"):
        check("linux.mountLabel on an SELinux host: refused by name", code is None
              and "linux.mountLabel: SELinux labels are not supported" in out, (code, out))
    else:
        check("linux.mountLabel on a host without SELinux: the container runs, the log says the label is ignored",
              code == 0 and "linux.mountLabel: SELinux is not enabled on this host" in open(log).read(), (code, out))
    open(log, "w").close()

    def unenforced(c):
        c["linux"]["resources"] = {"cpu": {"shares": 512, "cpus": "0", "mems": "0"},
                                   "memory": {"limit": 64 << 20, "reservation": 32 << 20}}
    code, out = run("unenforced", ["/bin/grep", "Cpus_allowed_list", "/proc/self/status"], None, unenforced)
    warned = [json.loads(ln).get("msg", "") for ln in open(log) if ln.strip()]
    check("cpu.cpus and cpu.mems are enforced (the process runs on CPU 0 alone)",
          code == 0 and out.split() == ["Cpus_allowed_list:", "0"], (code, out))
    check("... a memory reservation, read and not enforced: a warning in the log names it",
          any("linux.resources.memory.reservation" in m for m in warned)
          and not any("cpu.cpus" in m for m in warned), warned)

    # update: new limits for a running container, as the shim asks (a pod
    # resized in place: the resources object on stdin)
    def knob(sandbox, name):
        for base, dirs, files in os.walk("/sys/fs/cgroup"):
            if sandbox in os.path.basename(base) and name in files:
                return open(os.path.join(base, name)).read().strip()
            if base.count("/") > 8:
                dirs[:] = []
        return None

    # huge page limits: a kubelet sends one per page size of the node (0
    # for those the pod does not ask for); held where the host's pool
    # could not exceed them, named in the log where it could
    def pool(kb):
        d = f"/sys/kernel/mm/hugepages/hugepages-{kb}kB"
        return sum(int(open(f"{d}/{f}").read()) for f in ("nr_hugepages", "nr_overcommit_hugepages")) * kb * 1024
    sizes = sorted(int(d.split("-")[1][:-2]) for d in os.listdir("/sys/kernel/mm/hugepages"))
    open(log, "w").close()
    hp = [{"pageSize": f"{kb // 1024}MB" if kb < 1 << 20 else f"{kb >> 20}GB", "limit": 0} for kb in sizes]
    code, out = run("hugepages", ["/bin/sh", "-c", "true"], None,
                    lambda c: c["linux"].setdefault("resources", {}).update(hugepageLimits=hp))
    warned = open(log).read()
    check("linux.resources.hugepageLimits of 0 for each page size of the host: the container runs, a limit the "
          "host's pool could exceed named in the log", code == 0 and all(
              (f"{h['pageSize']} pages read and not enforced" in warned) == (pool(kb) > 0)
              for h, kb in zip(hp, sizes)), (code, out, warned, hp))
    code, out = run("hugebad", ["/bin/sh", "-c", "true"], None, lambda c: c["linux"].setdefault(
        "resources", {}).update(hugepageLimits=[{"pageSize": "3MB", "limit": 0}]))
    check("... a page size the host has not: refused by name", code is None
          and "linux.resources.hugepageLimits[0].pageSize: '3MB' is not a huge page size of this host" in out,
          (code, out))

    # blockIO.weight: io.weight where abox's cgroups have the v2 io
    # controller, else said in the log
    open(log, "w").close()
    b = bundle("blkio", ["/bin/sleep", "60"], lambda c: c["linux"].setdefault("resources", {}).update(
        blockIO={"weight": 500}))
    r, pid, _ = create("blkio", b)
    sb = json.load(open(os.path.join(root, "blkio", "state.json")))["sandbox"] if r.returncode == 0 else "?"
    io = knob(sb, "io.weight")
    check("linux.resources.blockIO.weight: the container's io.weight (500 -> 4950, as runc maps it), or named in "
          "the log as not enforced where abox's cgroups have no v2 io controller",
          r.returncode == 0 and (io == "default 4950" if io is not None else
                                 "blockIO.weight: read and not enforced" in open(log).read()), (r, io))
    oci("delete", "--force", "blkio")
    reap(pid)

    # linux.resources.unified: cgroup v2 files written in the container's
    # cgroup before its process starts
    b = bundle("unified", ["/bin/sleep", "60"], lambda c: c["linux"].setdefault("resources", {}).update(
        unified={"cgroup.max.descendants": "7"}))
    r, pid, _ = create("unified", b)
    sb = json.load(open(os.path.join(root, "unified", "state.json")))["sandbox"] if r.returncode == 0 else "?"
    check("linux.resources.unified: a v2 file (cgroup.max.descendants) written in the container's cgroup",
          r.returncode == 0 and knob(sb, "cgroup.max.descendants") == "7", (r, knob(sb, "cgroup.max.descendants")))
    oci("delete", "--force", "unified")
    reap(pid)
    code, out = run("unified-procs", ["/bin/sh", "-c", "true"], None, lambda c: c["linux"].setdefault(
        "resources", {}).update(unified={"cgroup.procs": "1"}))
    check("... cgroup.procs (abox's to write): refused by name", code is None
          and "linux.resources.unified.cgroup.procs: abox's own to write" in out, (code, out))
    code, out = run("unified-part", ["/bin/sh", "-c", "true"], None, lambda c: c["linux"].setdefault(
        "resources", {}).update(unified={"cpuset.cpus.partition": "isolated"}))
    check("... cpuset.cpus.partition (CPUs taken from the host's other cgroups): refused by name", code is None
          and "linux.resources.unified.cpuset.cpus.partition: would take CPUs" in out, (code, out))
    v1_memory = os.path.isdir("/sys/fs/cgroup/memory")
    b = bundle("unified-mem", ["/bin/sleep", "60"], lambda c: c["linux"].setdefault("resources", {}).update(
        unified={"memory.high": "300M"}))
    r, pid, _ = create("unified-mem", b)
    if v1_memory:
        sbs = os.path.join(root, "abox=state", "sandboxes")
        check("... memory.high where memory is on cgroup v1: refused naming the file and why, nothing left",
              r.returncode != 0 and "linux.resources.unified.memory.high: not a file of the container's cgroup v2 "
              "folder" in r.stderr and not os.path.exists(os.path.join(root, "unified-mem"))
              and not (os.listdir(sbs) if os.path.isdir(sbs) else []), (r, os.listdir(root)))
    else:
        sb = json.load(open(os.path.join(root, "unified-mem", "state.json")))["sandbox"]
        check("... memory.high where memory is on cgroup v2: written", r.returncode == 0
              and knob(sb, "memory.high") == str(300 << 20), (r, knob(sb, "memory.high")))
        oci("delete", "--force", "unified-mem")
        reap(pid)

    # no limits in the config: the node's (memory, CPUs) and 32768 pids,
    # not abox's defaults for agents' sandboxes (512 MiB, one CPU)
    b = bundle("nolimits", ["/bin/sleep", "60"], lambda c: c["linux"].pop("resources", None))
    r, pid, _ = create("nolimits", b)
    sb = json.load(open(os.path.join(root, "nolimits", "state.json")))["sandbox"]
    mem = int(knob(sb, "memory.max") or knob(sb, "memory.limit_in_bytes") or 0)
    quota = knob(sb, "cpu.max") or knob(sb, "cpu.cfs_quota_us") or ""
    node = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    check("a config without limits: the node's memory and CPUs, 32768 pids", r.returncode == 0 and mem >= node
          and knob(sb, "pids.max") == "32768" and quota.split()[0] == str(os.cpu_count() * 100000),
          (r, mem, node, knob(sb, "pids.max"), quota))
    oci("delete", "--force", "nolimits")
    reap(pid)

    def limits(c):
        c["linux"]["resources"] = {"memory": {"limit": 64 << 20}, "pids": {"limit": 50}, "cpu": {"shares": 256}}
    b = bundle("upd", ["/bin/sleep", "60"], limits)
    r, pid, _ = create("upd", b)
    oci("start", "upd")
    sb = json.load(open(os.path.join(root, "upd", "state.json")))["sandbox"]
    mem_knob = "memory.max" if knob(sb, "memory.max") else "memory.limit_in_bytes"
    before = (knob(sb, mem_knob), knob(sb, "pids.max"))
    v2cpu = knob(sb, "cpu.weight") is not None
    weight = knob(sb, "cpu.weight") or knob(sb, "cpu.shares")
    check("linux.resources.cpu.shares: the container's CPU weight (cpu.shares, or cpu.weight on v2)",
          weight == ("10" if v2cpu else "256"), weight)
    res = json.dumps({"pids": {"limit": 6},
                      "cpu": {"quota": 50000, "period": 100000, "shares": 512},
                      "memory": {"limit": 128 << 20, "reservation": 64 << 20}})
    open(log, "w").close()
    with tempfile.TemporaryFile("w+") as f:
        f.write(res)
        f.seek(0)
        u = subprocess.run([shim.ABOX, "oci", "--root", root, "--log", log, "--log-format", "json", "update",
                            "--resources", "-", "upd"], stdin=f, capture_output=True, text=True, timeout=30)
    after = (knob(sb, mem_knob), knob(sb, "pids.max"))
    weight = knob(sb, "cpu.weight") or knob(sb, "cpu.shares")
    # the sandbox's own bound is the commands' limit plus init's headroom
    check("update --resources -: the memory and pids limits and the CPU weight change in the container's cgroups",
          u.returncode == 0 and int(after[0]) - int(before[0]) == 64 << 20 and after[1] == "6"
          and weight == ("20" if v2cpu else "512"), (u, before, after, weight))
    warned = [json.loads(ln) for ln in open(log) if ln.strip()]
    check("... and what abox does not enforce (memory.reservation) is named in the log as a warning",
          any(e.get("level") == "warning" and "memory.reservation" in e.get("msg", "") for e in warned), warned)
    e = oci("exec", "upd", "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait; echo done")
    check("... in force: the 6-process limit stops a shell's eighth child", "can't fork" in e.stderr
          or "Resource temporarily unavailable" in e.stderr, e)
    u = oci("update", "--memory", "96m", "--pids-limit", "40", "upd")
    check("update --memory 96m --pids-limit 40 (runc's flags)", u.returncode == 0
          and int(knob(sb, mem_knob)) - int(after[0]) == -(32 << 20) and knob(sb, "pids.max") == "40",
          (u, knob(sb, mem_knob), knob(sb, "pids.max")))
    u = oci("update", "--memory", "-1", "--pids-limit", "-1", "upd")
    node = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    check("update to unlimited (-1): the node's memory, 32768 pids", u.returncode == 0
          and int(knob(sb, mem_knob)) >= node and knob(sb, "pids.max") == "32768", (u, knob(sb, mem_knob)))
    oci("kill", "upd", "KILL")
    reap(pid)
    u = oci("update", "--pids-limit", "10", "upd")
    check("update of a stopped container: 'container not running'", u.returncode != 0
          and "container not running" in u.stderr, u)
    oci("delete", "upd")
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
