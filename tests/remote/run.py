#!/usr/bin/env python3
"""Runs the remote backend's C tests against a live aboxd: starts one on a
free loopback port with a fresh API key, points ABOX_REMOTE/ABOX_API_KEY at
it, runs the criterion binary (TAP on stdout), stops the daemon by its pid
and checks that the tests left no sandbox behind.

usage: run.py BUILD_DIR TEST_BINARY"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from harness import Daemon, free_port  # noqa: E402

build, binary = sys.argv[1], sys.argv[2]
d = Daemon(build, "remote", keys=1)

rc = 1
try:
    env = dict(os.environ, ABOX_REMOTE=d.base, ABOX_API_KEY=d.keys[0], ABOX_TEST_DEAD_PORT=str(free_port()))
    rc = subprocess.call([binary, "--tap", "-j1"], env=env)
    left = d.listed()
    if left:
        print(f"# the tests left sandboxes behind: {[s['sandboxID'] for s in left]}", flush=True)
        rc = rc or 1
finally:
    d.stop()
sys.exit(rc)
