#!/usr/bin/env python3
"""A config's device nodes (linux.devices) under its device rules
(linux.resources.devices), as TAP (this test is the shim,
tests/oci/shim.py): the nodes the rules allow are made in the container's
/dev with the config's type, numbers, mode and owner, in folders made for
them; a node no rule allows is made and opens nothing (as runc's rules
start from deny; /dev is then nodev, the allowed nodes bound in), one
they allow only half (read or write) is refused by name, as are paths outside /dev, the host's memory devices and a node that would
replace one of abox's own with another device; under abox's confinement
a block device is left out, said in the log. Nothing is left behind by a
refused create, and the container still cannot make a node itself.

usage: devices.py BUILD_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import broke, check, finish  # noqa: E402

import shim  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
work, root, log = shim.init(BUILD, "abox-oci-devices-")

DENY_ALL = {"allow": False, "access": "rwm"}


def with_devices(devices, rules=None):
    def edit(c):
        c["linux"]["devices"] = devices
        if rules is not None:
            c["linux"].setdefault("resources", {})["devices"] = rules
    return edit


run = shim.run_to_end


def refused(name, edit, words):
    before = sorted(os.listdir(root))
    code, out = run(name, ["/bin/sh", "-c", "true"], edit)
    return code is None and words in out and sorted(os.listdir(root)) == before, out


try:
    nodes = [{"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3, "fileMode": 0o620, "uid": 1000, "gid": 5},
             {"path": "/dev/sub/dir/myzero", "type": "c", "major": 1, "minor": 5},
             {"path": "/dev/myfifo", "type": "p", "fileMode": 0o600},
             {"path": "/dev/null", "type": "c", "major": 1, "minor": 3}]
    script = ("for f in /dev/mynull /dev/sub/dir/myzero /dev/myfifo /dev/null; do "
              "stat -c '%n %F %t:%T %a %u:%g' $f; done; echo hi > /dev/mynull && echo wrote-null; "
              "head -c 2 /dev/sub/dir/myzero | wc -c")
    allow_mem = [{"allow": True, "type": "c", "major": 1, "access": "rwm"}]
    code, out = run("nodes", ["/bin/sh", "-c", script], with_devices(nodes, allow_mem))
    lines = out.splitlines()
    check("linux.devices: each node made in /dev with its type, numbers, mode and owner (folders made for it)",
          code == 0 and "/dev/mynull character special file 1:3 620 1000:5" in lines
          and "/dev/sub/dir/myzero character special file 1:5 666 0:0" in lines
          and "/dev/myfifo fifo 0:0 600 0:0" in lines, (code, out))
    check("... they work (written, read), and abox's own /dev/null listed as itself stays",
          "wrote-null" in lines and "2" in lines and "/dev/null character special file 1:3 666 0:0" in lines,
          (code, out))

    rules = [DENY_ALL, {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]
    code, out = run("rules", ["/bin/sh", "-c", "ls /dev/mynull /dev/sub/dir/myzero 2>&1; echo x > /dev/null && "
                              "echo null-ok; echo x > /dev/mynull && echo mynull-ok; head -c 1 /dev/sub/dir/myzero "
                              ">/dev/null 2>/dev/null && echo OPENED; grep ' /dev ' /proc/self/mountinfo"],
                    with_devices(nodes[:2], rules))
    check("linux.resources.devices: a node the rules deny is made (as runc makes it) and opens nothing, an "
          "allowed one works, abox's own stay", code is not None and "/dev/mynull" in out
          and "/dev/sub/dir/myzero" in out and "No such file" not in out and "OPENED" not in out
          and "mynull-ok" in out and "null-ok" in out, (code, out))
    check("... /dev is then nodev (the allowed nodes bound over themselves)",
          " /dev " in out and "nodev" in out.split(" /dev ")[1].split()[0], out)

    code, out = run("norules", ["/bin/sh", "-c", "ls /dev/mynull 2>&1; head -c 1 /dev/mynull 2>&1"],
                    with_devices(nodes[:1]))
    check("a node no rule allows (no linux.resources.devices) is made and opens nothing", code is not None
          and "No such file" not in out and "Permission denied" in out, (code, out))
    ok, out = refused("mem", with_devices([{"path": "/dev/mem", "type": "c", "major": 1, "minor": 1}], allow_mem),
                      "linux.devices[0]: '/dev/mem' (c 1:1) is the host's memory or I/O ports")
    check("the host's memory (c 1:1): refused by name, nothing left", ok, out)
    ok, out = refused("slashes", with_devices([{"path": "/dev//shm/x", "type": "c", "major": 1, "minor": 3}]),
                      "linux.devices[0].path: '/dev//shm/x'")
    check("a path with an empty part (/dev//shm/x): refused by name", ok, out)
    open(log, "w").close()

    def confined_block(c):
        with_devices([{"path": "/dev/hostdisk", "type": "b", "major": 7, "minor": 0}, nodes[0]],
                     [{"allow": True, "access": "rwm"}])(c)
        c["annotations"] = {"abox.confinement": "abox"}
    code, out = run("confined", ["/bin/sh", "-c", "ls /dev/hostdisk /dev/mynull 2>&1"], confined_block)
    check("under abox's confinement a block device is left out (said in the log), a character one made",
          code is not None and "hostdisk: No such file or directory" in out and "/dev/mynull" in out
          and "hostdisk' left out (abox's confinement)" in open(log).read(),
          (code, out, open(log).read()[-600:]))
    ok, out = refused("half", with_devices(nodes[:1], [DENY_ALL, {"allow": True, "type": "c", "major": 1,
                                                                 "minor": 3, "access": "r"}]),
                      "linux.resources.devices: c 1:3 ('/dev/mynull') may only be read")
    check("a node the rules let be read only: refused by name, nothing left", ok, out)
    ok, out = refused("outside", with_devices([{"path": "/mnt/null", "type": "c", "major": 1, "minor": 3}]),
                      "linux.devices[0].path: '/mnt/null': abox makes device nodes in /dev only")
    check("a node outside /dev: refused by name, nothing left", ok, out)
    ok, out = refused("pts", with_devices([{"path": "/dev/pts/9", "type": "c", "major": 136, "minor": 9}]),
                      "linux.devices[0].path: '/dev/pts/9'")
    check("a node in the container's devpts: refused by name", ok, out)
    ok, out = refused("clash", with_devices([{"path": "/dev/null", "type": "c", "major": 1, "minor": 5}], allow_mem),
                      "linux.devices: '/dev/null' is abox's own and another device")
    check("a node over abox's /dev/null with other numbers: refused by name, nothing left", ok, out)

    # the container still cannot make nodes of its own, nor use one it
    # brings in its root (nodev)
    code, out = run("mknod", ["/bin/sh", "-c", "mknod /dev/sda b 8 0; echo rc=$?"], with_devices([]))
    check("the container's root cannot make a device node itself (no CAP_MKNOD)",
          code == 0 and "rc=1" in out, (code, out))
except Exception:
    broke()
finally:
    shim.cleanup()
finish()
