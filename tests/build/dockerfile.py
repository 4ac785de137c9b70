"""`abox template build -f Dockerfile` without docker: every instruction
it runs, the step cache (hits, misses, --no-cache, a fully cached
rebuild kept as it is), multi-stage COPY --from, a failing RUN (its line
named, its log kept), instructions refused by name, and escapes from the
build context. Builds run with --network none; the images are a static
busybox imported as a template.

usage: dockerfile.py BUILD_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "net"))
from world import check, finish  # noqa: E402  (the TAP list the network tests keep)

BUILD = os.path.abspath(sys.argv[1])
ABOX = os.path.join(BUILD, "abox")
top = tempfile.mkdtemp(prefix="abox-dockerfile-")
STATE, RUN = os.path.join(top, "state"), os.path.join(top, "run")
ENV = dict(os.environ, ABOX_ROOT=STATE, ABOX_RUNTIME_DIR=RUN)
APPLETS = ["sh", "cat", "ls", "mkdir", "echo", "id", "wc", "test", "stat", "touch", "rm", "pwd", "readlink"]


def abox(*args, timeout=300):
    return subprocess.run([ABOX, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def out(r):
    return r.stdout + r.stderr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def build(ctx, name, dockerfile, *opts):
    write(os.path.join(ctx, "Dockerfile"), dockerfile)
    return abox("template", "build", "--network", "none", *opts, "-f", os.path.join(ctx, "Dockerfile"), name, ctx)


def sh(template, cmd, *opts):
    r = abox("run", "-t", template, *opts, "--", "/bin/sh", "-c", cmd)
    return r.stdout if r.returncode == 0 else "ERROR " + out(r)


def inspect(name):
    r = abox("template", "inspect", "--json", name)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def base_template(name, usr_merged=False):
    """A static busybox as a template; usr_merged: /bin a symlink to
    usr/bin, as Debian has it."""
    root = os.path.join(top, "root-" + name)
    bindir = os.path.join(root, "usr/bin" if usr_merged else "bin")
    os.makedirs(bindir)
    os.makedirs(os.path.join(root, "etc"))
    shutil.copy("/bin/busybox", os.path.join(bindir, "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(bindir, a))
    if usr_merged:
        os.symlink("usr/bin", os.path.join(root, "bin"))
    write(os.path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n"
          "app:x:1234:2345::/srv:/bin/sh\n")
    write(os.path.join(root, "etc/group"), "root:x:0:\nuser:x:1000:\napps:x:2345:\ngrp:x:3456:\n")
    r = abox("template", "import", name, root)
    if r.returncode != 0:
        raise RuntimeError(out(r))


def sandboxes():
    r = abox("ls", "--json")
    try:
        data = json.loads(r.stdout or "[]")
    except ValueError:
        return []
    items = data if isinstance(data, list) else data.get("sandboxes", [])
    return [x.get("id") or x.get("sandboxID") for x in items]


def snapshots():
    lines = abox("snapshots", "ls").stdout.splitlines()[1:]
    return [ln.split()[0] for ln in lines if ln.strip()]


def leftovers():
    tmp = os.path.join(STATE, "build-tmp")
    left = os.listdir(tmp) if os.path.isdir(tmp) else []
    return left + sandboxes()


try:
    base_template("bb")
    base_template("deb", usr_merged=True)
    ctx = os.path.join(top, "ctx")
    write(os.path.join(ctx, "hello.txt"), "hello\n")
    write(os.path.join(ctx, "a.txt"), "a\n")
    write(os.path.join(ctx, "b.txt"), "b\n")
    write(os.path.join(ctx, "notes.md"), "left out\n")
    write(os.path.join(ctx, "sub/x.txt"), "x\n")
    write(os.path.join(ctx, "sub/deep/y.txt"), "y\n")
    write(os.path.join(ctx, "secret/key"), "do not copy\n")
    write(os.path.join(ctx, ".dockerignore"), "secret\n*.md\n")
    os.chmod(os.path.join(ctx, "a.txt"), 0o4755)  # setuid: never copied as such
    df = """# syntax=docker/dockerfile:1
ARG BASE=bb
FROM ${BASE} AS base
ENV GREETING=hi \\
    PATH=/bin
ENV OLD form with spaces
ARG WHO=world
LABEL org.example.name="demo app" version=1
EXPOSE 8080/tcp
WORKDIR /app
COPY hello.txt .
COPY *.txt /globbed/
COPY sub/ ./sub/
COPY . /all/
COPY --chown=user:user --chmod=0640 hello.txt /home/user/mine.txt
RUN echo "$GREETING $WHO" > /app/greeting
SHELL ["/bin/sh", "-ec"]
RUN test "$(id -u)" = 0 && echo "root ran this" > /app/ran
USER user
RUN id -u > /tmp/uid && cat /home/user/mine.txt
WORKDIR /home/user/work
ADD b.txt /app/added.txt

FROM bb
COPY --from=base /app/greeting /greeting
COPY --from=base /app/ran /ran
ENTRYPOINT ["/bin/cat"]
CMD ["/greeting"]
"""
    r = build(ctx, "demo", df, "--build-arg", "WHO=abox")
    check("a Dockerfile with every instruction builds", r.returncode == 0, out(r))
    check("RUN's output is shown", "step " in r.stderr and "hello" in r.stderr, r.stderr)
    info = inspect("demo")
    check("ENTRYPOINT + CMD: the template's command and start command",
          info.get("cmd") == ["/bin/cat", "/greeting"] and info.get("startCmd") == "'/bin/cat' '/greeting'", info)
    r = abox("run", "-t", "demo")
    check("ARG with --build-arg, ENV, RUN, multi-stage COPY --from: abox run prints 'hi abox'",
          r.stdout == "hi abox\n", out(r))
    check("SHELL and RUN as root", sh("demo", "cat /ran") == "root ran this\n", sh("demo", "cat /ran"))

    r = build(ctx, "stage1", df, "--build-arg", "WHO=abox", "--target", "base")
    check("--target builds a named stage (and everything it needs is cached)",
          r.returncode == 0 and "cached" in r.stderr, out(r))
    info = inspect("stage1")
    check("USER user and the last WORKDIR are the template's defaults",
          info.get("user") == "user" and info.get("workdir") == "/home/user/work", info)
    env = "\n".join(info.get("env", []))
    check("ENV (both forms) in the template's environment",
          "GREETING=hi" in env and "OLD=form with spaces" in env, info)
    check("WORKDIR made the folder; commands start there", sh("stage1", "pwd") == "/home/user/work\n",
          sh("stage1", "pwd"))
    check("COPY into WORKDIR (relative) and a folder's contents",
          sh("stage1", "cat /app/hello.txt /app/sub/x.txt /app/sub/deep/y.txt") == "hello\nx\ny\n",
          sh("stage1", "ls -R /app"))
    check("COPY with a glob", sh("stage1", "ls /globbed") == "a.txt\nb.txt\nhello.txt\n", sh("stage1", "ls /globbed"))
    listing = sh("stage1", "ls -a /all")
    check(".dockerignore leaves out a folder and *.md (and COPY . takes the rest)",
          "secret" not in listing and "notes.md" not in listing and "hello.txt" in listing, listing)
    st = sh("stage1", "stat -c '%u %g %a' /home/user/mine.txt; stat -c %u /home/user")
    check("COPY --chown/--chmod; the user's home stays the user's", st == "1000 1000 640\n1000\n", st)
    st = sh("stage1", "stat -c %a /all/a.txt")
    check("no setuid bit is copied from the context", st == "755\n", st)
    check("RUN as USER user", sh("stage1", "cat /tmp/uid") == "1000\n", sh("stage1", "cat /tmp/uid"))
    check("ADD of a local file", sh("stage1", "cat /app/added.txt") == "b\n", sh("stage1", "cat /app/added.txt"))

    # ---- the cache
    before = inspect("demo").get("version")
    r = build(ctx, "demo", df, "--build-arg", "WHO=abox")
    check("unchanged: every step cached, the template kept ('up to date')",
          r.returncode == 0 and "up to date" in r.stderr and inspect("demo").get("version") == before
          and "  | " not in r.stderr, out(r))
    write(os.path.join(ctx, "sub/x.txt"), "x changed\n")
    r = build(ctx, "demo", df, "--build-arg", "WHO=abox")
    lines = r.stderr.splitlines()
    hello = [ln for ln in lines if "COPY hello.txt ." in ln]
    subl = [ln for ln in lines if "COPY sub/ ./sub/" in ln]
    runs = [ln for ln in lines if 'RUN echo "$GREETING $WHO"' in ln]
    check("a changed context file: the steps before it cached, its COPY and what follows run again",
          r.returncode == 0 and hello and "(cached)" in hello[0] and subl and "(cached)" not in subl[0]
          and runs and "(cached)" not in runs[0], r.stderr)
    r = build(ctx, "demo", df, "--build-arg", "WHO=other")
    check("another --build-arg value: the RUN that uses it runs again",
          r.returncode == 0 and abox("run", "-t", "demo").stdout == "hi other\n", out(r))
    r = build(ctx, "demo", df, "--build-arg", "WHO=other", "--no-cache")
    check("--no-cache runs every step", r.returncode == 0 and "(cached)" not in r.stderr, out(r))

    # ---- destinations through symlinks (/bin -> usr/bin)
    r = build(ctx, "merged", "FROM deb\nCOPY hello.txt /bin/\nRUN cat /usr/bin/hello.txt\n")
    st = sh("merged", "readlink /bin; cat /usr/bin/hello.txt")
    check("COPY to /bin/ where /bin links to usr/bin lands in /usr/bin (the link stays)",
          r.returncode == 0 and st == "usr/bin\nhello\n", (out(r), st))

    # ---- a failing RUN
    before = inspect("demo").get("version")
    r = build(ctx, "demo", "FROM bb\nRUN echo before-the-failure\nRUN echo failing; exit 3\nRUN echo never\n")
    log = os.path.join(STATE, "build-logs", "demo.log")
    text = open(log).read() if os.path.exists(log) else ""
    check("a failing RUN: its line and exit code named, the log kept and named",
          r.returncode != 0 and "line 3" in out(r) and "exit code 3" in out(r) and log in out(r)
          and "failing" in text and "never" not in r.stderr, (out(r), text))
    check("... and the template is left as it was", inspect("demo").get("version") == before)

    # ---- refused by name
    refused = {
        "HEALTHCHECK CMD true": "HEALTHCHECK is not supported",
        "VOLUME /data": "VOLUME is not supported",
        "ONBUILD RUN true": "ONBUILD is not supported",
        "RUN --mount=type=cache,target=/x true": "RUN --mount is not supported",
        "RUN <<EOF\necho hi\nEOF": "heredocs",
        "ADD https://example.com/x /x": "ADD of a URL",
        "FROBNICATE now": "unknown instruction 'FROBNICATE'",
    }
    for line, why in refused.items():
        r = build(ctx, "refused", "FROM bb\n" + line + "\n")
        check(f"refused by name: {line.split()[0]} ... ({why})",
              r.returncode != 0 and why in out(r) and "refused" not in abox("template", "ls").stdout, out(r))

    # ---- --chown with the image's own accounts
    r = build(ctx, "owners", "FROM bb\nCOPY --chown=app hello.txt /f1\nCOPY --chown=app:grp hello.txt /f2\n"
              "COPY --chown=55 hello.txt /f3\n")
    st = sh("owners", "stat -c '%u:%g' /f1 /f2 /f3")
    check("--chown names from the image's /etc/passwd and /etc/group; a user alone takes its primary group",
          r.returncode == 0 and st == "1234:2345\n1234:3456\n55:55\n", (out(r), st))
    r = build(ctx, "owners2", "FROM bb\nCOPY --chown=nobody hello.txt /f\n")
    check("--chown of an account the image lacks: refused by name", r.returncode != 0 and "nobody" in out(r), out(r))

    # ---- ADD of archives: unpacked, by content (as docker decides)
    import io
    import tarfile

    def tgz(path, members):
        with tarfile.open(path, "w:gz") as t:
            for name, data in members.items():
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))

    tgz(os.path.join(ctx, "bundle.tgz"), {"pkg/one.txt": b"one\n", "pkg/two.txt": b"two\n"})
    write(os.path.join(ctx, "fake.tar.gz"), "not an archive\n")
    r = build(ctx, "added", "FROM bb\nADD bundle.tgz /opt/\nADD fake.tar.gz /opt/\n")
    st = sh("added", "cat /opt/pkg/one.txt /opt/pkg/two.txt /opt/fake.tar.gz")
    check("ADD unpacks a local archive; a file that only looks like one by name is copied",
          r.returncode == 0 and st == "one\ntwo\nnot an archive\n", (out(r), st))
    tgz(os.path.join(ctx, "evil.tgz"), {"../../../../tmp/abox-add-escape": b"x"})
    r = build(ctx, "addevil", "FROM bb\nADD evil.tgz /opt/\n")
    check("ADD of an archive that writes outside: refused, nothing made",
          r.returncode != 0 and not os.path.exists("/tmp/abox-add-escape")
          and "addevil" not in abox("template", "ls").stdout, out(r))

    # ---- escapes from the context
    outside = os.path.join(top, "outside.txt")
    write(outside, "host secret\n")
    os.symlink(outside, os.path.join(ctx, "link-out"))
    for line in ["COPY ../outside.txt /x", "COPY sub/../../outside.txt /x", "COPY link-out /x",
                 "COPY --from=base ../../../../etc/passwd /x"]:
        r = build(ctx, "escape", "FROM bb AS base\nFROM bb\n" + line + "\n")
        check(f"a context escape is refused: {line}",
              r.returncode != 0 and ("outside" in out(r)) and "escape" not in abox("template", "ls").stdout, out(r))
    r = build(ctx, "inside", "FROM bb\nCOPY sub /s\n")
    check("a folder source with links inside stays inside (links copied as links)",
          r.returncode == 0 and sh("inside", "cat /s/x.txt") == "x changed\n", out(r))

    # ---- a build killed in the middle of a RUN
    write(os.path.join(ctx, "Dockerfile"), "FROM bb\nRUN echo started; sleep 120\n")
    p = subprocess.Popen([ABOX, "template", "build", "--network", "none", "-f", os.path.join(ctx, "Dockerfile"),
                          "killed", ctx], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.time() + 60
    while time.time() < end and not sandboxes():
        time.sleep(0.1)
    time.sleep(0.5)
    p.kill()
    p.wait()
    orphans = sandboxes()
    r = build(ctx, "after", "FROM bb\nRUN true\n")
    check("the next build ends the RUN sandbox of a build that was killed, and removes its folder",
          orphans and r.returncode == 0 and not leftovers(), (orphans, out(r), leftovers()))

    check("nothing left: no build folder, no sandbox", not leftovers(), leftovers())
except Exception:
    import traceback
    check("the test ran to its end", False, traceback.format_exc())
finally:
    for sid in sandboxes():
        abox("kill", sid)
    for t in abox("template", "ls").stdout.split():
        if t != "host":
            abox("template", "rm", t)
    for _ in range(3):  # children before parents
        for snap in snapshots():
            abox("snapshots", "rm", snap)
    abox("gc")
    shutil.rmtree(top, ignore_errors=True)
finish()
