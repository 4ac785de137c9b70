#!/usr/bin/env python3
"""`abox oci create` killed (SIGKILL) at every point of its work, as a
crashing engine or an OOM kill would leave it, as TAP (this test is the
shim, tests/oci/shim.py): `delete --force` afterwards leaves nothing (no
sandbox record, cgroup, mount or folder of it), and the id can be used
again. The create records the container before its sandbox exists and
names the sandbox after it, so a create killed half-way is found.

usage: crash.py BUILD_DIR"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-crash-")


def sandboxes_left():
    p = os.path.join(root, "abox=state", "sandboxes")
    return sorted(os.listdir(p)) if os.path.isdir(p) else []


def traces(sandbox_ids):
    """cgroups and mounts that name any of the sandboxes"""
    found = []
    for base, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(base, d) for d in dirs if any(s in d for s in sandbox_ids)]
        if base.count("/") > 8:
            dirs[:] = []
    with open("/proc/self/mountinfo") as f:
        found += [ln for ln in f if any(s in ln for s in sandbox_ids) or root in ln]
    return found


def reap_all():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


try:
    b = bundle("b", ["/bin/sleep", "60"])
    seen = set()
    bad = []
    # from at once to after the create would have ended (≈ 20 ms here)
    for delay_ms in list(range(0, 40)) + [60, 100]:
        cid = f"c{delay_ms}"
        p = subprocess.Popen([shim.ABOX, "oci", "--root", root, "--log", log, "create", "--bundle", b, cid],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay_ms / 1000)
        p.send_signal(signal.SIGKILL)
        p.wait()
        seen.update(sandboxes_left())
        d = oci("delete", "--force", cid)
        time.sleep(0.05)
        reap_all()
        left = [x for x in os.listdir(root) if "=" not in x] if os.path.isdir(root) else []
        if d.returncode != 0 or sandboxes_left() or left:
            bad.append((delay_ms, d, sandboxes_left(), left))
    check("create killed after 0-100 ms, then delete --force: no container, no sandbox left", not bad, bad)
    check("... and none of the sandboxes made on the way left a cgroup or mount", not traces(seen),
          traces(seen))

    # the id is free again, and a container made with it runs
    r, pid, _ = create("c10", b)
    s = oci("start", "c10")
    check("an id whose create was killed can be created and started again", r.returncode == 0
          and s.returncode == 0, (r, s))
    oci("kill", "c10", "KILL")
    reap(pid)
    oci("delete", "c10")

    # state of a container whose create was killed after its record: the
    # container is reported (and stopped when no sandbox was made)
    os.makedirs(os.path.join(root, "half"))
    st = oci("state", "half")
    d = oci("delete", "--force", "half")
    check("a folder without a record (a create killed at its first step): state says it does not exist, "
          "delete --force removes it", st.returncode != 0 and "does not exist" in st.stderr
          and d.returncode == 0 and not os.path.exists(os.path.join(root, "half")), (st, d))
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
