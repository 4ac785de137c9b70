"""What a test needs to drive `abox oci` as containerd's runc shim does:
the test process becomes a child subreaper (a container's init is its
child once `create` has exited, and its exit status is read here), runs
the runtime with a root and a JSON log of its own, and makes busybox
bundles. init() first; cleanup() ends every container left.

    work, root, log = shim.init(BUILD, "abox-oci-NAME-")"""
import ctypes
import json
import os
import shutil
import subprocess
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36
ABOX = work = root = log = None


class Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

    def __repr__(self):
        return f"exit {self.returncode}, stdout {self.stdout!r}, stderr {self.stderr!r}"


def init(build, prefix):
    global ABOX, work, root, log
    ABOX = os.path.join(build, "abox")
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    work = tempfile.mkdtemp(prefix=prefix)
    root = os.path.join(work, "state")
    log = os.path.join(work, "log.json")
    return work, root, log


def oci(*args, stdout=None, timeout=60, stdin_text=None):
    """A command's result; its stdio are files, never pipes: a container
    keeps the stdio its create was given (as runc's does), and a pipe
    would then never end. stdin_text: what its stdin holds (a file)."""
    cmd = [ABOX, "oci", "--root", root, "--log", log, "--log-format", "json"] + list(args)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.TemporaryFile("w+") as inp:
        if stdin_text is not None:
            inp.write(stdin_text)
            inp.seek(0)
        p = subprocess.run(cmd, stdin=inp if stdin_text is not None else subprocess.DEVNULL,
                           stdout=stdout or out, stderr=err, timeout=timeout)
        out.seek(0)
        err.seek(0)
        return Done(p.returncode, out.read(), err.read())


def bundle(name, args, edit=None):
    b = os.path.join(work, name)
    rootfs = os.path.join(b, "rootfs")
    os.makedirs(os.path.join(rootfs, "bin"))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    for tool in ("sh", "echo", "id", "hostname", "cat", "ls", "sleep", "touch", "ulimit", "readlink", "grep", "tty",
                 "stty", "mkdir", "unshare", "stat", "wc", "head", "mknod"):
        os.symlink("busybox", os.path.join(rootfs, "bin", tool))
    for d in ("proc", "dev", "sys", "tmp", "etc"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    subprocess.run([ABOX, "oci", "spec", "--bundle", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = args
    if edit:
        edit(cfg)
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(cfg, f)
    return b


def run_to_end(name, args, edit=None):
    """A container made from a busybox bundle (edit changes its config)
    and run to its end: (exit status, its output and start's errors), or
    (None, the create's error). It is deleted after."""
    b = bundle(name, args, edit)
    with tempfile.TemporaryFile("w+") as out:
        r, pid, _ = create(name, b, out)
        if r.returncode != 0:
            return None, r.stderr
        st = oci("start", name)
        code = reap(pid) if st.returncode == 0 else None
        oci("delete", "--force", name)
        out.seek(0)
        return code, out.read() + st.stderr


def state(cid):
    r = oci("state", cid)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def reap(pid, timeout=20):
    """The container's init ended: its wait status (it is our child)."""
    end = time.time() + timeout
    while time.time() < end:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    return None


def create(cid, b, out=None, extra=()):
    pidfile = os.path.join(work, cid + ".pid")
    r = oci("create", "--bundle", b, "--pid-file", pidfile, *extra, cid, stdout=out)
    pid = int(open(pidfile).read()) if r.returncode == 0 else 0
    return r, pid, pidfile


def cleanup():
    """Every container a failed step left, killed and removed through the
    runtime; their inits reaped; the test's folder gone."""
    if os.path.isdir(root):
        for cid in os.listdir(root):
            if "=" not in cid:
                oci("delete", "--force", cid)
        # sandboxes no container names (a failure between the two):
        # killed through abox itself, never left running
        sbs = os.path.join(root, "abox=state", "sandboxes")
        for sb in (os.listdir(sbs) if os.path.isdir(sbs) else []):
            subprocess.run([ABOX, "--root", os.path.join(root, "abox=state"), "--runtime-dir",
                            os.path.join(root, "abox=run"), "kill", sb], capture_output=True, timeout=60)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    shutil.rmtree(work, ignore_errors=True)
