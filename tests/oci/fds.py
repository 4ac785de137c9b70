#!/usr/bin/env python3
"""runc's --preserve-fds and --pidfd-socket, as TAP (this test is the
shim, tests/oci/shim.py): `create --preserve-fds N` gives the container's
process the caller's fds 3 .. 3+N-1 as its own, and nothing else of the
caller's or of abox's; a pipe passed that way carries data both ways; a
count whose fds are not all open, or a bad count, fails the create naming
it, with nothing left. `--pidfd-socket` hands over a pidfd of the process
--pid-file names (create's, and a detached exec's).

usage: fds.py BUILD_DIR"""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-fds-")


def create_with(cid, b, fds, n, out):
    """create --preserve-fds n with fds (in order) as the runtime's 3, 4, ..."""
    pidfile = os.path.join(work, cid + ".pid")
    cmd = [shim.ABOX, "oci", "--root", root, "--log", log, "--log-format", "json", "create", "--bundle", b,
           "--pid-file", pidfile, "--preserve-fds", str(n), cid]

    def place():
        # the fds at 3, 4, ... in the child, as go-runc's ExtraFiles
        moved = [os.dup(fd) for fd in fds]
        for i, fd in enumerate(moved):
            os.dup2(fd, 3 + i, inheritable=True)
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=place,
                           close_fds=False, timeout=60)
        err.seek(0)
        return p.returncode, err.read(), int(open(pidfile).read()) if p.returncode == 0 else 0


try:
    # a pipe each way and a file: the process lists its fds, reads one
    # pipe, writes the other and the file
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    data = tempfile.TemporaryFile("w+")
    b = bundle("pass", ["/bin/sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '; read x <&3; "
                        "echo got-$x >&4; echo file >&5"])
    with tempfile.TemporaryFile("w+") as out:
        code, err, pid = create_with("pass", b, [r1, w2, data.fileno()], 3, out)
        check("create --preserve-fds 3: accepted", code == 0, err)
        os.close(w2)
        os.write(w1, b"hello\n")
        os.close(w1)
        st = oci("start", "pass")
        status = reap(pid) if st.returncode == 0 else None
        got = os.read(r2, 100).decode()
        out.seek(0)
        listed = out.read().split()
        data.seek(0)
        check("the process has fds 0-5 (stdio and the three passed) and no other of the runtime's",
              status == 0 and listed[:6] == ["0", "1", "2", "3", "4", "5"] and len(listed) <= 7,
              (status, listed, st))
        check("... they are the caller's: a pipe read, a pipe written, a file written",
              got == "got-hello\n" and data.read() == "file\n", (got,))
    oci("delete", "--force", "pass")
    os.close(r1)
    os.close(r2)

    # fewer open than asked: the create names the missing one
    before = sorted(os.listdir(root))
    r3, w3 = os.pipe()
    b = bundle("short", ["/bin/sh", "-c", "true"])
    with tempfile.TemporaryFile("w+") as out:
        code, err, _ = create_with("short", b, [r3], 3, out)
    check("--preserve-fds 3 with only fd 3 open: refused, naming descriptor 4, nothing left",
          code != 0 and "descriptor 4 is not open" in err and sorted(os.listdir(root)) == before, err)
    for bad in ("-1", "x", "257"):
        r = oci("create", "--bundle", b, "--preserve-fds", bad, "bad")
        check(f"--preserve-fds {bad}: refused by name, nothing left",
              r.returncode != 0 and "--preserve-fds" in r.stderr and sorted(os.listdir(root)) == before, r)
    os.close(r3)
    os.close(w3)

    # --preserve-fds 0, as the shim sends it: the process has stdio only
    b = bundle("zero", ["/bin/sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"])
    with tempfile.TemporaryFile("w+") as out:
        code, err, pid = create_with("zero", b, [], 0, out)
        st = oci("start", "zero")
        status = reap(pid) if st.returncode == 0 else None
        out.seek(0)
        listed = out.read().split()
    check("--preserve-fds 0: the process has stdio alone (and the fd ls reads)",
          code == 0 and status == 0 and listed[:3] == ["0", "1", "2"] and len(listed) <= 4, (err, listed))
    oci("delete", "--force", "zero")

    # --pidfd-socket: one message on the socket, a pidfd as SCM_RIGHTS
    def pidfd_server(name):
        path = os.path.join(work, name + ".sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        srv.settimeout(10)
        return srv, path

    def pid_of(srv):
        c, _ = srv.accept()
        _, fds, _, _ = socket.recv_fds(c, 64, 2)
        c.close()
        pids = [int(ln.split()[1]) for fd in fds for ln in open(f"/proc/self/fdinfo/{fd}") if ln.startswith("Pid:")]
        for fd in fds:
            os.close(fd)
        return pids

    srv, sp = pidfd_server("create")
    b = bundle("pidfd", ["/bin/sleep", "60"])
    r, pid, _ = create("pidfd", b, extra=["--pidfd-socket", sp])
    got = pid_of(srv) if r.returncode == 0 else []
    check("create --pidfd-socket: a pidfd of the container's pid (--pid-file's) arrives on the socket",
          r.returncode == 0 and got == [pid], (r, got, pid))
    esrv, esp = pidfd_server("exec")
    epid = os.path.join(work, "exec.pid")
    e = oci("start", "pidfd")
    e = oci("exec", "--detach", "--pid-file", epid, "--pidfd-socket", esp, "pidfd", "/bin/sleep", "30")
    got = pid_of(esrv) if e.returncode == 0 else []
    check("exec --detach --pidfd-socket: a pidfd of the pid --pid-file names",
          e.returncode == 0 and got == [int(open(epid).read())], (e, got))
    e = oci("exec", "--pidfd-socket", esp, "pidfd", "/bin/true")
    check("exec --pidfd-socket without --detach: refused, saying why",
          e.returncode != 0 and "--pidfd-socket is for --detach" in e.stderr, e)
    notsock = os.path.join(work, "not-a-socket")
    open(notsock, "w").close()
    before = sorted(os.listdir(root))
    r, _, _ = create("pidfd2", bundle("pidfd2", ["/bin/sleep", "60"]), extra=["--pidfd-socket", notsock])
    check("create --pidfd-socket naming a file that is no socket: refused, nothing left",
          r.returncode != 0 and "--pidfd-socket" in r.stderr and "not a socket" in r.stderr
          and sorted(os.listdir(root)) == before, r)
    oci("delete", "--force", "pidfd")
    reap(pid)
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
