#!/usr/bin/env python3
"""Runs the remote backend's C tests against a live aboxd: starts one on a
free loopback port with a fresh API key, points ABOX_REMOTE/ABOX_API_KEY at
it, runs the criterion binary (TAP on stdout), stops the daemon by its pid
and checks that the tests left no sandbox behind.

usage: run.py BUILD_DIR TEST_BINARY"""
import os
import subprocess
import sys

from live_daemon import LiveDaemon, free_port

build, binary = sys.argv[1], sys.argv[2]
d = LiveDaemon(build, "aboxd-remote.log")

rc = 1
try:
    env = dict(os.environ, ABOX_REMOTE=d.url, ABOX_API_KEY=d.key, ABOX_TEST_DEAD_PORT=str(free_port()))
    rc = subprocess.call([binary, "--tap", "-j1"], env=env)
    left = d.listed()
    if left:
        print(f"# the tests left sandboxes behind: {[s['sandboxID'] for s in left]}", flush=True)
        rc = rc or 1
finally:
    d.stop()
sys.exit(rc)
