#!/usr/bin/env python3
"""`abox oci` as runc's callers meet it, as TAP: `--version` in the three
lines go-runc parses, `spec` writing a config.json that abox's reader and
both of its peers take (crun and runc run a busybox bundle from it, as
made), never overwriting one; the log in runc's JSON form (level, msg,
time) with the error on stderr too; the entry point named runc.

usage: cli.py BUILD_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from harness import broke, check, finish  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
ABOX = os.path.join(BUILD, "abox")


def oci(*args, argv0=None, cwd=None):
    cmd = [argv0 or ABOX] + ([] if argv0 else ["oci"]) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=60)


work = tempfile.mkdtemp(prefix="abox-oci-cli-")
try:
    r = oci("--version")
    lines = r.stdout.splitlines()
    check("--version: runc's three lines (runc version, commit, spec)",
          r.returncode == 0 and len(lines) == 3 and lines[0].startswith("runc version ")
          and lines[1].startswith("commit: ") and lines[2].startswith("spec: 1."), r)

    bundle = os.path.join(work, "bundle")
    os.makedirs(os.path.join(bundle, "rootfs", "bin"))
    r = oci("spec", "--bundle", bundle)
    cfg_path = os.path.join(bundle, "config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
    check("spec --bundle DIR: a config.json with abox's confinement",
          r.returncode == 0 and cfg.get("root", {}).get("path") == "rootfs"
          and cfg.get("process", {}).get("noNewPrivileges") is True
          and "CAP_SYS_ADMIN" not in cfg["process"]["capabilities"]["bounding"]
          and "/proc/kcore" in cfg["linux"]["maskedPaths"], (r, cfg))
    before = open(cfg_path).read()
    r = oci("spec", "--bundle", bundle)
    check("spec again: refused (exit 1, saying it exists), the file as it was",
          r.returncode == 1 and "exists" in r.stderr and open(cfg_path).read() == before, r)
    r = oci("spec", "--rootless", cwd=work)
    rl = json.load(open(os.path.join(work, "config.json")))
    check("spec --rootless (in the current folder): a user namespace mapping this user, no network one",
          r.returncode == 0 and {"type": "user"} in rl["linux"]["namespaces"]
          and {"type": "network"} not in rl["linux"]["namespaces"]
          and rl["linux"]["uidMappings"][0]["hostID"] == os.getuid(), rl)

    # the config as written, with a command of busybox's, run by the peers
    shutil.copy("/bin/busybox", os.path.join(bundle, "rootfs", "bin", "busybox"))
    for d in ("proc", "dev", "sys", "tmp"):
        os.makedirs(os.path.join(bundle, "rootfs", d), exist_ok=True)
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = ["/bin/busybox", "sh", "-c", "echo hi; /bin/busybox id -u; /bin/busybox hostname"]
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    for peer in ("crun", "runc"):
        state = os.path.join(work, peer + "-state")
        cmd = [peer, "--root", state, "run", "--bundle", bundle, f"abox-oci-{os.getpid()}"]
        if peer == "crun":
            # crun refuses hybrid cgroup hosts (v1 controllers beside a
            # v2 mount): in a mount namespace of its own it sees cgroup2
            # alone, and makes no cgroup (the spec is what is tried here)
            cmd = ["unshare", "-m", "sh", "-c", 'mount --make-rprivate / && mount -t cgroup2 none /sys/fs/cgroup'
                   ' && exec "$@"', "sh", peer, "--cgroup-manager=disabled"] + cmd[1:]
        r = subprocess.run(cmd,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        check(f"{peer} runs a bundle from abox's spec", r.returncode == 0 and r.stdout == "hi\n0\nabox\n", r)

    log = os.path.join(work, "log.json")
    r = oci("--log", log, "--log-format", "json", "no-such-command")
    entries = [json.loads(ln) for ln in open(log)] if os.path.exists(log) else []
    check("--log FILE --log-format json: the error as one JSON line (level, msg, time), and on stderr",
          r.returncode == 1 and len(entries) == 1 and entries[0]["level"] == "error"
          and "no-such-command" in entries[0]["msg"] and entries[0]["time"].endswith("Z")
          and "no-such-command" in r.stderr, (r, entries))
    r = oci("--log-format", "xml", "spec")
    check("an unknown log format: refused by name", r.returncode == 1 and "invalid log-format: xml" in r.stderr, r)
    r = oci("-root=relative", "spec")
    check("-root=VALUE (one dash, =) is read as runc reads it; a relative root is refused",
          r.returncode == 1 and "absolute" in r.stderr, r)
    link = os.path.join(work, "runc")
    os.symlink(ABOX, link)
    r = oci("--version", argv0=link)
    check("a link named runc is the OCI command line", r.returncode == 0 and r.stdout.startswith("runc version "), r)
except Exception:
    broke()
finally:
    shutil.rmtree(work, ignore_errors=True)
finish()
