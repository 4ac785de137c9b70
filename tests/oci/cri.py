#!/usr/bin/env python3
"""abox as a Kubernetes RuntimeClass, driven as the kubelet drives
containerd, as TAP: a CRI client generated at test time from the CRI API
(Debian's source of kubernetes/cri-api, fetched with a private apt
configuration; Debian's python3-grpcio and python3-grpc-tools) talks to
Debian's containerd, started by the test with its CRI plugin, a runtime
handler `abox` (its runc shim with abox as the runtime binary) and the
bridge CNI plugin of containernetworking-plugins (tests/oci/crienv.py).
RunPodSandbox with runtime_handler abox (a pause image built by the
test), CreateContainer, StartContainer, ExecSync, ContainerStats,
UpdateContainerResources, ListContainers, the container's log, StopContainer, RemoveContainer,
StopPodSandbox, RemovePodSandbox. Everything runs in mount and network
namespaces of the test's own (a fresh /run, the CNI bridge and the pod's
network there, 203.0.113.0/24): no packet leaves, nothing outlives the
test; it checks that nothing of abox's is left before it stops
containerd.

usage: cri.py BUILD_DIR"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
sys.path.insert(0, HERE)
import crienv  # noqa: E402

crienv.enter("ABOX_CRI_INNER")
from harness import broke, check, finish  # noqa: E402

env = crienv.Env(tempfile.mkdtemp(prefix="abox-cri-"), os.path.abspath(sys.argv[1]))
pb = None


def sandboxes():
    p = os.path.join(env.aroot, "k8s.io", "abox=state", "sandboxes")
    return sorted(os.listdir(p)) if os.path.isdir(p) else []


try:
    ri, rp = env.start()
    check("containerd with its CRI plugin (the test's root, state, socket, CNI config) takes the test's images",
          ri.returncode == 0 and rp.returncode == 0, (ri, rp, open(env.log).read()[-2000:]))
    pb, rt, ch = env.client()
    v = rt.Version(pb.VersionRequest(), timeout=30)
    check("the CRI client generated from the CRI API reaches containerd's CRI socket",
          v.runtime_name == "containerd", v)

    pod_cgroup = env.cgroup_parent + "/pod-abox"
    pod_cfg, ns = crienv.pod_config(pb, "abox-pod", os.path.join(env.work, "logs"), {"abox.confinement": "abox"},
                                    pod_cgroup)
    pod_id = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler="abox"),
                              timeout=120).pod_sandbox_id
    st = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id), timeout=30).status
    check("RunPodSandbox with runtime_handler abox: READY, an address from the bridge CNI plugin (203.0.113.0/24), "
          "its sandbox an abox sandbox", st.state == pb.SANDBOX_READY and st.network.ip.startswith("203.0.113.")
          and len(sandboxes()) == 1, (st, sandboxes()))
    pod_sbs = sandboxes()

    c_cfg = crienv.container_config(pb, ns, "main", ["-c", "echo started; exec sleep 600"])
    ctr_id = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=c_cfg,
                                                          sandbox_config=pod_cfg), timeout=120).container_id
    rt.StartContainer(pb.StartContainerRequest(container_id=ctr_id), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=ctr_id), timeout=30).status
    check("CreateContainer and StartContainer: RUNNING, in an abox sandbox of its own",
          cs.state == pb.CONTAINER_RUNNING and len(sandboxes()) == 2, (cs, sandboxes()))
    ctr_sb = [x for x in sandboxes() if x not in pod_sbs]
    mine = open(f"/proc/{cs.pid}/cgroup").read() if hasattr(cs, "pid") and cs.pid else ""
    if not mine:
        procs = [d for d, _, f in os.walk("/sys/fs/cgroup") if ctr_sb and ctr_sb[0] in d and "cgroup.procs" in f]
        mine = "\n".join(procs)
    check("... its cgroups below the pod's cgroup parent (the config's cgroupsPath), as the kubelet's pod "
          "cgroups expect", f"{pod_cgroup}/{ctr_id}/abox-" in mine, mine)

    r = rt.ExecSync(pb.ExecSyncRequest(container_id=ctr_id, cmd=[
        "/bin/sh", "-c", "cat /proc/1/comm; hostname; ip -4 addr show eth0 | grep -o '203.0.113.[0-9]*'; exit 3"],
        timeout=30), timeout=60)
    out = r.stdout.decode().split()
    check("ExecSync: the output and exit code (3) of a command in the container: abox-init is its PID 1, the "
          "pod's hostname and network address (the first of the addresses the grep finds; the broadcast follows)",
          r.exit_code == 3 and out[:3] == ["abox-init", "abox-pod", st.network.ip], (r, out))

    s = rt.ContainerStats(pb.ContainerStatsRequest(container_id=ctr_id), timeout=30).stats
    check("ContainerStats: the container's own numbers", s.attributes.id == ctr_id, s)

    # a pod resized in place: containerd's shim runs `update --resources -`
    ctr_sb = [x for x in sandboxes() if x not in pod_sbs]
    rt.UpdateContainerResources(pb.UpdateContainerResourcesRequest(
        container_id=ctr_id, linux=pb.LinuxContainerResources(memory_limit_in_bytes=96 << 20, cpu_period=100000,
                                                              cpu_quota=50000)), timeout=60)
    got = {}
    for base, dirs, files in os.walk("/sys/fs/cgroup"):
        if ctr_sb and ctr_sb[0] in os.path.basename(base):
            for k in ("memory.max", "memory.limit_in_bytes", "cpu.max", "cpu.cfs_quota_us"):
                if k in files and k not in got:
                    got[k] = open(os.path.join(base, k)).read().split()[0]
        if base.count("/") > 8:
            dirs[:] = []
    mem = int(got.get("memory.max", got.get("memory.limit_in_bytes", "0")))
    cpu = got.get("cpu.max", got.get("cpu.cfs_quota_us"))
    check("UpdateContainerResources: the container's sandbox gets the new memory limit (plus init's headroom) "
          "and CPU quota", mem - (96 << 20) in (0, 64 << 20) and cpu == "50000", got)
    lc = rt.ListContainers(pb.ListContainersRequest(), timeout=30).containers
    check("ListContainers: the container, RUNNING", [(c.id, c.state) for c in lc] ==
          [(ctr_id, pb.CONTAINER_RUNNING)], lc)
    logf = os.path.join(env.work, "logs", "main.log")
    text = open(logf).read() if os.path.exists(logf) else ""
    check("the container's stdout in its CRI log (what kubectl logs reads)", " stdout F started" in text, text)

    rt.StopContainer(pb.StopContainerRequest(container_id=ctr_id, timeout=5), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=ctr_id), timeout=30).status
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=ctr_id), timeout=60)
    check("StopContainer (SIGTERM to sleep: 143) and RemoveContainer", cs.state == pb.CONTAINER_EXITED
          and cs.exit_code == 143 and len(sandboxes()) == 1, (cs, sandboxes()))
    # a container that shares its pod's pid namespace (what the kubelet
    # asks for a pod with shareProcessNamespace): it joins the pause
    # container's, whose sleep is its PID 2
    shared = pb.NamespaceOption(network=pb.POD, pid=pb.POD, ipc=pb.POD)
    side_cfg = crienv.container_config(pb, shared, "sidecar", ["-c", "exec sleep 600"])
    side_id = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=side_cfg,
                                                           sandbox_config=pod_cfg), timeout=120).container_id
    rt.StartContainer(pb.StartContainerRequest(container_id=side_id), timeout=60)
    r = rt.ExecSync(pb.ExecSyncRequest(container_id=side_id, cmd=[
        "/bin/sh", "-c", "cat /proc/1/comm /proc/2/cmdline"], timeout=30), timeout=60)
    out = r.stdout.decode().replace("\0", " ").split()
    check("a container with the pod's pid namespace (shareProcessNamespace): the pause container's abox-init "
          "is its PID 1 and the pause's sleep its PID 2", r.exit_code == 0
          and out == ["abox-init", "/bin/sleep", "2147483647"], (r, out))
    rt.StopContainer(pb.StopContainerRequest(container_id=side_id, timeout=5), timeout=60)
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=side_id), timeout=60)
    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    pods = rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items
    check("StopPodSandbox and RemovePodSandbox: no pods, no abox sandboxes, no container folders left",
          list(pods) == [] and sandboxes() == []
          and [e for e in os.listdir(os.path.join(env.aroot, "k8s.io")) if "=" not in e] == [],
          (pods, sandboxes(), os.listdir(os.path.join(env.aroot, "k8s.io"))))
    ch.close()
except Exception:
    broke()
    try:
        print(open(env.log).read()[-3000:], file=sys.stderr)
    except (OSError, AttributeError):
        pass
finally:
    env.stop()
finish()
