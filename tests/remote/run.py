#!/usr/bin/env python3
"""Runs the remote backend's C tests against a live aboxd: starts one on a
free loopback port with a fresh API key, points ABOX_REMOTE/ABOX_API_KEY at
it, runs the criterion binary (TAP on stdout), stops the daemon by its pid
and checks that the tests left no sandbox behind.

usage: run.py BUILD_DIR TEST_BINARY"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

build, binary = sys.argv[1], sys.argv[2]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


key = "e2b_" + os.urandom(20).hex()
port = free_port()
conf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
json.dump({"port": port, "apiKeys": [key], "adminPort": 0}, conf)
conf.close()
log = open(os.path.join(build, "aboxd-remote.log"), "w")
daemon = subprocess.Popen([os.path.join(build, "aboxd"), "--config", conf.name], stderr=log)
base = f"http://127.0.0.1:{port}"


def listed():
    r = urllib.request.Request(base + "/v2/sandboxes?state=running,paused", headers={"X-API-Key": key})
    with urllib.request.urlopen(r, timeout=10) as resp:
        return json.loads(resp.read())


rc = 1
try:
    for _ in range(200):
        try:
            listed()
            break
        except OSError:
            time.sleep(0.05)
    env = dict(os.environ, ABOX_REMOTE=base, ABOX_API_KEY=key, ABOX_TEST_DEAD_PORT=str(free_port()))
    rc = subprocess.call([binary, "--tap", "-j1"], env=env)
    left = listed()
    if left:
        print(f"# the tests left sandboxes behind: {[s['sandboxID'] for s in left]}", flush=True)
        rc = rc or 1
        for s in left:
            urllib.request.urlopen(urllib.request.Request(base + "/sandboxes/" + s["sandboxID"], method="DELETE",
                                                          headers={"X-API-Key": key}), timeout=30)
finally:
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=20)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    os.unlink(conf.name)
    # what the product removes lazily (the layers of pauses and forks,
    # records of expired sandboxes) goes now, not at the next gc
    subprocess.run([os.path.join(build, "abox"), "gc", "-q"], capture_output=True, timeout=120)
sys.exit(rc)
