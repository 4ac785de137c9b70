"""containerd with its CRI plugin, started for a test or a bench in a
folder of its own (root, state, socket, config, CNI config), with runtime
handlers (abox's and, when asked, runc's and crun's), the test's images
imported, and a CRI client generated from the CRI API (Debian's source of
kubernetes/cri-api). Used by tests/oci/cri.py and bench/cri; the caller
runs in mount and network namespaces of its own (see enter())."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ociimage  # noqa: E402

IMAGE = "docker.io/library/abox-busybox:test"
PAUSE = "docker.io/library/abox-pause:test"
CACHE = os.path.join(os.environ.get("ABOX_TEST_CACHE", "/var/cache/abox-test"), "src")


def enter(flag):
    """Fetches the CRI API's source (Debian's archive is out of reach
    inside), then re-runs the program with Debian's python (its grpcio)
    in a mount namespace with a fresh /run (the shims' sockets, the pods'
    network namespace files) and a network namespace of its own (the CNI
    bridge, the pods' veths). Returns in the inner run."""
    if os.environ.get(flag) == "1":
        return
    r = subprocess.run(["bash", os.path.join(SRC, "scripts", "debian-source.sh"), "golang-github-kubernetes-cri-api",
                        "sid", CACHE], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"1..1\nnot ok 1 - the CRI API's source from Debian\n# {r.stderr.strip()}")
        sys.exit(1)
    env = dict(os.environ, ABOX_CRI_SRC=r.stdout.strip())
    env[flag] = "1"
    os.execvpe("unshare", ["unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
                           'mount -t tmpfs -o mode=0755 abox-test-run /run && ip link set lo up && exec "$@"', "sh",
                           "/usr/bin/python3", os.path.abspath(sys.argv[0])] + sys.argv[1:], env)


class Env:
    def __init__(self, work, build, handlers=("abox",)):
        self.work, self.build = work, build
        self.sock = os.path.join(work, "c.sock")
        self.aroot = os.path.join(work, "abox-root")
        self.proc = None
        self.handlers = handlers
        # the pods' cgroup parent, as the kubelet gives one (cgroupfs
        # driver): removed at the end, with containerd's own "k8s.io"
        # folders when they were not there before
        self.cgroup_parent = f"/abox-cri-{os.getpid()}"
        self.k8s_before = os.path.exists("/sys/fs/cgroup/memory/k8s.io") or \
            os.path.exists("/sys/fs/cgroup/unified/k8s.io") or os.path.exists("/sys/fs/cgroup/k8s.io")

    def ctr(self, *args):
        return subprocess.run(["ctr", "--address", self.sock, "-n", "k8s.io"] + list(args), capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)

    def _runtime(self, name, binary, root, annotations):
        extra = '      pod_annotations = ["abox.confinement"]\n' if annotations else ""
        return (f'    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}]\n'
                f'      runtime_type = "io.containerd.runc.v2"\n{extra}'
                f'      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}.options]\n'
                f'        BinaryName = "{binary}"\n        Root = "{root}"\n')

    def start(self):
        w = self.work
        os.makedirs(os.path.join(w, "bin"))
        os.symlink(os.path.join(self.build, "abox"), os.path.join(w, "bin", "abox-oci"))
        os.makedirs(os.path.join(w, "cni"))
        with open(os.path.join(w, "cni", "10-abox.conflist"), "w") as f:
            json.dump({"cniVersion": "0.4.0", "name": "abox-test", "plugins": [
                {"type": "bridge", "bridge": "aboxcni0", "isGateway": True, "ipMasq": False,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": "203.0.113.0/24"}]],
                          "dataDir": os.path.join(w, "ipam")}}]}, f)
        runtimes = self._runtime("abox", os.path.join(w, "bin", "abox-oci"), self.aroot, True)
        if "runc" in self.handlers:
            runtimes += self._runtime("runc", shutil.which("runc"), os.path.join(w, "runc-root"), False)
        with open(os.path.join(w, "config.toml"), "w") as f:
            f.write(f'''version = 2
root = "{w}/root"
state = "{w}/state"
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE}"
  enable_selinux = false
  # no OOM score below containerd's own: lowering one needs
  # CAP_SYS_RESOURCE, which hosts like this withhold (runc fails on it)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{w}/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "abox"
{runtimes}''')
        self.log = os.path.join(w, "containerd.log")
        self.proc = subprocess.Popen(["containerd", "--config", os.path.join(w, "config.toml")],
                                     stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        for _ in range(300):
            if os.path.exists(self.sock) and self.ctr("version").returncode == 0:
                break
            time.sleep(0.05)
        img, pause = os.path.join(w, "image.tar"), os.path.join(w, "pause.tar")
        ociimage.write(img, IMAGE, ["/bin/sh"])
        ociimage.write(pause, PAUSE, [], entrypoint=["/bin/sleep", "2147483647"])
        return self.ctr("images", "import", img), self.ctr("images", "import", pause)

    def client(self):
        """The CRI API's generated stubs: (api_pb2, RuntimeServiceStub,
        channel)."""
        src = os.environ["ABOX_CRI_SRC"]
        gen = os.path.join(self.work, "gen")
        os.makedirs(gen)
        subprocess.run(["/usr/bin/python3", "-m", "grpc_tools.protoc", "-I/usr/share/gocode/src",
                        "-I" + os.path.join(src, "pkg", "apis", "runtime", "v1"), "--python_out=" + gen,
                        "--grpc_python_out=" + gen, "api.proto", "github.com/gogo/protobuf/gogoproto/gogo.proto"],
                       check=True)
        sys.path.insert(0, gen)
        import grpc
        import api_pb2
        import api_pb2_grpc
        ch = grpc.insecure_channel("unix://" + self.sock)
        return api_pb2, api_pb2_grpc.RuntimeServiceStub(ch), ch

    def stop(self):
        """Whatever a failed step left (through the CRI's own command
        line), containerd, the mounts it made here, the folder."""
        if self.proc and self.proc.poll() is None:
            for c in self.ctr("containers", "ls", "-q").stdout.split():
                self.ctr("task", "kill", "-s", "SIGKILL", c)
                time.sleep(0.2)
                self.ctr("task", "rm", "-f", c)
                self.ctr("containers", "rm", c)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["umount", "-R", self.work], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)
        names = [self.cgroup_parent.strip("/")] + ([] if self.k8s_before else ["k8s.io"])
        for top in [os.path.join(b, n) for b, _, _ in os.walk("/sys/fs/cgroup") for n in names
                    if b.count("/") <= 4 and os.path.isdir(os.path.join(b, n))]:
            for d, _, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
                try:
                    os.rmdir(d)
                except OSError:
                    pass


def pod_config(pb, name, log_dir, annotations=None, cgroup_parent=""):
    """A pod as the kubelet describes one without shareProcessNamespace,
    and its namespace options (for its containers); cgroup_parent: the
    pod's cgroup (the kubelet's), or "" for containerd's default."""
    ns = pb.NamespaceOption(network=pb.POD, pid=pb.CONTAINER, ipc=pb.POD)
    cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default", attempt=0),
        hostname=name, log_directory=log_dir, annotations=annotations or {},
        linux=pb.LinuxPodSandboxConfig(cgroup_parent=cgroup_parent,
                                       security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))
    return cfg, ns


def container_config(pb, ns, name, args):
    return pb.ContainerConfig(metadata=pb.ContainerMetadata(name=name, attempt=0), image=pb.ImageSpec(image=IMAGE),
                              command=["/bin/sh"], args=args, log_path=name + ".log",
                              linux=pb.LinuxContainerConfig(
                                  security_context=pb.LinuxContainerSecurityContext(namespace_options=ns)))
