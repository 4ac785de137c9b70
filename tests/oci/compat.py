#!/usr/bin/env python3
"""A container run as a container engine's default asks (the annotation
abox.confinement=compat, or ABOX_OCI_CONFINEMENT=compat for a node), as
TAP (this test is the shim, tests/oci/shim.py): noNewPrivileges false is
honoured (a setuid file works for a user that is not root; an exec that
asks for no_new_privs gets it), containerd's default capabilities are
granted (CAP_NET_RAW, CAP_MKNOD, CAP_AUDIT_WRITE beyond abox's set) and
nothing beyond them; a device node the container makes with CAP_MKNOD
opens nothing, anywhere it can write, while abox's own nodes and the
config's work; a seccomp profile holds without no_new_privs, and no
process gets CAP_SYS_ADMIN for it. Without the annotation such a config
is refused naming the field; a misspelt annotation or node setting is an
error.

usage: compat.py BUILD_DIR"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-compat-")

# containerd's default capability set (what its CRI plugin and `ctr` give)
ENGINE_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
               "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
               "CAP_KILL", "CAP_AUDIT_WRITE"]
NET_RAW, MKNOD, AUDIT_WRITE, SYS_ADMIN = 13, 27, 29, 21


def engine_default(annotation="compat", user=0, caps=ENGINE_CAPS, nnp=False, more=None):
    def edit(c):
        c["process"]["noNewPrivileges"] = nnp
        c["process"]["user"] = {"uid": user, "gid": user}
        for k in ("bounding", "effective", "permitted"):
            c["process"]["capabilities"][k] = list(caps)
        c["root"]["readonly"] = False
        if annotation:
            c.setdefault("annotations", {})["abox.confinement"] = annotation
        if more:
            more(c)
    return edit


def status(out):
    return {ln.split(":")[0]: ln.split(":", 1)[1].strip() for ln in out.splitlines() if ":" in ln}




def containers():
    """The containers on record (abox's own folders beside them left out)."""
    return sorted(c for c in os.listdir(root) if "=" not in c) if os.path.isdir(root) else []


try:
    before = containers()
    code, out = shim.run_to_end("strict", ["/bin/true"], engine_default(annotation=None))
    check("without the annotation, noNewPrivileges false is refused naming the field and the annotation",
          code is None and "process.noNewPrivileges: false" in out and "abox.confinement=compat" in out
          and containers() == before, (code, out))
    code, out = shim.run_to_end("strict-caps", ["/bin/true"], engine_default(annotation=None, nnp=True))
    check("... and a capability beyond abox's set too (CAP_MKNOD)",
          code is None and "is beyond what abox grants a sandbox" in out and "=compat grants" in out, (code, out))

    code, out = shim.run_to_end("compat", ["/bin/grep", "-E", "^(NoNewPrivs|Cap)", "/proc/self/status"],
                                engine_default())
    st = status(out)
    bnd = int(st.get("CapBnd", "0"), 16)
    check("compat: the process runs without no_new_privs",
          code == 0 and st.get("NoNewPrivs") == "0", (code, out))
    check("... with containerd's default capabilities, CAP_NET_RAW, CAP_MKNOD and CAP_AUDIT_WRITE included, "
          "effective", bnd & (1 << NET_RAW) and bnd & (1 << MKNOD) and bnd & (1 << AUDIT_WRITE)
          and not bnd & (1 << SYS_ADMIN) and int(st.get("CapEff", "0"), 16) == bnd, st)

    code, out = shim.run_to_end("compat-admin", ["/bin/true"], engine_default(caps=ENGINE_CAPS + ["CAP_SYS_ADMIN"]))
    check("compat grants nothing beyond the engine's default set: CAP_SYS_ADMIN refused by name",
          code is None and "CAP_SYS_ADMIN is beyond a container engine's default set" in out, (code, out))

    code, out = shim.run_to_end("bad-annotation", ["/bin/true"], engine_default(annotation="loose"))
    check("a misspelt annotation value is an error naming it",
          code is None and "abox.confinement: 'loose' is neither abox nor compat" in out, (code, out))
    os.environ["ABOX_OCI_CONFINEMENT"] = "compta"
    code, out = shim.run_to_end("bad-node", ["/bin/true"], engine_default(annotation=None))
    check("... and so is a misspelt node setting (ABOX_OCI_CONFINEMENT)",
          code is None and "ABOX_OCI_CONFINEMENT=compta: neither abox nor compat" in out
          and containers() == before, (code, out))
    os.environ["ABOX_OCI_CONFINEMENT"] = "compat"
    code, out = shim.run_to_end("node", ["/bin/grep", "^NoNewPrivs", "/proc/self/status"],
                                engine_default(annotation=None))
    check("ABOX_OCI_CONFINEMENT=compat gives every container of the node the same",
          code == 0 and status(out).get("NoNewPrivs") == "0", (code, out))
    code, out = shim.run_to_end("node-abox", ["/bin/grep", "-E", "^(NoNewPrivs|CapBnd)", "/proc/self/status"],
                                engine_default(annotation="abox"))
    st = status(out)
    check("... and a container's own abox.confinement=abox wins over it (no_new_privs, abox's set)",
          code == 0 and st.get("NoNewPrivs") == "1" and not int(st.get("CapBnd", "0"), 16) & (1 << MKNOD),
          (code, out))
    del os.environ["ABOX_OCI_CONFINEMENT"]

    # setuid files work for a user that is not root, as under runc
    # (busybox gives up a setuid start itself: a program of the test's,
    # static, that says its ids)
    src = os.path.join(work, "ids.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n#include <unistd.h>\n'
                'int main(void) { printf("Uid:\\t%u\\t%u\\n", getuid(), geteuid()); return 0; }\n')
    subprocess.run(["cc", "-static", "-O", "-o", os.path.join(work, "ids"), src], check=True)

    def suid(name):
        def more(c):
            tool = os.path.join(work, name, "rootfs", "bin", "ids")
            shutil.copy(os.path.join(work, "ids"), tool)
            os.chmod(tool, 0o4755)
        return more
    code, out = shim.run_to_end("suid", ["/bin/ids"], engine_default(user=1000, more=suid("suid")))
    uids = status(out).get("Uid", "").split()
    check("compat: a setuid-root file run by uid 1000 runs as root (effective uid 0), as with runc",
          code == 0 and uids[:2] == ["1000", "0"], (code, out))
    code, out = shim.run_to_end("suid-nnp", ["/bin/ids"], engine_default(user=1000, nnp=True, more=suid("suid-nnp")))
    check("... and with noNewPrivileges true it stays uid 1000",
          code == 0 and status(out).get("Uid", "").split()[:2] == ["1000", "1000"], (code, out))

    # an exec asks for no_new_privs or not, each for itself
    b = bundle("execs", ["/bin/sleep", "60"], engine_default())
    r, pid, _ = create("execs", b)
    oci("start", "execs")
    proc = os.path.join(work, "process.json")
    for nnp in (True, False):
        with open(proc, "w") as f:
            json.dump({"args": ["/bin/grep", "^NoNewPrivs", "/proc/self/status"], "cwd": "/", "env": ["PATH=/bin"],
                       "user": {"uid": 0, "gid": 0}, "noNewPrivileges": nnp,
                       "capabilities": {k: ENGINE_CAPS for k in ("bounding", "effective", "permitted")}}, f)
        e = oci("exec", "--process", proc, "execs")
        check(f"an exec with noNewPrivileges {str(nnp).lower()} gets it as asked",
              e.returncode == 0 and status(e.stdout).get("NoNewPrivs") == ("1" if nnp else "0"), e)

    # CAP_MKNOD: nodes can be made, none opens; abox's own still work
    disk = os.stat("/").st_dev
    mk = (f"exec 2>&1; for p in /dev/hostdisk /tmp/hostdisk /dev/shm/hostdisk; do "
          f"mknod $p b {os.major(disk)} {os.minor(disk)} && echo made=$p; "
          f"head -c 16 $p >/dev/null && echo OPENED=$p; done; "
          f"mknod /dev/mem2 c 1 1 && echo made=mem; head -c 1 /dev/mem2 >/dev/null && echo OPENED=mem; "
          f"head -c 5 /dev/zero | wc -c; echo x > /dev/null && echo null=ok; head -c 4 /dev/urandom | wc -c")
    e = oci("exec", "execs", "/bin/sh", "-c", mk)
    check("with CAP_MKNOD a node of the host's disk or memory can be made in /dev and in the root, and none "
          "opens (every mount the container writes is nodev)",
          "made=/dev/hostdisk" in e.stdout and "made=/tmp/hostdisk" in e.stdout and "made=mem" in e.stdout
          and "OPENED" not in e.stdout, e)
    check("... while abox's own nodes still work (zero, null, urandom)",
          e.stdout.count("5\n") == 1 and "null=ok" in e.stdout and "4\n" in e.stdout, e)
    m = oci("exec", "execs", "/bin/sh", "-c", "grep ' /dev ' /proc/self/mountinfo")
    check("... /dev itself is mounted nodev", " /dev " in m.stdout and "nodev" in m.stdout.split(" /dev ")[1]
          .split()[0], m)
    oci("kill", "execs", "KILL")
    reap(pid)
    oci("delete", "execs")

    # a seccomp profile without no_new_privs (Kubernetes' RuntimeDefault
    # with allowPrivilegeEscalation left true): installed from init's
    # child with CAP_SYS_ADMIN, which init holds in its permitted set
    # alone and no process of the container gets
    ARCHES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    no_mkdir = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ARCHES,
                "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}

    def profile(c):
        c["linux"]["seccomp"] = no_mkdir
    look = ("exec 2>&1; mkdir /tmp/d; echo mkdir=$?; grep -E '^(NoNewPrivs|Cap(Inh|Prm|Eff|Bnd|Amb))' "
            "/proc/self/status; grep -E '^Cap(Inh|Eff|Bnd)' /proc/1/status | sed 's/^/init/'; "
            "head -c 1 /proc/1/environ >/dev/null && echo INIT-READ; true")
    for user in (0, 1000):
        code, out = shim.run_to_end(f"prof{user}", ["/bin/sh", "-c", look], engine_default(user=user, more=profile))
        st = status(out)
        mine = [int(st.get(k, "0"), 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")]
        init = [int(st.get(k, "0"), 16) for k in ("initCapInh", "initCapEff", "initCapBnd")]
        check(f"compat with a seccomp profile, uid {user}: the profile holds (mkdir: EPERM) without no_new_privs",
              code == 0 and "mkdir=1" in out and st.get("NoNewPrivs") == "0", (code, out))
        check("... and CAP_SYS_ADMIN is in none of the process's sets, nor effective, inheritable or bounding in "
              "its init, whose memory the process cannot reach", "INIT-READ" not in out and "CapBnd" in st and "initCapBnd" in st and not any(m & (1 << SYS_ADMIN) for m in mine + init),
              st)
    b = bundle("profexec", ["/bin/sleep", "60"], engine_default(more=profile))
    r, pid, _ = create("profexec", b)
    oci("start", "profexec")
    e = oci("exec", "profexec", "/bin/sh", "-c", "exec 2>&1; mkdir /tmp/e; echo mkdir=$?; "
            "grep ^NoNewPrivs /proc/self/status")
    check("... and in an exec into it", "mkdir=1" in e.stdout and status(e.stdout).get("NoNewPrivs") == "0", e)
    oci("kill", "profexec", "KILL")
    reap(pid)
    oci("delete", "profexec")
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
