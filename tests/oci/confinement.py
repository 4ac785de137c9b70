#!/usr/bin/env python3
"""A config's own confinement under abox's, as TAP (this test is the
shim, tests/oci/shim.py): linux.seccomp is loaded with abox's strict
loader and runs over abox's policy in the container's process and in
every exec (the kernel runs both filters and the stricter answer wins,
so a profile can take away and never give back); a profile abox cannot
load fails the create, naming it, with nothing left behind.

usage: confinement.py BUILD_DIR"""
import json
import os
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


def run(name, args, profile):
    """Runs a container to its end: (exit status, its output)."""
    b = bundle(name, args, with_profile(profile))
    with tempfile.TemporaryFile("w+") as out:
        r, pid, _ = create(name, b, out)
        if r.returncode != 0:
            return None, r.stderr
        st = oci("start", name)
        code = reap(pid) if st.returncode == 0 else None
        oci("delete", "--force", name)
        out.seek(0)
        return code, out.read() + st.stderr


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
        b = bundle(name, ["/bin/true"], with_profile(profile))
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
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
