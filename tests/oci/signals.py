#!/usr/bin/env python3
"""Signals that no process can catch, sent to a container, as TAP (this
test is the shim, tests/oci/shim.py): SIGSTOP stops the container's
process, as with runc, and never abox-init (which cannot pass it on: a
stopped init would leave exec, files and delete hanging); SIGCONT wakes
the process; SIGKILL ends the container.

usage: signals.py BUILD_DIR"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402
from shim import bundle, create, oci, reap  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-signals-")


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def until(cond, secs=5):
    end = time.time() + secs
    while time.time() < end and not cond():
        time.sleep(0.02)
    return cond()


try:
    b = bundle("b", ["/bin/sleep", "60"])
    r, pid, _ = create("stop", b)
    oci("start", "stop")
    main = children(pid)[0] if until(lambda: children(pid)) else 0
    k = oci("kill", "stop", "STOP")
    stopped = until(lambda: proc_state(main) == "T")
    check("kill SIGSTOP: the container's process stops, abox-init does not", k.returncode == 0 and stopped
          and proc_state(pid) != "T", (k, proc_state(main), proc_state(pid)))
    e = oci("exec", "stop", "/bin/echo", "still-served")
    check("... and exec still works in it", e.returncode == 0 and "still-served" in e.stdout, e)
    c = oci("kill", "stop", "CONT")
    check("kill SIGCONT: the process runs again", c.returncode == 0 and until(lambda: proc_state(main) in ("S", "R")),
          (c, proc_state(main)))
    oci("kill", "stop", "KILL")
    check("kill SIGKILL ends the container", reap(pid) == -9 or proc_state(pid) is None, proc_state(pid))
    oci("delete", "stop")

    r, pid, _ = create("held", b)
    k = oci("kill", "held", "STOP")
    check("kill SIGSTOP before start: nothing to stop, init untouched, still created", k.returncode == 0
          and proc_state(pid) != "T" and shim.state("held").get("status") == "created", (k, proc_state(pid)))
    oci("delete", "--force", "held")
    reap(pid)
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
