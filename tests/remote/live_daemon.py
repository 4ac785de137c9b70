"""A live aboxd for the remote tests: on a free loopback port with a fresh
API key, waited for, and stopped by its pid with everything it left
collected (the tests' sandboxes, then what the product removes lazily)."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class LiveDaemon:
    def __init__(self, build, log_name, **extra_conf):
        self.build = build
        self.key = "e2b_" + os.urandom(20).hex()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        conf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(dict({"port": port, "apiKeys": [self.key], "adminPort": 0}, **extra_conf), conf)
        conf.close()
        self.conf = conf.name
        log = open(os.path.join(build, log_name), "w")
        self.proc = subprocess.Popen([os.path.join(build, "aboxd"), "--config", self.conf], stderr=log)
        for _ in range(200):
            try:
                self.listed()
                break
            except OSError:
                time.sleep(0.05)

    def listed(self):
        r = urllib.request.Request(self.url + "/v2/sandboxes?state=running,paused", headers={"X-API-Key": self.key})
        with urllib.request.urlopen(r, timeout=10) as resp:
            return json.loads(resp.read())

    def kill_sandbox(self, sid):
        urllib.request.urlopen(urllib.request.Request(self.url + "/sandboxes/" + sid, method="DELETE",
                                                      headers={"X-API-Key": self.key}), timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            for s in self.listed():
                self.kill_sandbox(s["sandboxID"])
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.conf)
        # what the product removes lazily (the layers of pauses and forks,
        # records of expired sandboxes) goes now, not at the next gc
        subprocess.run([os.path.join(self.build, "abox"), "gc", "-q"], capture_output=True, timeout=120)
