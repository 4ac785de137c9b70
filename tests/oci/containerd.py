#!/usr/bin/env python3
"""abox under containerd, as TAP: Debian's containerd, started by the test
with its own root, state, socket and config, runs containers through its
runc shim with abox as the runtime binary (`ctr run --runc-binary`, a
program named runc that is abox): an image the test builds and imports,
a container's output and exit status, a detached one with exec, pause,
resume, kill and removal. The test runs in a mount namespace of its own
with a fresh /run (where the shim keeps its sockets and the runtime its
state), so nothing of it outlives it; it checks that nothing of abox's
is left (sandboxes, cgroups, mounts) before it stops containerd.

usage: containerd.py BUILD_DIR"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("ABOX_CTRD_INNER") != "1":
    # a private mount namespace with its own /run: the shim's sockets and
    # the runtime's --root (/run/containerd/runc/NS) live and die there
    env = dict(os.environ, ABOX_CTRD_INNER="1")
    os.execvpe("unshare", ["unshare", "-m", "--propagation", "private", "sh", "-c",
                           'mount -t tmpfs -o mode=0755 abox-test-run /run && exec "$@"', "sh",
                           sys.executable] + sys.argv, env)

sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
sys.path.insert(0, HERE)
from harness import broke, check, finish  # noqa: E402
import ociimage  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="abox-ctrd-")
sock = os.path.join(work, "c.sock")
# containerd's namespace; also the parent of its containers' cgroupsPath
# ("/NS/ID"), a folder abox leaves to the engine (as runc does): the
# test's own, removed at the end
NS = f"abox-test-{os.getpid()}"
IMAGE = "docker.io/library/abox-busybox:test"
runc = os.path.join(work, "bin", "runc")
os.makedirs(os.path.dirname(runc))
os.symlink(os.path.join(BUILD, "abox"), runc)
ctrd = None


def ctr(*args, timeout=60):
    return subprocess.run(["ctr", "--address", sock, "-n", NS] + list(args), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def abox_root():
    return f"/run/containerd/runc/{NS}"


def sandboxes():
    p = os.path.join(abox_root(), "abox=state", "sandboxes")
    return sorted(os.listdir(p)) if os.path.isdir(p) else []


def cgroups_named(ids):
    found = []
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(base, d) for d in dirs if any(i in d for i in ids)]
        if base.count("/") > 9:
            dirs[:] = []
    return found


try:
    with open(os.path.join(work, "config.toml"), "w") as f:
        f.write(f'''version = 2
root = "{work}/root"
state = "{work}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
''')
    log = open(os.path.join(work, "containerd.log"), "w")
    ctrd = subprocess.Popen(["containerd", "--config", os.path.join(work, "config.toml")], stdout=log,
                            stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(sock) and ctr("version").returncode == 0:
            break
        time.sleep(0.05)
    check("containerd (started by the test, its own root, state and socket) answers", ctr("version").returncode == 0,
          open(os.path.join(work, "containerd.log")).read()[-2000:])

    img = os.path.join(work, "image.tar")
    ociimage.write(img, IMAGE, ["/bin/sh"])
    r = ctr("images", "import", img)
    check("ctr images import of an OCI archive the test built", r.returncode == 0 and IMAGE in ctr(
        "images", "ls", "-q").stdout, r)

    r = ctr("run", "--rm", "--runc-binary", runc, IMAGE, "refused", "/bin/true")
    check("ctr run with containerd's default capabilities (CAP_NET_RAW, CAP_MKNOD...): refused, naming the "
          "capability and the annotation that drops it", r.returncode != 0 and "CAP_" in r.stderr
          and "abox.confinement=abox" in r.stderr, r)
    r = ctr("run", "--rm", "--runc-binary", runc, "--annotation", "abox.confinement=abox", IMAGE, "first",
            "/bin/sh", "-c", "echo hello from $(cat /proc/1/comm); hostname; grep CapBnd /proc/self/status; exit 3")
    out = r.stdout.splitlines()
    check("ctr run --runc-binary (abox named runc), annotation abox.confinement=abox: the container's output "
          "and exit status (3); its PID 1 is abox-init; abox's capability set (800405fb); a hostname of its own "
          "(the config names none: never the host's)",
          r.returncode == 3 and len(out) == 3 and out[0] == "hello from abox-init" and out[1] != socket.gethostname()
          and out[2] == "CapBnd:\t00000000800405fb", r)

    r = ctr("run", "-d", "--runc-binary", runc, "--annotation", "abox.confinement=abox", IMAGE, "second",
            "/bin/sleep", "600")
    ls = ctr("task", "ls")
    check("ctr run -d: the task is RUNNING", r.returncode == 0 and any(
        ln.split()[0] == "second" and "RUNNING" in ln for ln in ls.stdout.splitlines()[1:]), (r, ls))
    r = ctr("task", "exec", "--exec-id", "e1", "second", "/bin/sh", "-c", "echo exec works; exit 4")
    check("ctr task exec: the output and exit status of a process exec'd in it", r.returncode == 4
          and r.stdout == "exec works\n", r)
    r1 = ctr("task", "pause", "second")
    st1 = ctr("task", "ls").stdout
    r2 = ctr("task", "resume", "second")
    st2 = ctr("task", "ls").stdout
    check("ctr task pause / resume: PAUSED, then RUNNING", r1.returncode == 0 and r2.returncode == 0
          and "PAUSED" in st1 and "RUNNING" in st2, (r1, st1, r2, st2))
    ids = sandboxes()
    r = ctr("task", "kill", "-s", "SIGKILL", "second")
    for _ in range(100):
        if "STOPPED" in ctr("task", "ls").stdout:
            break
        time.sleep(0.05)
    st = ctr("task", "ls").stdout
    r2 = ctr("task", "rm", "second")
    r3 = ctr("containers", "rm", "second")
    check("ctr task kill -s SIGKILL: STOPPED; task rm and containers rm succeed",
          r.returncode == 0 and "STOPPED" in st and r2.returncode == 0 and r3.returncode == 0, (r, st, r2, r3))
    check("nothing of abox's left: no sandbox records, no cgroups of theirs, no container folders",
          sandboxes() == [] and ids and cgroups_named(ids) == []
          and [e for e in os.listdir(abox_root()) if "=" not in e] == [],
          (sandboxes(), ids, cgroups_named(ids), os.listdir(abox_root())))
    r = ctr("images", "rm", IMAGE)
    check("ctr images rm", r.returncode == 0, r)
except Exception:
    broke()
finally:
    # what a failed step left: the tasks and containers, through containerd
    if ctrd and ctrd.poll() is None:
        for c in ("first", "second"):
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
    # containerd's overlay mounts of its snapshots live in this namespace
    # only; its folders go with the test's
    subprocess.run(["umount", "-R", work], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        if NS in dirs:
            try:
                os.rmdir(os.path.join(base, NS))
            except OSError:
                pass
        if base.count("/") > 5:
            dirs[:] = []
finish()
