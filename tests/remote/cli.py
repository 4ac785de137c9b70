#!/usr/bin/env python3
"""The CLI's verbs with --remote against a live aboxd, as TAP: the static
`abox` hands over to abox-remote, and each verb does over HTTP what it
does locally. Starts its own daemon (free loopback port, fresh key),
stops it by pid, and checks that nothing was left behind.

usage: cli.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from harness import Daemon, broke, check, finish, free_port  # noqa: E402

build = sys.argv[1]
abox = os.path.join(build, "abox")
unix_path = os.path.join(tempfile.gettempdir(), f"aboxd-remote-cli-{os.getpid()}.sock")
live = Daemon(build, "remote-cli", keys=1, extra_config={"unixSocket": unix_path})
url, key, listed = live.base, live.keys[0], live.listed
env = {k: v for k, v in os.environ.items() if k not in ("ABOX_REMOTE", "ABOX_API_KEY")}


def cli(*args, inp=None, remote=True, extra_env=None):
    argv = [abox] + (["--remote", url, "--api-key", key] if remote else []) + list(args)
    e = dict(env, **(extra_env or {}))
    p = subprocess.run(argv, input=inp, capture_output=True, env=e, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


try:
    rc, out, err = cli("run", "--", "sh", "-c", "echo hi; echo oops >&2; exit 3")
    check("run: output, errors and exit status come back", rc == 3 and out == "hi\n" and err == "oops\n",
          f"rc={rc} out={out!r} err={err!r}")
    check("run: its sandbox is gone after", listed() == [], str(listed()))

    rc, out, err = cli("create", "--metadata", "who=cli-test", "--timeout", "300")
    sid = out.strip()
    check("create prints an id", rc == 0 and len(sid) == 20, f"rc={rc} out={out!r} err={err!r}")
    rc, out, err = cli("ls", extra_env={})
    check("ls lists it with its metadata", rc == 0 and sid in out and "cli-test" in out, out + err)
    rc, out, err = cli("info", "--json", sid)
    try:
        info = json.loads(out)
    except ValueError:
        info = {}
    check("info --json", rc == 0 and json.dumps(info).find(sid) >= 0, out + err)
    # the environment form, without the options
    rc, out, err = cli("exec", sid, "--", "id", "-u", remote=False, extra_env={"ABOX_REMOTE": url, "ABOX_API_KEY": key})
    check("ABOX_REMOTE/ABOX_API_KEY: exec as user", rc == 0 and out == "1000\n", f"rc={rc} {out!r} {err!r}")
    rc, out, err = cli("exec", "-u", "root", "-e", "A=b", sid, "--", "sh", "-c", "id -u; echo $A")
    check("exec -u root -e", rc == 0 and out == "0\nb\n", f"rc={rc} {out!r} {err!r}")
    rc, out, err = cli("exec", "-i", sid, "--", "tr", "a-z", "A-Z", inp=b"shout\n")
    check("exec -i: stdin goes through", rc == 0 and out == "SHOUT\n", f"rc={rc} {out!r} {err!r}")
    rc, out, err = cli("exec", "--json", sid, "--", "sh", "-c", "echo hi; echo no >&2; exit 2")
    try:
        res = json.loads(out)
    except ValueError:
        res = {}
    check("exec --json: one object with the exit code and both streams",
          res.get("exitCode") == 2 and res.get("stdout") == "hi\n" and res.get("stderr") == "no\n", out + err)
    rc, out, err = cli("exec", "--truncate", "200", sid, "--", "seq", "1", "5000")
    check("exec --truncate: head, marker naming the full output, tail",
          rc == 0 and out.startswith("1\n2\n") and "characters omitted" in out and out.endswith("5000\n"), out[:300] + err)
    rc, out, err = cli("exec", "--timeout", "0.5", sid, "--", "sh", "-c", "sleep 30 & sleep 30")
    rc2, out2, _ = cli("exec", sid, "--", "sh", "-c", "pgrep -c sleep || true")
    check("exec --timeout: the daemon's init kills the group, 124 and named",
          rc == 124 and "timeout" in err and out2.strip() == "0", f"rc={rc} {err!r} left={out2!r}")
    rc, out, err = cli("exec", "--check", sid, "--", "false")
    check("exec --check: a failure is named", rc == 1 and "exited with 1" in err, f"rc={rc} {err!r}")

    rc, out, err = cli("files", "write", sid, "/home/user/notes.txt", inp=b"line one\n")
    rc2, out2, err2 = cli("files", "cat", sid, "/home/user/notes.txt")
    check("files write / cat", rc == 0 and rc2 == 0 and out2 == "line one\n", err + err2)
    rc, out, err = cli("files", "ls", sid, "/home/user")
    check("files ls", rc == 0 and "notes.txt" in out, out + err)
    rc, out, err = cli("files", "cat", sid, "/home/user/missing")
    check("files cat of a missing file fails naming it", rc != 0 and "missing" in err, f"rc={rc} {err!r}")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "blob")
        with open(src, "wb") as f:
            f.write(os.urandom(3 << 20))
        rc, out, err = cli("cp", src, f"{sid}:/tmp/blob")
        back = os.path.join(d, "back")
        rc2, out2, err2 = cli("cp", f"{sid}:/tmp/blob", back)
        same = os.path.exists(back) and open(src, "rb").read() == open(back, "rb").read()
        check("cp in and out, 3 MiB intact", rc == 0 and rc2 == 0 and same, err + err2)

    rc, out, err = cli("exec", "-d", "--tag", "sleeper", sid, "--", "sleep", "300")
    rc2, out2, err2 = cli("ps", sid)
    check("exec -d, then ps shows it", rc == 0 and rc2 == 0 and "sleep 300" in out2, out2 + err + err2)
    rc, out, err = cli("signal", sid, "sleeper", "KILL")
    check("signal by tag", rc == 0, err)
    rc, out, err = cli("exec", "-d", "--tag", "talker", sid, "--", "sh", "-c", "echo kept; sleep 0.3; echo live")
    rc2, out2, err2 = cli("attach", sid, "talker")
    check("attach by tag: kept output, then live output, then its end", rc2 == 0 and out2 == "kept\nlive\n",
          f"rc={rc2} {out2!r} {err2!r}")

    watcher = subprocess.Popen([abox, "--remote", url, "--api-key", key, "files", "watch", "--count", "1", "--timeout", "20",
                                sid, "/home/user"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(0.5)
    cli("files", "write", sid, "/home/user/watched.txt", inp=b"w")
    try:
        wout, werr = watcher.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        watcher.kill()
        wout, werr = watcher.communicate()
    check("files watch sees a new file", watcher.returncode == 0 and b"/home/user/watched.txt" in wout, wout + werr)

    rc, out, err = cli("files", "mkdir", sid, "/home/user/a/b")
    rc2, out2, err2 = cli("files", "mv", sid, "/home/user/notes.txt", "/home/user/a/b/n.txt")
    rc3, out3, err3 = cli("files", "stat", sid, "/home/user/a/b/n.txt")
    check("files mkdir, mv, stat", rc == 0 and rc2 == 0 and rc3 == 0 and "9" in out3, out3 + err + err2 + err3)
    rc, out, err = cli("files", "exists", sid, "/home/user/notes.txt")
    rc2, out2, err2 = cli("files", "exists", sid, "/home/user/a/b/n.txt")
    check("files exists: 1 for what moved away, 0 where it went", rc == 1 and rc2 == 0, f"rc={rc} rc2={rc2} {err}{err2}")
    rc, out, err = cli("files", "mv", sid, "/home/user/a/b/n.txt", "/home/user/notes.txt")
    rc2, out2, err2 = cli("files", "rm", sid, "/home/user/a")
    rc3, out3, err3 = cli("files", "ls", sid, "/home/user")
    check("files rm of a folder", rc == 0 and rc2 == 0 and " a\n" not in out3 and "/a\n" not in out3, out3 + err2)

    rc, out, err = cli("metrics", sid)
    check("metrics", rc == 0 and "memory:" in out, out + err)
    rc, out, err = cli("set-timeout", sid, "600")
    check("set-timeout", rc == 0, err)

    rc, out, err = cli("pause", sid)
    rc2, out2, err2 = cli("ls")
    check("pause, then ls says paused", rc == 0 and "paused" in out2, out2 + err + err2)
    rc, out, err = cli("resume", sid)
    rc2, out2, err2 = cli("files", "cat", sid, "/home/user/notes.txt")
    check("resume: files are still there", rc == 0 and out2 == "line one\n", err + err2)

    rc, out, err = cli("snapshot", "--name", f"cli-snap-{os.getpid()}", sid)
    snap = out.strip().split()[0] if out.strip() else ""
    rc2, out2, err2 = cli("snapshots", "ls")
    check("snapshot, snapshots ls", rc == 0 and rc2 == 0 and snap and snap in out2, out + err + out2 + err2)
    rc, out, err = cli("create", "--from", snap)
    child = out.strip()
    rc2, out2, err2 = cli("files", "cat", child, "/home/user/notes.txt")
    check("create --from the snapshot", rc == 0 and out2 == "line one\n", err + err2)
    cli("kill", child)
    rc, out, err = cli("snapshots", "rm", snap)
    check("snapshots rm", rc == 0, err)

    rc, out, err = cli("fork", "--count", "2", sid)
    forks = [l.split()[0] for l in out.splitlines() if l.strip()]
    check("fork --count 2", rc == 0 and len(forks) == 2, out + err)
    for f in forks:
        cli("kill", f)

    rc, out, err = cli("template", "ls")
    check("template ls: not carried by the protocol, and says so",
          rc == 125 and "not available through a remote abox" in err, f"rc={rc} {err!r}")
    rc, out, err = cli("doctor")
    check("doctor checks the daemon", rc == 0 and "answers this key" in out, out + err)
    bad = subprocess.run([abox, "--remote", url, "--api-key", "e2b_" + "0" * 40, "ls"], capture_output=True,
                         env=env, timeout=60)
    check("a wrong key is refused, clearly", bad.returncode == 125 and b"API key" in bad.stderr, bad.stderr)
    dead = subprocess.run([abox, "--remote", f"http://127.0.0.1:{free_port()}", "ls"], capture_output=True,
                          env=env, timeout=60)
    check("an unreachable daemon is named", dead.returncode == 125 and b"127.0.0.1" in dead.stderr, dead.stderr)

    over_unix = subprocess.run([abox, "--remote", "unix:" + unix_path, "--api-key", key, "info", sid],
                               capture_output=True, env=env, timeout=60)
    check("--remote unix:PATH", over_unix.returncode == 0 and sid.encode() in over_unix.stdout, over_unix.stderr)

    rc, out, err = cli("serve", "--help", remote=False)
    check("abox serve is aboxd", rc == 0 and "usage: aboxd" in out, out + err)

    rc, out, err = cli("kill", sid)
    check("kill", rc == 0, err)
    check("nothing left on the daemon", listed() == [], str(listed()))
except Exception:
    broke()
finally:
    live.stop()
finish()
