#!/usr/bin/env python3
"""Admission limits of a live aboxd, as TAP: per-sandbox maxima (the
host's size when unset, the "limits" of the config or the ABOXD_LIMIT_*
environment when set) answer 400 naming the limit; per-key quotas
(concurrent sandboxes in E2B's 429 shape, memory, disk, snapshot
storage) and the host's capacity (overcommit, reserve) answer 429
naming the limit, and a key's quotas leave other keys alone; a resume
over the cap stays paused; no refused request leaves a sandbox or a
snapshot behind.

usage: admission.py BUILD_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Daemon, check, finish  # noqa: E402

build = sys.argv[1]


def mem_total_mb():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) >> 10
    return 0


def expect(d, name, path, body, key, status, words):
    st, b = d.req("POST", path, body, key)
    msg = b.get("message", "") if isinstance(b, dict) else str(b)
    ok = st == status and isinstance(b, dict) and b.get("code") == status and all(w in msg for w in words)
    check(f"{name}: {status} naming {words}", ok, (st, b))
    if st == 201 and isinstance(b, dict) and b.get("sandboxID"):
        d.req("DELETE", f"/sandboxes/{b['sandboxID']}", headers=key)
    return st, b


def create(d, key, **kw):
    body = {"templateID": "base", "timeout": 120}
    body.update(kw)
    st, b = d.req("POST", "/v2/sandboxes", body, key)
    return b.get("sandboxID") if st == 201 else None, (st, b)


# 1. nothing configured: the host's own size bounds one sandbox
with Daemon(build, "admission-host") as d:
    A = d.key(0)
    before = d.sandboxes()
    expect(d, "memoryMB 1 TiB on this host", "/v2/sandboxes", {"templateID": "base", "memoryMB": 1048576}, A, 400,
           ["memoryMB", "host's memory"])
    expect(d, "diskSizeMB 4 TiB", "/v2/sandboxes", {"templateID": "base", "diskSizeMB": 4194304}, A, 400,
           ["diskSizeMB", "filesystem"])
    expect(d, f"cpuCount {os.cpu_count() + 1}", "/v2/sandboxes", {"templateID": "base", "cpuCount": os.cpu_count() + 1},
           A, 400, ["cpuCount", "host's cpus"])
    sid, got = create(d, A, memoryMB=min(1024, mem_total_mb()), cpuCount=os.cpu_count())
    check("a sandbox of the host's size is made", sid, got)
    if sid:
        d.req("DELETE", f"/sandboxes/{sid}", headers=A)
    check("the refused creates left no sandbox", d.sandboxes() == before, (before, d.sandboxes()))

# 2. configured limits: per sandbox in the config file, per key from the environment
made = []
with Daemon(build, "admission-key", keys=3,
            extra_config={"limits": {"sandboxMemoryMB": 1024, "sandboxTimeoutSeconds": 3600, "keySandboxes": 5}},
            env={"ABOXD_LIMIT_KEY_SANDBOXES": "2", "ABOXD_LIMIT_KEY_MEMORY_MB": "768",
                 "ABOXD_LIMIT_KEY_DISK_MB": "1536"}) as d:
    A, B, C = d.key(0), d.key(1), d.key(2)
    before = d.sandboxes()
    expect(d, "memoryMB 2048 over limits.sandboxMemoryMB", "/v2/sandboxes",
           {"templateID": "base", "memoryMB": 2048}, A, 400, ["memoryMB", "limits.sandboxMemoryMB"])
    expect(d, "timeout 7200 over limits.sandboxTimeoutSeconds", "/v2/sandboxes",
           {"templateID": "base", "timeout": 7200}, A, 400, ["timeout", "limits.sandboxTimeoutSeconds"])

    s1, got = create(d, A, memoryMB=256, diskSizeMB=256)
    s2, got2 = create(d, A, memoryMB=256, diskSizeMB=256)
    made += [s for s in (s1, s2) if s]
    check("key A: two sandboxes within its quotas", s1 and s2, (got, got2))
    expect(d, "a third of key A: the concurrency cap (the environment wins over the file)", "/v2/sandboxes",
           {"templateID": "base", "memoryMB": 128, "diskSizeMB": 128}, A, 429,
           ["maximum number of concurrent sandboxes (2)", "limits.keySandboxes"])
    if s1:
        expect(d, "a fork of key A's sandbox: the concurrency cap", f"/sandboxes/{s1}/fork", {"count": 1}, A, 429,
               ["concurrent sandboxes", "limits.keySandboxes"])
    s3, got = create(d, B, memoryMB=128, diskSizeMB=128)
    made += [s3] if s3 else []
    check("key B is not held to key A's count", s3, got)
    if s2:
        d.req("DELETE", f"/sandboxes/{s2}", headers=A)
        made.remove(s2)
    s4, got = create(d, A, memoryMB=256, diskSizeMB=256)
    made += [s4] if s4 else []
    check("key A may create again once one of its sandboxes is gone", s4, got)
    if s1 and s4:
        st, _ = d.req("POST", f"/sandboxes/{s1}/pause", {"memory": False}, A)
        s5, got = create(d, A, memoryMB=128, diskSizeMB=128)
        made += [s5] if s5 else []
        check("a paused sandbox frees its running slot", st == 204 and s5, (st, got))
        expect(d, "resuming it over the cap (connect): 429", f"/sandboxes/{s1}/connect", {"timeout": 60}, A, 429,
               ["concurrent sandboxes", "limits.keySandboxes"])
        st, info = d.req("GET", f"/sandboxes/{s1}", headers=A)
        check("... and it stays paused", st == 200 and info.get("state") == "paused", (st, info))
        if s5:
            d.req("DELETE", f"/sandboxes/{s5}", headers=A)
            made.remove(s5)
        st, _ = d.req("POST", f"/sandboxes/{s1}/connect", {"timeout": 60}, A)
        check("with room again it resumes (201)", st == 201, st)

    c1, got = create(d, C, memoryMB=512, diskSizeMB=1024)
    made += [c1] if c1 else []
    check("key C: one sandbox of 512 MiB and 1024 MiB of disk", c1, got)
    expect(d, "key C: 512 MiB more is over limits.keyMemoryMB (768)", "/v2/sandboxes",
           {"templateID": "base", "memoryMB": 512, "diskSizeMB": 128}, C, 429, ["memory", "limits.keyMemoryMB"])
    expect(d, "key C: 1024 MiB more disk is over limits.keyDiskMB (1536)", "/v2/sandboxes",
           {"templateID": "base", "memoryMB": 128, "diskSizeMB": 1024}, C, 429, ["disk", "limits.keyDiskMB"])
    c2, got = create(d, C, memoryMB=256, diskSizeMB=512)
    made += [c2] if c2 else []
    check("key C: what still fits both is made", c2, got)
    left = d.sandboxes() - before
    check("only the admitted sandboxes exist", left == set(made), (left, made))

# 3. snapshot storage per key
with Daemon(build, "admission-snap", extra_config={"limits": {"keySnapshotMB": 4}}) as d:
    A, B = d.key(0), d.key(1)
    sid, got = create(d, A, secure=True)
    check("a sandbox to snapshot", sid, got)
    token = got[1].get("envdAccessToken")
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983", "Content-Type": "application/octet-stream",
         "X-Access-Token": token or ""}
    st, _ = d.req("POST", "/files?path=/home/user/big.bin", os.urandom(6 << 20), h)
    check("6 MiB of data written into it", st == 200, st)
    st, b = d.req("GET", "/snapshots", headers=A)
    n0 = len(b) if st == 200 else -1
    expect(d, "a snapshot of 6 MiB is over limits.keySnapshotMB (4)", f"/sandboxes/{sid}/snapshots", {"name": "s1"},
           A, 429, ["snapshots", "limits.keySnapshotMB"])
    st, b = d.req("GET", "/snapshots", headers=A)
    check("... and is not kept", st == 200 and len(b) == n0, (st, b))
    st, v = d.req("GET", "/v2/sandboxes", headers=A)
    check("the source still runs", st == 200 and any(s["sandboxID"] == sid and s["state"] == "running" for s in v),
          (st, v))

# 4. the host's capacity: memory limits within hostOvercommit times the host's memory, a reserve kept free
with Daemon(build, "admission-capacity", extra_config={"limits": {"hostOvercommit": 1}}) as d:
    A, B = d.key(0), d.key(1)
    before = d.sandboxes()
    big = mem_total_mb() - 256
    h1, got = create(d, A, memoryMB=big)
    check(f"a sandbox of {big} MiB fits the host once", h1, got)
    expect(d, "another 512 MiB (another key) is over the host's capacity", "/v2/sandboxes",
           {"templateID": "base", "memoryMB": 512}, B, 429, ["host capacity", "limits.hostOvercommit"])
    if h1:
        d.req("DELETE", f"/sandboxes/{h1}", headers=A)
    h2, got = create(d, B, memoryMB=512)
    check("room again once it is gone", h2, got)
    if h2:
        d.req("DELETE", f"/sandboxes/{h2}", headers=B)
    check("the refused create left no sandbox", d.sandboxes() == before, (before, d.sandboxes()))
with Daemon(build, "admission-reserve", extra_config={"limits": {"hostReserveMB": 1 << 39}}) as d:
    expect(d, "a reserve larger than the host: every create is refused", "/v2/sandboxes", {"templateID": "base"},
           d.key(0), 429, ["host capacity", "limits.hostReserveMB"])


# 5. a bad limit is a startup error naming it
def refused_start(name, case, word, **daemon):
    with Daemon(build, name, **daemon) as bad:
        bad.proc.wait(timeout=10)
        log = open(bad.log.name).read()
        check(case, bad.proc.returncode not in (0, None) and word in log, (bad.proc.returncode, log))


refused_start("admission-bad", "ABOXD_LIMIT_KEY_SANDBOXES=lots: aboxd refuses to start, naming it",
              "ABOXD_LIMIT_KEY_SANDBOXES", env={"ABOXD_LIMIT_KEY_SANDBOXES": "lots"})
refused_start("admission-bad-file", "an unknown limit in the config file: aboxd refuses to start, naming it",
              "limits.keySandboxez", extra_config={"limits": {"keySandboxez": 3}})
finish()
