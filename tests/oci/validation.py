#!/usr/bin/env python3
"""The OCI runtime-tools validation suite (opencontainers/runtime-tools'
validation/, from Debian's source package, built with Debian's Go and Go
library packages, offline) run against abox and, side by side in the same
run, against Debian's crun and runc: a report of every test's result for
the three, as TAP.

    validation.py BUILD_DIR           the CI subset (SUBSET below): each
                                      test crun or runc passes, abox must
                                      pass
    validation.py BUILD_DIR --all     every test of the suite, reported;
                                      the same rule over all of them
    validation.py BUILD_DIR TEST...   those tests

Each runtime runs in a mount namespace of its own with its own --root;
the suite's bundles are made in a private TMPDIR and whatever a test
leaves (mounts, containers, folders) is removed after it. abox runs with
ABOX_OCI_CONFINEMENT=compat: the suite's configs are a container engine's
default (containerd's capabilities, noNewPrivileges false), which abox
refuses otherwise (docs/kubernetes.md). crun
runs with cgroup2 alone on /sys/fs/cgroup and its cgroup manager off (it
refuses this kind of hybrid host), so its cgroup tests fail by design.
The folders of the build are cached in $ABOX_TEST_CACHE (default
/var/cache/abox-test) and remade when missing."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
from harness import check, finish  # noqa: E402

# What CI runs: the tests abox passes today among those crun or runc pass
# on this kind of host (abox under abox.confinement=compat, as the suite's
# configs are a container engine's default). --all runs the whole suite;
# of the tests crun passes, abox refuses two by design: linux_ns_itype (a
# container in every namespace of the host's: no sandbox) and
# linux_rootfs_propagation (its configs grant CAP_SYS_ADMIN, which abox
# never gives a container; runc fails it here too).
SUBSET = ["config_updates_without_affect", "create", "default", "delete_resources", "hooks_stdin", "hostname",
          "kill", "kill_no_effect", "killsig", "linux_cgroups_cpus", "linux_cgroups_pids",
          "linux_cgroups_relative_cpus", "linux_cgroups_relative_pids", "linux_devices",
          "linux_masked_paths", "linux_mount_label", "linux_ns_path", "linux_ns_path_type", "linux_readonly_paths",
          "linux_seccomp", "linux_sysctl", "mounts", "process", "process_oom_score_adj", "process_user",
          "root_readonly_true", "state"]
# and tests abox passes that neither peer passes here (user namespaces:
# both fail these on this kind of host), kept as abox's own regressions
ABOX_ALSO = ["linux_ns_nopath", "linux_uid_mappings"]
RUNTIMES = ("abox", "crun", "runc")
CACHE = os.environ.get("ABOX_TEST_CACHE", "/var/cache/abox-test")


def build(src, tests):
    """The validation programs and runtimetest, built once per source,
    test list and tap package."""
    tap = os.path.join(HERE, "tap-go", "tap.go")
    key = hashlib.sha256((open(tap).read() + src + " ".join(sorted(tests))).encode()).hexdigest()[:12]
    out = os.path.join(CACHE, "runtime-tools-build", key)
    if os.path.exists(os.path.join(out, ".done")):
        return out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    gopath = tempfile.mkdtemp(prefix="abox-rt-gopath-")
    try:
        tree = os.path.join(gopath, "src", "github.com", "opencontainers", "runtime-tools")
        shutil.copytree(src, tree, symlinks=True)
        shutil.copytree(os.path.join(HERE, "tap-go"), os.path.join(gopath, "src", "github.com", "mndrix", "tap-go"))
        env = dict(os.environ, GOPATH=gopath + ":/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
                   GOCACHE=os.path.join(CACHE, "runtime-tools-build", "gocache"))
        for t in tests:
            subprocess.run(["go", "build", "-o", os.path.join(out, t + ".t"), "./validation/" + t], cwd=tree,
                           env=env, check=True)
        subprocess.run(["go", "build", "-tags", "netgo osusergo", "-o", os.path.join(out, "runtimetest"),
                        "./cmd/runtimetest"], cwd=tree, env=dict(env, CGO_ENABLED="0"), check=True)
    finally:
        shutil.rmtree(gopath, ignore_errors=True)
    open(os.path.join(out, ".done"), "w").close()
    return out


def classify(tap, rc):
    """pass, fail or skip (all of its tests skipped). A program that
    stops before any test line (the hook tests do, when their container
    fails) says why in a YAML block with an "error" under an empty plan."""
    lines = tap.splitlines()
    ran = [ln for ln in lines if ln.startswith("ok") and "# SKIP" not in ln]
    if rc != 0 or any(ln.startswith("not ok") for ln in lines) or (not ran and '"error"' in tap):
        return "fail"
    return "pass" if ran else "skip"


def cgroup_testdirs():
    """The cgroup folders the suite's cgroup tests name (their configs'
    cgroupsPath is /testdir/cgrouptest: runc and crun make it at each
    hierarchy's root)."""
    import glob
    return set(glob.glob("/sys/fs/cgroup/*/testdir") + glob.glob("/sys/fs/cgroup/testdir"))


CGROUPS_BEFORE = cgroup_testdirs()


def clean(tmp, wrapper):
    """What a test left: its containers, mounts below TMPDIR, folders, the
    cgroups its config named."""
    r = subprocess.run([wrapper, "list", "-q"], capture_output=True, text=True)
    for cid in r.stdout.split():
        subprocess.run([wrapper, "delete", "--force", cid], capture_output=True)
    # what delete missed (a runtime's waiting create whose test timed
    # out, a process of a container sharing this pid namespace): ours by
    # their command line naming this test's folder, or their root in it
    work = os.path.dirname(tmp)
    for pid in (d for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            top = os.readlink(f"/proc/{pid}/root")
        except OSError:
            continue
        if work in cmd or top.startswith(tmp + "/"):
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
    with open("/proc/self/mountinfo") as f:
        mps = [ln.split()[4] for ln in f if " " + tmp in ln]
    for mp in sorted(mps, reverse=True):
        subprocess.run(["umount", "-l", mp], capture_output=True)
    for e in os.listdir(tmp):
        subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(tmp, e)], capture_output=True)
    for d in cgroup_testdirs() - CGROUPS_BEFORE:
        for base, dirs, _ in sorted(os.walk(d), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(base)
            except OSError:
                pass


def run_one_runtime(rt, built, src, work, tests):
    """Inside this runtime's own mount namespace: every test, its result."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir, exist_ok=True)
    wrapper = os.path.join(bindir, rt)
    root = os.path.join(work, "roots", rt)
    cmd = {"abox": f"ABOX_OCI_CONFINEMENT=compat exec {os.path.join(os.path.abspath(sys.argv[1]), 'abox')} oci "
                   f"--root {root}",
           "crun": f"exec crun --cgroup-manager=disabled --root {root}",
           "runc": f"exec runc --root {root}"}[rt]
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\n{cmd} "$@"\n')
    os.chmod(wrapper, 0o755)
    cwd = os.path.join(work, "cwd-" + rt)
    os.makedirs(cwd)
    os.symlink(os.path.join(src, "rootfs-amd64.tar.gz"), os.path.join(cwd, "rootfs-amd64.tar.gz"))
    shutil.copy(os.path.join(built, "runtimetest"), os.path.join(cwd, "runtimetest"))
    tmp = os.path.join(work, "tmp-" + rt)
    os.makedirs(tmp)
    results = {}
    for t in tests:
        start = time.time()
        try:
            p = subprocess.run([os.path.join(built, t + ".t")], cwd=cwd, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, RUNTIME=wrapper, TMPDIR=tmp), stdin=subprocess.DEVNULL)
            res = classify(p.stdout, p.returncode)
            detail = (p.stdout[-1500:] + p.stderr[-500:]) if res == "fail" else ""
        except subprocess.TimeoutExpired:
            res, detail = "fail", "timed out after 120 s"
        results[t] = {"result": res, "seconds": round(time.time() - start, 1), "detail": detail}
        clean(tmp, wrapper)
    return results


if len(sys.argv) > 2 and sys.argv[2] == "--runtime":
    # the inner part: one runtime, in its namespace (see below)
    rt, built, src, work, out = sys.argv[3:8]
    tests = sys.argv[8:]
    if rt == "crun":
        subprocess.run(["mount", "-t", "cgroup2", "none", "/sys/fs/cgroup"], check=True)
    with open(out, "w") as f:
        json.dump(run_one_runtime(rt, built, src, work, tests), f)
    sys.exit(0)

full = "--all" in sys.argv[2:]
work = tempfile.mkdtemp(prefix="abox-rt-")
try:
    src = subprocess.run(["bash", os.path.join(SRC, "scripts", "debian-source.sh"),
                          "golang-github-opencontainers-runtime-tools", "sid", os.path.join(CACHE, "src")],
                         capture_output=True, text=True)
    check("the runtime-tools source from Debian (its sid source package)", src.returncode == 0, src.stderr)
    src = src.stdout.strip()
    named = [a for a in sys.argv[2:] if not a.startswith("--")]
    tests = named or (sorted(d for d in os.listdir(os.path.join(src, "validation"))
                             if os.path.isfile(os.path.join(src, "validation", d, d + ".go"))) if full else SUBSET + ABOX_ALSO)
    built = build(src, tests)
    check(f"{len(tests)} validation programs and runtimetest built with Debian's Go, offline", True)
    results = {}
    for rt in RUNTIMES:
        out = os.path.join(work, rt + ".json")
        subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                        sys.argv[1], "--runtime", rt, built, src, os.path.join(work, rt), out] + tests,
                       timeout=7200)
        results[rt] = json.load(open(out)) if os.path.exists(out) else {}
    print(f"# {'test':34} {'abox':6} {'crun':6} {'runc':6}")
    for t in tests:
        print("# " + f"{t:34} " + " ".join(f"{results[rt].get(t, {}).get('result', '-'):6}" for rt in RUNTIMES))
    for rt in RUNTIMES:
        n = {k: sum(1 for v in results[rt].values() if v["result"] == k) for k in ("pass", "fail", "skip")}
        print(f"# {rt}: {n['pass']} pass, {n['fail']} fail, {n['skip']} skip")
    for t in tests:
        ab = results["abox"].get(t, {})
        peer = next((rt for rt in ("crun", "runc") if results[rt].get(t, {}).get("result") == "pass"), None)
        if peer:
            check(f"{t}: abox passes, as {peer} does", ab.get("result") == "pass", ab.get("detail", ""))
        elif t in ABOX_ALSO:
            check(f"{t}: abox passes (neither crun nor runc does here)", ab.get("result") == "pass",
                  ab.get("detail", ""))
        elif not full and not named:
            check(f"{t}: crun or runc passes it here (the subset's premise)", False, results["crun"].get(t))
finally:
    with open("/proc/self/mountinfo") as f:
        for mp in sorted((ln.split()[4] for ln in f if " " + work in ln), reverse=True):
            subprocess.run(["umount", "-l", mp], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
finish()
