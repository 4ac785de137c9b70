#!/usr/bin/env python3
"""abox as an OCI runtime, driven as containerd's runc shim drives runc,
as TAP: this test is the shim (a child subreaper, so a container's init is
its child once `create` has exited, and its exit status is read here);
each container is a busybox bundle made by the test. Covered: create with
--pid-file (the pid, no newline) and the container's stdio; state through
created, running, paused, stopped; start; the exit status; kill by name
and number, and --all; delete, forced or not; pause/resume; ps; list;
run (foreground and --detach); features; the config honoured (user and
groups, env, cwd, rlimits, hostname, binds, tmpfs, a read-only root,
masked paths, a network namespace joined by path); bad bundles refused
with the error on stderr and in the JSON log, nothing left behind.

usage: lifecycle.py BUILD_DIR"""
import json
import os
import shutil
import select
import signal
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import Done, bundle, create, oci, reap, state  # noqa: E402,F401

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-life-")
ABOX = shim.ABOX
helpers = []  # processes this test started


def sandbox_of(cid):
    with open(os.path.join(root, cid, "state.json")) as f:
        return json.load(f)["sandbox"]


def sandboxes_left():
    p = os.path.join(root, "abox=state", "sandboxes")
    return sorted(os.listdir(p)) if os.path.isdir(p) else []


def leftovers(sandbox):
    """What a removed container's sandbox could have left: its cgroups,
    records and runtime folder, mounts naming it."""
    found = []
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if sandbox in d:
                found.append(os.path.join(base, d))
        if base.count("/") > 9:
            dirs[:] = []
    for sub in ("abox=run", "abox=state/sandboxes"):
        p = os.path.join(root, sub)
        if os.path.isdir(p):
            found += [os.path.join(p, e) for e in os.listdir(p) if sandbox in e]
    with open("/proc/self/mountinfo") as f:
        found += [ln for ln in f if sandbox in ln]
    return found


def _ns(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def console_socket(name):
    path = os.path.join(work, name + ".sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    return srv, path

def take_master(srv):
    srv.settimeout(10)
    c, _ = srv.accept()
    msg, fds, _, _ = socket.recv_fds(c, 256, 2)
    c.close()
    return msg, fds

def read_until(fd, want, timeout=10):
    got, end = b"", time.time() + timeout
    while want not in got and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                got += os.read(fd, 4096)
            except OSError:
                break
    return got


try:
    # -- the life of a container, as the shim sees it ---------------------
    b = bundle("life", ["/bin/sh", "-c", "echo out; echo err >&2; read x; echo got=$x; exit 3"])
    outp = open(os.path.join(work, "life.out"), "w+")
    errp = open(os.path.join(work, "life.err"), "w+")
    inr, inw = os.pipe()
    pidfile = os.path.join(work, "life.pid")
    p = subprocess.run([ABOX, "oci", "--root", root, "create", "--bundle", b, "--pid-file", pidfile, "life"],
                       stdin=inr, stdout=outp, stderr=errp, timeout=60)
    os.close(inr)
    raw = open(pidfile).read() if os.path.exists(pidfile) else ""
    pid = int(raw) if raw.isdigit() else 0
    st = state("life")
    check("create: exit 0, --pid-file holds the pid (no newline), state 'created' with that pid",
          p.returncode == 0 and raw.isdigit() and st.get("status") == "created" and st.get("pid") == pid
          and st.get("id") == "life" and st.get("bundle") == b and st.get("rootfs") == os.path.join(b, "rootfs"),
          (p, raw, st))
    with open(f"/proc/{pid}/status") as f:
        ppid = next(int(ln.split()[1]) for ln in f if ln.startswith("PPid:"))
    check("create: the container's init is the caller's (a subreaper's) child once create has exited",
          ppid == os.getpid(), ppid)
    outp.seek(0)
    check("create: the process has not run before start", outp.read() == "", "")
    r = oci("start", "life")
    st = state("life")
    check("start: exit 0, state 'running'", r.returncode == 0 and st.get("status") == "running", (r, st))
    r2 = oci("start", "life")
    check("start again: refused", r2.returncode != 0 and "running" in r2.stderr, r2)
    os.write(inw, b"hello\n")
    os.close(inw)
    code = reap(pid)
    outp.seek(0)
    errp.seek(0)
    out, err = outp.read(), errp.read()
    check("the process's stdin, stdout and stderr are the ones create was given", out == "out\ngot=hello\n"
          and err == "err\n", (out, err))
    check("the container's exit status is its process's (3), read by its reaper", code == 3, code)
    st = state("life")
    check("state after the end: 'stopped', pid 0", st.get("status") == "stopped" and st.get("pid") == 0, st)
    r = oci("kill", "life", "KILL")
    check("kill of a stopped container: 'container not running'",
          r.returncode != 0 and "container not running" in r.stderr, r)
    r = oci("kill", "--all", "life", "9")
    check("kill --all of a stopped container: success (what the shim sends after its init's end)",
          r.returncode == 0, r)
    sb = sandbox_of("life")
    r = oci("delete", "life")
    st = state("life")
    check("delete of a stopped container: exit 0; then 'container does not exist'",
          r.returncode == 0 and "container does not exist" in st.get("error", ""), (r, st))
    check("delete left nothing of its sandbox (cgroups, records, runtime folder, mounts)",
          leftovers(sb) == [], leftovers(sb))
    r = oci("delete", "--force", "life")
    check("delete --force of a container that is not there: success", r.returncode == 0, r)

    # -- signals, pause, ps, delete of a running one -------------------------
    b = bundle("sleeper", ["/bin/sh", "-c", "trap 'echo term; exit 7' TERM; trap 'echo rt' 40; trap '' USR1; "
                           "while :; do sleep 0.1; done"])
    so = open(os.path.join(work, "sleeper.out"), "w+")
    r, pid, _ = create("sleeper", b, out=so)
    r2 = oci("start", "sleeper")
    check("a second container: create and start", r.returncode == 0 and r2.returncode == 0, (r, r2))
    r = oci("ps", "--format", "json", "sleeper")
    pids = json.loads(r.stdout) if r.returncode == 0 else []
    check("ps --format json: the container's pids, its init's among them", pid in pids and len(pids) >= 2,
          (r, pids))
    r = oci("ps", "sleeper")
    check("ps (table): ps's header and the container's lines", r.returncode == 0 and "PID" in r.stdout
          and str(pid) in r.stdout, r)
    # -- exec, as the shim runs it (--detach, --pid-file) and in the foreground
    eo = open(os.path.join(work, "exec.out"), "w+")
    r = oci("exec", "--env", "X=from-exec", "sleeper", "/bin/sh", "-c", "echo $X $(id -u); exit 5", stdout=eo)
    eo.seek(0)
    check("exec (foreground): the command runs in the container with our stdio; its status is exec's",
          r.returncode == 5 and eo.read() == "from-exec 0\n", r)
    r = oci("exec", "sleeper", "/bin/no-such-program")
    check("exec of a program that is not there: exit 255, runc's words",
          r.returncode == 255 and 'exec: "/bin/no-such-program": no such file or directory' in r.stderr, r)
    proc = os.path.join(work, "process.json")
    with open(proc, "w") as f:
        json.dump({"args": ["/bin/sh", "-c", "echo $(id -u):$(id -g) $(pwd); sleep 0.3; exit 6"], "cwd": "/tmp",
                   "env": ["PATH=/bin"], "user": {"uid": 1000, "gid": 1000}}, f)
    eo = open(os.path.join(work, "exec2.out"), "w+")
    epid = os.path.join(work, "exec.pid")
    r = oci("exec", "--process", proc, "--detach", "--pid-file", epid, "sleeper", stdout=eo)
    wpid = int(open(epid).read()) if os.path.exists(epid) else 0
    code = reap(wpid) if wpid else None
    eo.seek(0)
    check("exec --process FILE --detach --pid-file: returns at once; the pid is reaped by us with the "
          "process's status (6); the process ran as the file says",
          r.returncode == 0 and code == 6 and eo.read() == "1000:1000 /tmp\n", (r, code))
    srv, sockp = console_socket("exec-tty")
    r = oci("exec", "--tty", "--console-socket", sockp, "--detach", "--pid-file", epid, "sleeper", "/bin/sh", "-c",
            "tty; read x; echo got:$x; exit 9")
    msg, fds = take_master(srv) if r.returncode == 0 else (b"", [])
    wpid = int(open(epid).read()) if r.returncode == 0 else 0
    out, code = b"", None
    if fds:
        os.write(fds[0], b"typed\n")
        out = read_until(fds[0], b"got:typed")
        code = reap(wpid)
        os.close(fds[0])
    srv.close()
    check("exec --tty --console-socket --detach: the process on a terminal handed over the socket; its status (9)",
          b"/dev/pts/" in out and b"got:typed" in out and code == 9, (r, out, code))
    r = oci("exec", "--detach", "--pid-file", epid, "sleeper", "/bin/sleep", "600")
    wpid = int(open(epid).read()) if r.returncode == 0 else 0
    before = json.loads(oci("ps", "--format", "json", "sleeper").stdout)
    os.kill(wpid, signal.SIGKILL)
    reap(wpid)
    time.sleep(0.3)
    after = json.loads(oci("ps", "--format", "json", "sleeper").stdout)
    check("exec --detach: killing the pid it gave (what the shim does at a timeout) ends the process too",
          r.returncode == 0 and len(after) == len(before) - 1, (r, before, after))

    r = oci("events", "--stats", "sleeper")
    ev = json.loads(r.stdout) if r.returncode == 0 else {}
    check("events --stats: one line, runc's stats event (cpu, memory usage and limit, pids)",
          ev.get("type") == "stats" and ev.get("id") == "sleeper" and ev["data"]["memory"]["usage"]["usage"] > 0
          and ev["data"]["pids"]["current"] >= 2 and "total" in ev["data"]["cpu"]["usage"]
          and r.stdout.count("\n") == 1, r)

    r = oci("pause", "sleeper")
    st = state("sleeper")
    check("pause: state 'paused'", r.returncode == 0 and st.get("status") == "paused", (r, st))
    r = oci("resume", "sleeper")
    st = state("sleeper")
    check("resume: state 'running' again", r.returncode == 0 and st.get("status") == "running", (r, st))
    r = oci("list", "--format", "json")
    lst = json.loads(r.stdout) if r.returncode == 0 else None
    check("list --format json: the container's state, with owner",
          isinstance(lst, list) and [x["id"] for x in lst] == ["sleeper"] and lst[0]["status"] == "running"
          and "owner" in lst[0], (r, lst))
    # a real-time signal (systemd's stop signal is one) reaches the process
    r = oci("kill", "sleeper", "40")
    time.sleep(0.3)
    st40 = state("sleeper").get("status")
    # kill --all: every process of the container, not only its process
    ep2 = os.path.join(work, "exec2.pid")
    r2 = oci("exec", "--detach", "--pid-file", ep2, "sleeper", "/bin/sleep", "600")
    w2 = int(open(ep2).read()) if r2.returncode == 0 else 0
    r3 = oci("kill", "--all", "sleeper", "USR1")
    code2 = reap(w2) if w2 else None
    check("kill with a real-time signal (the process's trap runs) and kill --all with another: the process "
          "ignores it, the exec'd sleep dies of SIGUSR1 (its waiter reports 138)",
          r.returncode == 0 and r3.returncode == 0 and code2 == 138, (r, st40, r3, code2))

    r = oci("delete", "sleeper")
    check("delete of a running container: refused, as runc says it",
          r.returncode != 0 and "cannot delete container sleeper that is not stopped: running" in r.stderr, r)
    r = oci("kill", "sleeper", "SIGTERM")
    code = reap(pid)
    so.seek(0)
    check("kill ID SIGTERM: the process gets it (its trap runs) and its status is the container's",
          r.returncode == 0 and code == 7 and so.read() == "rt\nterm\n", (r, code))
    oci("delete", "sleeper")

    r, pid, _ = create("forced", bundle("forced", ["/bin/sleep", "600"]))
    oci("start", "forced")
    sb = sandbox_of("forced")
    r = oci("delete", "--force", "forced")
    code = reap(pid)
    check("delete --force of a running container: its init killed, nothing left",
          r.returncode == 0 and code == -9 and leftovers(sb) == [] and not os.path.exists(os.path.join(root, "forced")),
          (r, code, leftovers(sb)))

    r, pid, _ = create("unstarted", bundle("unstarted", ["/bin/sleep", "600"]))
    eo = open(os.path.join(work, "exec-created.out"), "w+")
    r1 = oci("exec", "unstarted", "/bin/sh", "-c", "echo before-start", stdout=eo)
    eo.seek(0)
    check("exec in a created container (its process not started yet) works, as with runc",
          r1.returncode == 0 and eo.read() == "before-start\n", r1)
    r2 = oci("kill", "unstarted", "TERM")
    code = reap(pid)
    check("kill of a created container: it ends by the signal's default (143) without its process running",
          r.returncode == 0 and r2.returncode == 0 and code == 143, (r, r2, code))
    oci("delete", "unstarted")

    # -- a terminal, handed over the console socket ------------------------
    def tty_cfg(cfg):
        cfg["process"]["terminal"] = True
        cfg["process"]["consoleSize"] = {"height": 30, "width": 100}
    tb = bundle("tty", ["/bin/sh", "-c", "tty; stty size; read x; echo got:$x"], tty_cfg)
    srv, sockp = console_socket("tty")
    r, pid, _ = create("tty", tb, extra=["--console-socket", sockp])
    msg, fds = take_master(srv) if r.returncode == 0 else (b"", [])
    check("create with process.terminal and --console-socket: one message, the master as SCM_RIGHTS",
          r.returncode == 0 and len(fds) == 1 and msg, (r, msg, fds))
    if fds:
        oci("start", "tty")
        os.write(fds[0], b"hello\n")
        out = read_until(fds[0], b"got:hello")
        code = reap(pid)
        check("the process runs on that terminal (its size the config's), reads what is typed into it",
              b"/dev/pts/" in out and b"30 100" in out and b"got:hello" in out and code == 0, (out, code))
        os.close(fds[0])
    srv.close()
    oci("delete", "--force", "tty")
    r = oci("create", "--bundle", tb, "tty2")
    check("a terminal without --console-socket: refused in runc's words",
          r.returncode != 0 and "cannot allocate tty if runc will detach without setting console socket" in r.stderr,
          r)
    notsock = os.path.join(work, "not-a-socket")
    open(notsock, "w").close()
    r = oci("create", "--bundle", tb, "--console-socket", notsock, "tty3")
    check("a console socket that is not a socket: refused, nothing left",
          r.returncode != 0 and "not a socket" in r.stderr and not os.path.exists(os.path.join(root, "tty3")), r)

    # -- the config honoured -------------------------------------------------
    hostdir = os.path.join(work, "hostdir")
    os.makedirs(hostdir)
    open(os.path.join(hostdir, "file"), "w").write("from the host\n")

    def honour(cfg):
        cfg["process"]["user"] = {"uid": 1000, "gid": 1000, "additionalGids": [5, 7]}
        cfg["process"]["env"] = ["PATH=/bin", "FOO=bar"]
        cfg["process"]["cwd"] = "/tmp"
        cfg["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "soft": 77, "hard": 88}]
        cfg["hostname"] = "ctr-host"
        cfg["root"]["readonly"] = True
        cfg["mounts"] += [{"destination": "/data", "type": "bind", "source": hostdir, "options": ["rbind", "ro"]},
                          {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["mode=1777"]}]
        cfg["linux"]["maskedPaths"] = ["/etc"]
    cmd = ("echo $(id -u) $(id -g) $(id -G) $FOO $(pwd) $(ulimit -n) $(ulimit -Hn) $(hostname); cat /data/file; "
           "touch /data/x 2>/dev/null && echo data-writable; touch /tmp/y && echo tmp-writable; "
           "touch /z 2>/dev/null && echo root-writable; ls -A /etc | wc -l")
    b = bundle("honour", ["/bin/sh", "-c", cmd], honour)
    os.symlink("busybox", os.path.join(b, "rootfs", "bin", "pwd"))
    ho = open(os.path.join(work, "honour.out"), "w+")
    r = oci("run", "--bundle", b, "honour", stdout=ho)
    ho.seek(0)
    lines = ho.read().splitlines()
    check("run: the config's user, groups, env, cwd, rlimits, hostname; a read-only bind, a tmpfs, a read-only "
          "root, a masked path; run's exit status is the process's",
          r.returncode == 0 and lines == ["1000 1000 1000 5 7 bar /tmp 77 88 ctr-host", "from the host",
                                          "tmp-writable", "0"], (r, lines))
    check("run (foreground) deletes the container after its end", not os.path.exists(os.path.join(root, "honour")),
          os.listdir(root))
    check("the host folder bound read-only was not written", os.listdir(hostdir) == ["file"], os.listdir(hostdir))

    # hooks the runtime runs, each with the state on its stdin
    def hooked(cfg):
        cfg["hooks"] = {k: [{"path": "/bin/sh", "args": ["sh", "-c", f"cat > {work}/hook-{k}.json"]}]
                        for k in ("prestart", "createRuntime", "poststart", "poststop")}
    r = oci("run", "--bundle", bundle("hooked", ["/bin/sh", "-c", "exit 0"], hooked), "hooked")
    hs = {}
    for k in ("prestart", "createRuntime", "poststart", "poststop"):
        p = os.path.join(work, f"hook-{k}.json")
        hs[k] = json.load(open(p)) if os.path.exists(p) else {}
    check("hooks prestart, createRuntime, poststart and poststop run, each with the state on its stdin",
          r.returncode == 0 and all(h.get("id") == "hooked" for h in hs.values())
          and hs["createRuntime"].get("status") == "created" and hs["createRuntime"].get("pid", 0) > 0
          and hs["poststop"].get("status") == "stopped", (r, hs))

    def failing(cfg):
        cfg["hooks"] = {"createRuntime": [{"path": "/bin/sh", "args": ["sh", "-c", "echo hook-said-this; exit 3"]}]}
    before = sorted(os.listdir(root))
    r = oci("create", "--bundle", bundle("hookfail", ["/bin/sh", "-c", "exit 0"], failing), "hookfail")
    check("a failing createRuntime hook fails the create, naming it, with its output; nothing left",
          r.returncode != 0 and "hooks.createRuntime[0] '/bin/sh' failed: exit status 3 (its output: hook-said-this"
          in r.stderr
          and sorted(os.listdir(root)) == before and sandboxes_left() == [], (r, os.listdir(root)))

    # startContainer: inside the container (its root, its pid namespace,
    # abox-init its PID 1), before the process, with the state on stdin
    def start_hooked(cfg):
        cfg["root"]["readonly"] = False
        cfg["hooks"] = {"startContainer": [{"path": "/bin/sh", "args": [
            "sh", "-c", "cat > /tmp/state.json; cat /proc/1/comm > /tmp/pid1"]}]}
    sb_ = bundle("starthook", ["/bin/sh", "-c", "test -s /tmp/state.json && echo after-hook > /tmp/main"],
                 start_hooked)
    r, pid, _ = create("starthook", sb_)
    s = oci("start", "starthook")
    reap(pid)
    rf = os.path.join(sb_, "rootfs", "tmp")
    got = {n: open(os.path.join(rf, n)).read() for n in ("state.json", "pid1", "main")
           if os.path.exists(os.path.join(rf, n))}
    check("a startContainer hook runs inside the container before its process, with the state on its stdin",
          s.returncode == 0 and json.loads(got.get("state.json", "{}")).get("id") == "starthook"
          and got.get("pid1", "").strip() == "abox-init" and got.get("main", "").strip() == "after-hook", (s, got))
    oci("delete", "--force", "starthook")

    # createContainer: at the end of create, the host's program in the
    # container's network, uts and pid namespaces, the runtime's tree
    # (the container's root at its bundle's path), the state on stdin
    def create_hooked(cfg):
        cfg["root"]["readonly"] = False
        cfg["hostname"] = "hooked-host"
        cfg["hooks"] = {"createContainer": [{"path": "/bin/sh", "args": [
            "sh", "-c", f"cat > {work}/cc-state.json; (hostname; readlink /proc/self/ns/net; echo $$) "
            f"> {work}/cc-seen; echo by-hook > {work}/createhook/rootfs/made-by-hook"]}]}
    cb = bundle("createhook", ["/bin/sh", "-c", "cat /made-by-hook; readlink /proc/self/ns/net"], create_hooked)
    with open(os.path.join(work, "createhook.out"), "w+") as co:
        r, pid, _ = create("createhook", cb, co)
        seen = open(os.path.join(work, "cc-seen")).read().split() if os.path.exists(os.path.join(work, "cc-seen")) \
            else []
        st = json.load(open(os.path.join(work, "cc-state.json"))) if r.returncode == 0 else {}
        s = oci("start", "createhook")
        reap(pid)
        co.seek(0)
        out = co.read().split()
    check("a createContainer hook runs at create in the container's uts, network and pid namespaces, with "
          "the state on its stdin, and what it writes in the container's root is there for the process",
          r.returncode == 0 and s.returncode == 0 and st.get("id") == "createhook" and st.get("status") == "created"
          and len(seen) == 3 and seen[0] == "hooked-host" and out[:1] == ["by-hook"] and out[1:2] == seen[1:2]
          and seen[1] != os.readlink("/proc/self/ns/net") and int(seen[2]) < 100, (r, s, seen, out, st))
    oci("delete", "--force", "createhook")

    def cc_failing(cfg):
        cfg["hooks"] = {"createContainer": [{"path": "/bin/sh", "args": ["sh", "-c", "echo cc-no; exit 5"]}]}
    before = sorted(os.listdir(root))
    r = oci("create", "--bundle", bundle("ccfail", ["/bin/sh", "-c", "exit 0"], cc_failing), "ccfail")
    check("a failing createContainer hook fails the create, naming it, with its output; nothing left",
          r.returncode != 0 and "hooks.createContainer[0] '/bin/sh' failed: exit status 5 (its output: cc-no"
          in r.stderr and sorted(os.listdir(root)) == before and sandboxes_left() == [], (r, os.listdir(root)))

    def start_failing(cfg):
        cfg["hooks"] = {"startContainer": [{"path": "/bin/sh", "args": ["sh", "-c", "echo no-go; exit 4"]}]}
    r, pid, _ = create("startfail", bundle("startfail", ["/bin/sh", "-c", "exit 0"], start_failing))
    s = oci("start", "startfail")
    check("a failing startContainer hook fails the start, naming it, with its output",
          s.returncode != 0 and "hooks.startContainer[0] '/bin/sh' failed: exit status 4 (its output: no-go"
          in s.stderr, s)
    oci("delete", "--force", "startfail")
    reap(pid)

    # a device node the image carries (as if unpacked as root) opens nothing
    db = bundle("devnode", ["/bin/sh", "-c", "echo x > /hostnull && echo opened || echo refused; "
                            "grep CapBnd /proc/self/status"],
                lambda c: c["process"]["capabilities"].update(bounding=["CAP_KILL"], effective=["CAP_KILL"],
                                                              permitted=["CAP_KILL"]))
    os.mknod(os.path.join(db, "rootfs", "hostnull"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    do = open(os.path.join(work, "devnode.out"), "w+")
    r = oci("run", "--bundle", db, "devnode", stdout=do)
    do.seek(0)
    got = do.read().split()
    check("a device node in the root folder opens nothing (nodev); the process's bounding set is the config's "
          "(CAP_KILL alone) while init keeps abox's", r.returncode == 0 and got == ["refused", "CapBnd:",
                                                                                 "0000000000000020"], (r, got))

    def nocaps(cfg):
        cfg["process"]["capabilities"] = {}
        cfg["process"]["user"] = {"uid": 1000, "gid": 1000}
    no = open(os.path.join(work, "nocaps.out"), "w+")
    r = oci("run", "--bundle", bundle("nocaps", ["/bin/sh", "-c", "id -u; grep CapBnd /proc/self/status"], nocaps),
            "nocaps", stdout=no)
    no.seek(0)
    got = no.read().split()
    check("every capability dropped and a user of 1000 (Kubernetes' restricted profile): the process starts as "
          "that user with an empty bounding set", r.returncode == 0 and got == ["1000", "CapBnd:", "0000000000000000"],
          (r, got))

    r = oci("run", "--bundle", bundle("runexit", ["/bin/sh", "-c", "exit 42"]), "runexit")
    check("run: exit status 42 from the process", r.returncode == 42, r)

    # a network namespace made by the test (as a CNI plugin's), joined
    holder = subprocess.Popen(["unshare", "--net", "sleep", "600"])
    helpers.append(holder)
    time.sleep(0.3)
    nspath = f"/proc/{holder.pid}/ns/net"
    ns_ino = os.stat(nspath).st_ino

    def join(cfg):
        cfg["linux"]["namespaces"] = [n if n["type"] != "network" else {"type": "network", "path": nspath}
                                      for n in cfg["linux"]["namespaces"]]
    no = open(os.path.join(work, "netns.out"), "w+")
    r = oci("run", "--bundle", bundle("netns", ["/bin/readlink", "/proc/self/ns/net"], join), "netns", stdout=no)
    no.seek(0)
    got = no.read().strip()
    check("linux.namespaces network with a path: the container is in that namespace",
          r.returncode == 0 and got == f"net:[{ns_ino}]", (r, got, ns_ino))

    # a pod's ipc and uts namespaces (its sandbox container's), joined
    pod = subprocess.Popen(["unshare", "--uts", "--ipc", "sh", "-c", "hostname pod-host && exec sleep 600"])
    helpers.append(pod)
    time.sleep(0.3)
    ipc_ino = os.stat(f"/proc/{pod.pid}/ns/ipc").st_ino

    def podns(cfg):
        cfg["linux"]["namespaces"] = [n if n["type"] not in ("ipc", "uts") else
                                      {"type": n["type"], "path": f"/proc/{pod.pid}/ns/{n['type']}"}
                                      for n in cfg["linux"]["namespaces"]]
        cfg["hostname"] = ""
    po = open(os.path.join(work, "pod.out"), "w+")
    r = oci("run", "--bundle", bundle("pod", ["/bin/sh", "-c", "hostname; readlink /proc/self/ns/ipc"], podns),
            "pod", stdout=po)
    po.seek(0)
    got = po.read().split()
    check("linux.namespaces ipc and uts with paths (a pod's): joined, the pod's hostname kept",
          r.returncode == 0 and got == ["pod-host", f"ipc:[{ipc_ino}]"], (r, got, ipc_ino))

    # a pod that shares its pid namespace (shareProcessNamespace): a
    # container joins its sandbox container's, sees its processes, and
    # its own stay its own (killed with it)
    pb = bundle("pidpod", ["/bin/sleep", "60"])
    r, ppid, _ = create("pidpod", pb)
    oci("start", "pidpod")

    def sharedpid(cfg):
        cfg["linux"]["namespaces"] = [n if n["type"] != "pid" else {"type": "pid", "path": f"/proc/{ppid}/ns/pid"}
                                      for n in cfg["linux"]["namespaces"]]
    so = open(os.path.join(work, "sharedpid.out"), "w+")
    r2, spid, _ = create("sharedpid", bundle("sharedpid", ["/bin/sh", "-c", "cat /proc/1/comm; cat /proc/2/comm; "
                                                           "readlink /proc/self/ns/pid; exec sleep 60"], sharedpid),
                         so)
    oci("start", "sharedpid")
    time.sleep(0.5)
    so.seek(0)
    got = so.read().split()
    want_ns = os.readlink(f"/proc/{ppid}/ns/pid") if r.returncode == 0 else "?"
    check("linux.namespaces pid with a path (a pod that shares it): joined, the pod's processes seen "
          "(its abox-init is PID 1, its sleep PID 2)",
          r.returncode == 0 and r2.returncode == 0 and got == ["abox-init", "sleep", want_ns], (r, r2, got, want_ns))
    ps = oci("ps", "--format", "json", "sharedpid")
    mine = json.loads(ps.stdout) if ps.returncode == 0 else []
    check("... ps lists the joining container's processes (its init and sleep), none of the pod's",
          len(mine) == 2 and spid in mine and ppid not in mine, (ps, mine, spid, ppid))
    k = oci("kill", "--all", "sharedpid", "KILL")
    reap(spid)
    time.sleep(0.3)
    left = [p for p in os.listdir("/proc") if p.isdigit() and _ns(p) == want_ns]
    check("... kill --all KILL ends the joining container's processes (its init is not PID 1) and leaves the pod's",
          k.returncode == 0 and oci("state", "pidpod").returncode == 0 and len(left) == 2, (k, left))
    oci("delete", "--force", "sharedpid")
    oci("delete", "--force", "pidpod")
    reap(ppid)

    # a mount namespace its engine made, joined by path: the root is built
    # there (as runc pivots in it), the runtime's own namespace untouched
    holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "300"])
    try:
        for _ in range(100):
            if os.readlink(f"/proc/{holder.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
                break
            time.sleep(0.05)
        mnt = f"/proc/{holder.pid}/ns/mnt"

        def joinmnt(cfg):
            cfg["linux"]["namespaces"] = [n if n["type"] != "mount" else {"type": "mount", "path": mnt}
                                          for n in cfg["linux"]["namespaces"]]
        jo = open(os.path.join(work, "joinmnt.out"), "w+")
        r = oci("run", "--bundle", bundle("joinmnt", ["/bin/sh", "-c", "readlink /proc/self/ns/mnt; ls /"],
                                          joinmnt), "joinmnt", stdout=jo)
        jo.seek(0)
        got = jo.read().split()
        check("linux.namespaces mount with a path: the container's root is built in that namespace, none "
              "of it in the runtime's", r.returncode == 0 and got[:1] == [os.readlink(mnt)] and "bin" in got
              and "joinmnt" not in open("/proc/self/mountinfo").read(), (r, got))
        # one an unprivileged user's namespace owns: its mounts there would
        # not be locked (that user could unmount the masks)
        owned = subprocess.Popen(["unshare", "--user", "--map-root-user", "--mount", "sleep", "300"])
        for _ in range(100):
            if os.readlink(f"/proc/{owned.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
                break
            time.sleep(0.05)

        def joinowned(cfg):
            cfg["linux"]["namespaces"] = [n if n["type"] != "mount" else
                                          {"type": "mount", "path": f"/proc/{owned.pid}/ns/mnt"}
                                          for n in cfg["linux"]["namespaces"]]
        r = oci("create", "--bundle", bundle("joinowned", ["/bin/true"], joinowned), "joinowned")
        owned.kill()
        owned.wait()
        check("... one of another user namespace (an unprivileged user's): refused by name, nothing left",
              r.returncode != 0 and "is a namespace of another user namespace than the runtime's" in r.stderr
              and not os.path.exists(os.path.join(root, "joinowned")), r)
    finally:
        holder.kill()
        holder.wait()

    # a time namespace of its own, its clocks shifted by linux.timeOffsets
    def timens(cfg):
        cfg["linux"]["namespaces"].append({"type": "time"})
        cfg["linux"]["timeOffsets"] = {"boottime": {"secs": 86400}, "monotonic": {"secs": 3600}}
    to = open(os.path.join(work, "timens.out"), "w+")
    up = float(open("/proc/uptime").read().split()[0])
    r = oci("run", "--bundle", bundle("timens", ["/bin/sh", "-c", "cat /proc/uptime; readlink /proc/self/ns/time"],
                                      timens), "timens", stdout=to)
    to.seek(0)
    got = to.read().split()
    check("linux.namespaces time with linux.timeOffsets: a time namespace of its own, its boot clock a day ahead",
          r.returncode == 0 and len(got) == 3 and 86400 + up - 5 < float(got[0]) < 86400 + up + 60
          and got[2] != os.readlink("/proc/self/ns/time"), (r, got, up))

    r = oci("features")
    feat = json.loads(r.stdout) if r.returncode == 0 else {}
    check("features: runc's JSON (ociVersionMax, the hooks run, linux.namespaces, cgroup, seccomp, mountOptions)",
          feat.get("ociVersionMax", "").startswith("1.") and "network" in feat["linux"]["namespaces"]
          and feat.get("hooks") == ["prestart", "createRuntime", "createContainer", "startContainer", "poststart",
                                 "poststop"]
          and feat["linux"]["seccomp"]["enabled"] is True and "rbind" in feat["mountOptions"]
          and r.stdout.startswith('{\n    "ociVersionMin"'), r)

    # -- bad bundles ----------------------------------------------------------
    def bad(name, setup, want):
        b = os.path.join(work, "bad-" + name)
        if os.path.exists(b):
            shutil.rmtree(b)
        shutil.copytree(os.path.join(work, "runexit"), b, symlinks=True)
        setup(b)
        before = sorted(os.listdir(root))
        open(log, "w").close()
        r = oci("create", "--bundle", b, "bad-" + name)
        entries = [json.loads(ln) for ln in open(log)]
        msg = entries[-1]["msg"] if entries and entries[-1].get("level") == "error" else ""
        check(f"bad bundle ({name}): exit non-zero, '{want}' on stderr and as the JSON log's last error, "
              "nothing left", r.returncode != 0 and want in r.stderr and want in msg
              and sorted(os.listdir(root)) == before, (r, msg, sorted(os.listdir(root)), before))

    def edit_cfg(fn):
        def setup(b):
            path = os.path.join(b, "config.json")
            cfg = json.load(open(path))
            fn(cfg)
            json.dump(cfg, open(path, "w"))
        return setup

    bad("malformed", lambda b: open(os.path.join(b, "config.json"), "w").write('{"ociVersion": "1.0.2", '),
        "config.json")
    bad("nsunknown", edit_cfg(lambda c: c["linux"]["namespaces"].append({"type": "foo"})),
        "unknown namespace type 'foo'")
    bad("noroot", lambda b: shutil.rmtree(os.path.join(b, "rootfs")), "root.path")
    bad("dotdot", edit_cfg(lambda c: c["mounts"].append({"destination": "/../../etc", "type": "tmpfs",
                                                          "source": "tmpfs"})), "..")
    bad("joinpid", edit_cfg(lambda c: c["linux"]["namespaces"].__setitem__(0, {"type": "pid", "path": "/proc/self/ns/pid"})),
        "is the runtime's own pid namespace: abox does not share it")
    bad("joinmnt", edit_cfg(lambda c: c["linux"]["namespaces"].__setitem__(
        [n["type"] for n in c["linux"]["namespaces"]].index("mount"), {"type": "mount", "path": "/proc/self/ns/mnt"})),
        "is the runtime's or the host's mount namespace")
    bad("hostns", edit_cfg(lambda c: c["linux"].update(namespaces=[{"type": "pid"}, {"type": "mount"}])),
        "abox does not share the host's")
    bad("timeclock", edit_cfg(lambda c: c["linux"].update(namespaces=c["linux"]["namespaces"] + [{"type": "time"}],
                                                          timeOffsets={"realtime": {"secs": 1}})),
        "linux.timeOffsets.realtime: is not a clock a time namespace can shift")
    bad("nnp", edit_cfg(lambda c: c["process"].update(noNewPrivileges=False)),
        "process.noNewPrivileges: false: abox sets no_new_privs unless")
    bad("caps", edit_cfg(lambda c: c["process"]["capabilities"]["bounding"].append("CAP_SYS_ADMIN")),
        "CAP_SYS_ADMIN is beyond what abox grants")
    bad("noexec", edit_cfg(lambda c: c["process"].update(args=["/bin/no-such-program"])),
        'exec: "/bin/no-such-program": no such file or directory')
    bad("notinpath", edit_cfg(lambda c: c["process"].update(args=["no-such-program"])),
        'exec: "no-such-program": executable file not found in $PATH')

    # a symlink in the rootfs pointing out of it: the mount lands inside
    outside = os.path.join(work, "outside")
    os.makedirs(outside)

    def escape(b):
        os.symlink(outside, os.path.join(b, "rootfs", "evil"))
        edit_cfg(lambda c: c["mounts"].append({"destination": "/evil/sub", "type": "tmpfs",
                                               "source": "tmpfs"}))(b)
    b = os.path.join(work, "escape")
    shutil.copytree(os.path.join(work, "runexit"), b, symlinks=True)
    escape(b)
    cfgp = os.path.join(b, "config.json")
    cfg = json.load(open(cfgp))
    cfg["process"]["args"] = ["/bin/sh", "-c", "touch /evil/sub/inside && echo ok"]
    json.dump(cfg, open(cfgp, "w"))
    r = oci("run", "--bundle", b, "escape")
    check("a mount destination through a symlink out of the rootfs never reaches the host folder it names "
          "(refused, naming the destination)", os.listdir(outside) == [] and r.returncode != 0
          and "mount destination '/evil/sub'" in r.stderr, (r, os.listdir(outside)))
except Exception:
    broke()
finally:
    for h in helpers:
        h.kill()
        h.wait()
    # anything a failed step left: killed and removed through the runtime
    shim.cleanup()
finish()
