#!/usr/bin/env python3
"""linux.cgroupsPath honoured, as TAP (this test is the shim,
tests/oci/shim.py): the container's sandbox gets its cgroups below the
path in every hierarchy abox uses, as the kubelet's pod cgroups expect,
its limits on the path's own folder too (where runc has them)
(a relative path below the runtime's own cgroup, an absolute one from
each hierarchy's root, systemd's slice:prefix:name with
--systemd-cgroup); every verb finds them there; delete removes the
container's folder and leaves the pod's; paths that climb are refused.

usage: cgroups.py BUILD_DIR"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-cgroups-")
POD = f"abox-oci-test-{os.getpid()}"
made = []  # the pods' folders (the kubelet's part), removed at the end


def dirs_named(name):
    """every cgroup folder whose path has name in it"""
    found = []
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(base, d) for d in dirs if name in os.path.join(base, d)]
        if base.count("/") > 9:
            dirs[:] = []
    return found


def own_cgroups(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return [ln.strip().split(":", 2)[2] for ln in f if ln.strip()]


def container(cid, path, extra=()):
    def edit(c):
        c["linux"]["cgroupsPath"] = path
        c["linux"]["resources"] = {"memory": {"limit": 64 << 20}, "pids": {"limit": 40},
                                   "cpu": {"quota": 50000, "period": 100000}}
    b = bundle(cid, ["/bin/sleep", "60"], edit)
    pidfile = os.path.join(work, cid + ".pid")
    r = shim.oci(*extra, "create", "--bundle", b, "--pid-file", pidfile, cid)
    return r, int(open(pidfile).read()) if r.returncode == 0 else 0


try:
    # relative: below the runtime's own cgroup in each hierarchy
    r, pid = container("rel", f"{POD}/pod1/ctr1")
    made += [d for d in dirs_named(POD) if d.endswith(POD)]
    groups = own_cgroups(pid) if pid else []
    sb = json.load(open(os.path.join(root, "rel", "state.json")))["sandbox"] if pid else ""
    check("a relative cgroupsPath: the container's init is below it, in its own abox cgroup, in the "
          "hierarchies abox uses", r.returncode == 0 and any(f"/{POD}/pod1/ctr1/abox-{sb}" in g for g in groups),
          (r, groups))
    mem = [d for d in dirs_named(f"{POD}/pod1/ctr1/abox-{sb}") if "memory" in d and d.endswith("/cmds")]
    lim = open(os.path.join(mem[0], "memory.limit_in_bytes")).read().strip() if mem else None
    pids = [d for d in dirs_named(f"{POD}/pod1/ctr1/abox-{sb}") if "/pids/" in d]
    check("... with the config's limits there (memory, pids)", lim == str(64 << 20) and pids
          and open(os.path.join(pids[0], "pids.max")).read().strip() == "40", (lim, pids))
    # and on the path's own folder, where runc has them and a container
    # engine (the kubelet's cAdvisor) reads them
    ctr_pids = [d for d in dirs_named(f"{POD}/pod1/ctr1") if "/pids/" in d and d.endswith("/ctr1")]
    ctr_mem = [d for d in dirs_named(f"{POD}/pod1/ctr1") if "/memory/" in d and d.endswith("/ctr1")]
    ctr_v2 = [d for d in dirs_named(f"{POD}/pod1/ctr1") if d.endswith("/ctr1") and os.path.exists(d + "/pids.max")]
    pfile = (ctr_pids or ctr_v2 or [""])[0] + "/pids.max"
    mfile = ctr_mem[0] + "/memory.limit_in_bytes" if ctr_mem else (ctr_v2 or [""])[0] + "/memory.max"
    check("... and on the cgroupsPath's own folder (pids; memory with abox-init's 64 MiB headroom)",
          os.path.exists(pfile) and open(pfile).read().strip() == "40" and os.path.exists(mfile)
          and open(mfile).read().strip() == str((64 << 20) + (64 << 20)), (pfile, mfile))
    s = oci("start", "rel")
    p = oci("pause", "rel")
    st = shim.state("rel").get("status")
    oci("resume", "rel")
    u = oci("update", "--pids-limit", "33", "rel")
    # a raised CPU quota: the path's folder first (cgroup v1 refuses a
    # child's quota above its parent's)
    up = oci("update", "--cpu-quota", "150000", "rel")

    def quota(folder):
        for f, conv in (("cpu.cfs_quota_us", lambda t: t), ("cpu.max", lambda t: t.split()[0])):
            if os.path.exists(os.path.join(folder, f)):
                return conv(open(os.path.join(folder, f)).read().strip())
        return None
    ctr_cpu = [d for d in dirs_named(f"{POD}/pod1/ctr1") if d.endswith("/ctr1") and quota(d)]
    box_cpu = [d for d in dirs_named(f"{POD}/pod1/ctr1/abox-{sb}") if d.endswith(f"abox-{sb}") and quota(d)]
    check("update raising the CPU quota: both the path's folder and abox's take it",
          up.returncode == 0 and ctr_cpu and box_cpu and quota(ctr_cpu[0]) == "150000"
          and quota(box_cpu[0]) == "150000", (up, ctr_cpu, box_cpu))
    check("start, pause, update find the container's cgroups there (update changes the path's folder too)",
          s.returncode == 0 and p.returncode == 0 and st == "paused" and u.returncode == 0
          and open(os.path.join(pids[0], "pids.max")).read().strip() == "33"
          and open(pfile).read().strip() == "33", (s, p, st, u))
    oci("kill", "rel", "KILL")
    reap(pid)
    d = oci("delete", "rel")
    left = dirs_named(f"{POD}/pod1/ctr1")
    pod_left = [x for x in dirs_named(f"{POD}/pod1") if x.endswith("/pod1")]
    check("delete removes the container's folder (and its sandbox's) everywhere, the pod's stays (the kubelet's)",
          d.returncode == 0 and not left and pod_left, (d, left, pod_left))

    # cpusets (v1: a hierarchy of its own, beside the others) and an
    # exact CFS period, as runc writes them
    def cpuset(cpus, period=500000, quota=200000):
        def edit(c):
            c["linux"]["cgroupsPath"] = f"{POD}/pod3/ctr3"
            c["linux"]["resources"] = {"cpu": {"cpus": cpus, "mems": "0", "quota": quota, "period": period}}
        return edit
    b = bundle("cpus", ["/bin/sleep", "60"], cpuset("0"))
    r, pid, _ = create("cpus", b)
    oci("start", "cpus")
    sb = json.load(open(os.path.join(root, "cpus", "state.json")))["sandbox"] if pid else ""
    allowed = [ln.split()[1] for ln in open(f"/proc/{pid}/status") if ln.startswith("Cpus_allowed_list")] if pid else []
    kids = [p for p in open(f"/proc/{pid}/task/{pid}/children").read().split()] if pid else []
    kid_allowed = [ln.split()[1] for ln in open(f"/proc/{kids[0]}/status")
                   if ln.startswith("Cpus_allowed_list")] if kids else []
    check("linux.resources.cpu.cpus: the container's init and process run on those CPUs alone",
          r.returncode == 0 and allowed == ["0"] and kid_allowed == ["0"], (r, allowed, kid_allowed))
    sets = [d for d in dirs_named(f"{POD}/pod3/ctr3") if os.path.exists(os.path.join(d, "cpuset.cpus"))]
    check("... set on the cgroupsPath's folder and abox's below it (cpuset.cpus, cpuset.mems)",
          len(sets) >= 2 and all(open(os.path.join(d, "cpuset.cpus")).read().strip() == "0"
                                 and open(os.path.join(d, "cpuset.mems")).read().strip() == "0" for d in sets), sets)
    box = [d for d in dirs_named(f"{POD}/pod3/ctr3/abox-{sb}") if d.endswith(f"abox-{sb}") and quota(d)]

    def period(folder):
        if os.path.exists(os.path.join(folder, "cpu.cfs_period_us")):
            return open(os.path.join(folder, "cpu.cfs_period_us")).read().strip()
        return open(os.path.join(folder, "cpu.max")).read().split()[1]
    check("... and the CPU quota and period exactly as given (200000 over 500000)",
          box and quota(box[0]) == "200000" and period(box[0]) == "500000", box)
    up = oci("update", "--cpu-period", "500000", "--cpu-quota", "100000", "cpus")
    check("update of quota and period keeps them exact", up.returncode == 0 and box and quota(box[0]) == "100000"
          and period(box[0]) == "500000", (up, box and quota(box[0])))
    # a kubelet's static CPU manager moves a container between CPUs:
    # a change that is neither a shrink nor a growth (0 to 1), a growth
    def on_cpus(want):
        got = [ln.split()[1] for ln in open(f"/proc/{pid}/status") if ln.startswith("Cpus_allowed_list")]
        sets = [open(os.path.join(d, "cpuset.cpus")).read().strip() for d in dirs_named(f"{POD}/pod3/ctr3")
                if os.path.exists(os.path.join(d, "cpuset.cpus"))]
        return got == [want] and sets and all(x == want for x in sets), (got, sets)
    if os.cpu_count() >= 2:
        up = oci("update", "--cpuset-cpus", "1", "cpus")
        ok, why = on_cpus("1")
        check("update --cpuset-cpus moves the container to other CPUs (0 to 1), on both folders", up.returncode == 0
              and ok, (up, why))
        up = oci("update", "--resources", "-", "cpus", stdin_text=json.dumps({"cpu": {"cpus": "0-1"}}))
        ok, why = on_cpus("0-1")
        check("... and grows them (update --resources with cpu.cpus 0-1)", up.returncode == 0 and ok, (up, why))
    up = oci("update", "--cpu-quota", "250000", "cpus")
    ctr = [d for d in dirs_named(f"{POD}/pod3/ctr3") if d.endswith("/ctr3") and quota(d)]
    check("... and a quota alone is over the period in force (500000), in abox's folder and the path's",
          up.returncode == 0 and box and ctr and all(quota(d) == "250000" and period(d) == "500000"
                                                     for d in (box[0], ctr[0])), (up, ctr))
    up = oci("update", "--cpu-period", "200000", "cpus")
    check("... a period alone is named in a warning and changes nothing", up.returncode == 0 and box
          and period(box[0]) == "500000" and "cpu period without a quota" in (up.stderr + open(log).read()),
          (up, box and period(box[0])))
    oci("kill", "cpus", "KILL")
    reap(pid)
    d = oci("delete", "cpus")
    check("... and delete removes the container's cpuset folders too", d.returncode == 0
          and not dirs_named(f"{POD}/pod3/ctr3"), dirs_named(f"{POD}/pod3/ctr3"))
    made += [x for x in dirs_named(POD) if x.endswith(POD)]
    # a container made without a cpuset gets one by update
    b = bundle("nocpus", ["/bin/sleep", "60"],
               lambda c: c["linux"].update(cgroupsPath=f"{POD}/pod3/ctr4", resources={"memory": {"limit": 64 << 20}}))
    r, pid, _ = create("nocpus", b)
    oci("start", "nocpus")
    up = oci("update", "--cpuset-cpus", "0", "nocpus")
    got = [ln.split()[1] for ln in open(f"/proc/{pid}/status") if ln.startswith("Cpus_allowed_list")] if pid else []
    check("a container made without a cpuset gets one by update", r.returncode == 0 and up.returncode == 0
          and got == ["0"], (r, up, got))
    oci("kill", "nocpus", "KILL")
    reap(pid)
    d = oci("delete", "nocpus")
    check("... and delete removes its cpuset folders", d.returncode == 0 and not dirs_named(f"{POD}/pod3/ctr4"),
          dirs_named(f"{POD}/pod3/ctr4"))
    b = bundle("badcpus", ["/bin/true"], cpuset("4095"))
    before = sorted(os.listdir(root))
    r, pid, _ = create("badcpus", b)
    check("a CPU list the kernel refuses: create fails naming the field, nothing left",
          r.returncode != 0 and "linux.resources.cpu.cpus" in r.stderr and sorted(os.listdir(root)) == before
          and not dirs_named(f"{POD}/pod3/ctr3"), (r, dirs_named(f"{POD}/pod3/ctr3")))

    # systemd's form, with --systemd-cgroup: absolute, the slice's levels
    r, pid = container("sd", f"{POD}-pod2.slice:cri:ctr2", ("--systemd-cgroup",))
    groups = own_cgroups(pid) if pid else []
    want = f"/{POD.split('-')[0]}.slice/"
    made += [d for d in dirs_named(want.strip("/")) if d.endswith(want.rstrip("/"))]
    check("--systemd-cgroup slice:prefix:name: the unit's path, each dash of the slice a level "
          f"({want}.../{POD}-pod2.slice/cri-ctr2.scope)", r.returncode == 0 and
          any(g.startswith(want) and f"/{POD}-pod2.slice/cri-ctr2.scope/abox-" in g for g in groups), (r, groups))
    oci("delete", "--force", "sd")
    reap(pid)
    check("... and delete removes the scope", not dirs_named("cri-ctr2.scope"), dirs_named("cri-ctr2.scope"))

    # refused: climbing out of the hierarchy, a malformed systemd path
    climb = f"/tmp/abox-oci-climb-{os.getpid()}"
    for cid, path, extra, want in (("climb", "../../.." + climb, (), "is not a cgroup path"),
                                   ("sdbad", "/plain/path", ("--systemd-cgroup",), "is not slice:prefix:name")):
        before = sorted(os.listdir(root))
        r, pid = container(cid, path, extra)
        check(f"cgroupsPath '{path}' {' '.join(extra)}: refused, naming why, nothing left", r.returncode != 0
              and want in r.stderr and sorted(os.listdir(root)) == before and not os.path.exists(climb),
              (r, sorted(os.listdir(root)), before))
except Exception:
    broke()
finally:
    shim.cleanup()
    # the pods' folders, deepest first
    for top in made:
        for base, dirs, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
            try:
                os.rmdir(base)
            except OSError:
                pass
    shutil.rmtree(work, ignore_errors=True)
finish()
