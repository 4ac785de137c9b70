#!/usr/bin/env python3
"""abox as a Kubernetes RuntimeClass, driven as the kubelet drives
containerd, as TAP: a CRI client generated at test time from the CRI API
(Debian's source of kubernetes/cri-api, fetched with a private apt
configuration; Debian's python3-grpcio and python3-grpc-tools) talks to
Debian's containerd, started by the test with its CRI plugin, a runtime
handler `abox` (its runc shim with abox as the runtime binary) and the
bridge CNI plugin of containernetworking-plugins. RunPodSandbox with
runtime_handler abox (a pause image built by the test), CreateContainer,
StartContainer, ExecSync, ContainerStats, ListContainers, the container's
log, StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox.
Everything runs in mount and network namespaces of the test's own (a
fresh /run, the CNI bridge and the pod's network there, 203.0.113.0/24):
no packet leaves, nothing outlives the test; it checks that nothing of
abox's is left before it stops containerd.

usage: cri.py BUILD_DIR"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CACHE = os.path.join(os.environ.get("ABOX_TEST_CACHE", "/var/cache/abox-test"), "src")
if os.environ.get("ABOX_CRI_INNER") != "1":
    # the CRI API's source first (Debian's archive is out of reach inside)
    r = subprocess.run(["bash", os.path.join(SRC, "scripts", "debian-source.sh"), "golang-github-kubernetes-cri-api",
                        "sid", CACHE], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"1..1\nnot ok 1 - the CRI API's source from Debian\n# {r.stderr.strip()}")
        sys.exit(1)
    # then Debian's python (its grpcio), in a mount namespace with a fresh
    # /run (the shim's sockets, the pod's network namespace file) and a
    # network namespace of its own (the CNI bridge, the pod's veth)
    env = dict(os.environ, ABOX_CRI_INNER="1", ABOX_CRI_SRC=r.stdout.strip())
    os.execvpe("unshare", ["unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
                           'mount -t tmpfs -o mode=0755 abox-test-run /run && ip link set lo up && exec "$@"', "sh",
                           "/usr/bin/python3", os.path.abspath(sys.argv[0])] + sys.argv[1:], env)

sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
sys.path.insert(0, HERE)
from harness import broke, check, finish  # noqa: E402
import ociimage  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="abox-cri-")
sock = os.path.join(work, "c.sock")
IMAGE = "docker.io/library/abox-busybox:test"
PAUSE = "docker.io/library/abox-pause:test"
aroot = os.path.join(work, "abox-root")
ctrd = None
pod_id = ctr_id = None


def ctr(*args):
    return subprocess.run(["ctr", "--address", sock, "-n", "k8s.io"] + list(args), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def client():
    """The CRI API's generated stubs (from Debian's cri-api source)."""
    src = os.environ["ABOX_CRI_SRC"]
    gen = os.path.join(work, "gen")
    os.makedirs(gen)
    subprocess.run(["/usr/bin/python3", "-m", "grpc_tools.protoc", "-I/usr/share/gocode/src",
                    "-I" + os.path.join(src, "pkg", "apis", "runtime", "v1"), "--python_out=" + gen,
                    "--grpc_python_out=" + gen, "api.proto", "github.com/gogo/protobuf/gogoproto/gogo.proto"],
                   check=True)
    sys.path.insert(0, gen)
    import grpc
    import api_pb2
    import api_pb2_grpc
    ch = grpc.insecure_channel("unix://" + sock)
    return api_pb2, api_pb2_grpc.RuntimeServiceStub(ch), ch


def sandboxes():
    p = os.path.join(aroot, "k8s.io", "abox=state", "sandboxes")
    return sorted(os.listdir(p)) if os.path.isdir(p) else []


try:
    os.makedirs(os.path.join(work, "bin"))
    os.symlink(os.path.join(BUILD, "abox"), os.path.join(work, "bin", "abox-oci"))
    os.makedirs(os.path.join(work, "cni"))
    with open(os.path.join(work, "cni", "10-abox.conflist"), "w") as f:
        json.dump({"cniVersion": "0.4.0", "name": "abox-test", "plugins": [
            {"type": "bridge", "bridge": "aboxcni0", "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": "203.0.113.0/24"}]],
                      "dataDir": os.path.join(work, "ipam")}}]}, f)
    with open(os.path.join(work, "config.toml"), "w") as f:
        f.write(f'''version = 2
root = "{work}/root"
state = "{work}/state"
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE}"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{work}/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "abox"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.abox]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["abox.confinement"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.abox.options]
        BinaryName = "{work}/bin/abox-oci"
        Root = "{aroot}"
''')
    log = open(os.path.join(work, "containerd.log"), "w")
    ctrd = subprocess.Popen(["containerd", "--config", os.path.join(work, "config.toml")], stdout=log,
                            stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists(sock) and ctr("version").returncode == 0:
            break
        time.sleep(0.05)
    img, pause = os.path.join(work, "image.tar"), os.path.join(work, "pause.tar")
    ociimage.write(img, IMAGE, ["/bin/sh"])
    ociimage.write(pause, PAUSE, [], entrypoint=["/bin/sleep", "2147483647"])
    ri, rp = ctr("images", "import", img), ctr("images", "import", pause)
    check("containerd with its CRI plugin (the test's root, state, socket, CNI config) takes the test's images",
          ri.returncode == 0 and rp.returncode == 0, (ri, rp, open(os.path.join(work, "containerd.log")).read()[-2000:]))

    pb, rt, ch = client()
    v = rt.Version(pb.VersionRequest(), timeout=30)
    check("the CRI client generated from the CRI API reaches containerd's CRI socket",
          v.runtime_name == "containerd", v)

    # as the kubelet sets them for a pod without shareProcessNamespace
    ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
    pod_cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="abox-pod", uid="abox-pod-uid", namespace="default", attempt=0),
        hostname="abox-pod", log_directory=os.path.join(work, "logs"),
        annotations={"abox.confinement": "abox"},
        linux=pb.LinuxPodSandboxConfig(security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))
    r = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler="abox"), timeout=120)
    pod_id = r.pod_sandbox_id
    st = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod_id), timeout=30).status
    check("RunPodSandbox with runtime_handler abox: READY, an address from the bridge CNI plugin (203.0.113.0/24), "
          "its sandbox an abox sandbox", st.state == pb.SANDBOX_READY and st.network.ip.startswith("203.0.113.")
          and len(sandboxes()) == 1, (st, sandboxes()))

    c_cfg = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="main", attempt=0),
                               image=pb.ImageSpec(image=IMAGE), command=["/bin/sh"],
                               args=["-c", "echo started; exec sleep 600"], log_path="main.log",
                               linux=pb.LinuxContainerConfig(
                                   security_context=pb.LinuxContainerSecurityContext(namespace_options=ns)))
    r = rt.CreateContainer(pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=c_cfg, sandbox_config=pod_cfg),
                           timeout=120)
    ctr_id = r.container_id
    rt.StartContainer(pb.StartContainerRequest(container_id=ctr_id), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=ctr_id), timeout=30).status
    check("CreateContainer and StartContainer: RUNNING, in an abox sandbox of its own",
          cs.state == pb.CONTAINER_RUNNING and len(sandboxes()) == 2, (cs, sandboxes()))

    r = rt.ExecSync(pb.ExecSyncRequest(container_id=ctr_id, cmd=[
        "/bin/sh", "-c", "cat /proc/1/comm; hostname; ip -4 addr show eth0 | grep -o '203.0.113.[0-9]*'; exit 3"],
        timeout=30), timeout=60)
    out = r.stdout.decode().split()
    check("ExecSync: the output and exit code (3) of a command in the container: abox-init is its PID 1, the "
          "pod's hostname and network address (the first of the addresses the grep finds; the broadcast follows)",
          r.exit_code == 3 and out[:3] == ["abox-init", "abox-pod", st.network.ip],
          (r, out))

    s = rt.ContainerStats(pb.ContainerStatsRequest(container_id=ctr_id), timeout=30).stats
    check("ContainerStats: the container's own numbers", s.attributes.id == ctr_id, s)
    lc = rt.ListContainers(pb.ListContainersRequest(), timeout=30).containers
    check("ListContainers: the container, RUNNING", [(c.id, c.state) for c in lc] ==
          [(ctr_id, pb.CONTAINER_RUNNING)], lc)
    logf = os.path.join(work, "logs", "main.log")
    text = open(logf).read() if os.path.exists(logf) else ""
    check("the container's stdout in its CRI log (what kubectl logs reads)", " stdout F started" in text, text)

    rt.StopContainer(pb.StopContainerRequest(container_id=ctr_id, timeout=5), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=ctr_id), timeout=30).status
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=ctr_id), timeout=60)
    check("StopContainer (SIGTERM to sleep: 143) and RemoveContainer", cs.state == pb.CONTAINER_EXITED
          and cs.exit_code == 143 and len(sandboxes()) == 1, (cs, sandboxes()))
    ctr_id = None
    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), timeout=60)
    pods = rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=30).items
    pod_id = None
    check("StopPodSandbox and RemovePodSandbox: no pods, no abox sandboxes, no container folders left",
          list(pods) == [] and sandboxes() == []
          and [e for e in os.listdir(os.path.join(aroot, "k8s.io")) if "=" not in e] == [],
          (pods, sandboxes(), os.listdir(os.path.join(aroot, "k8s.io"))))
    ch.close()
except Exception:
    broke()
    try:
        print(open(os.path.join(work, "containerd.log")).read()[-3000:], file=sys.stderr)
    except OSError:
        pass
finally:
    if ctrd and ctrd.poll() is None:
        # what a failed step left, through the CRI's own command line
        for c in ctr("containers", "ls", "-q").stdout.split():
            ctr("task", "kill", "-s", "SIGKILL", c)
            time.sleep(0.2)
            ctr("task", "rm", "-f", c)
            ctr("containers", "rm", c)
        ctrd.send_signal(signal.SIGTERM)
        try:
            ctrd.wait(20)
        except subprocess.TimeoutExpired:
            ctrd.kill()
            ctrd.wait()
    subprocess.run(["umount", "-R", work], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
finish()
