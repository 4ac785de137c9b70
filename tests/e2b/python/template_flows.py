"""The official Python SDK's Template SDK against aboxd, as TAP (run by
tests/e2b/python/run.sh): a template built from steps (from a template
made here, a copy of uploaded files, commands as root and as user,
environment, working folder, a start and a ready command), then
Template.exists and a sandbox made from it; a failing step reported as
that step; a second build found in the cache."""
import os
import shutil
import subprocess
import tempfile

from e2b import Sandbox, Template

from tap import check, eq, made, run, test

BUILD = os.environ["ABOX_TEST_BUILD"]
ctx = tempfile.mkdtemp(prefix="abox-tpl-ctx-")
os.makedirs(os.path.join(ctx, "site"))
with open(os.path.join(ctx, "site", "index.txt"), "w") as f:
    f.write("from the context\n")


def base():
    """A static busybox as template 'tplbb' in aboxd's own state."""
    root = tempfile.mkdtemp(prefix="abox-tpl-root-")
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "etc"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    for a in ("sh", "cat", "echo", "id", "mkdir", "ls", "test", "sleep", "touch", "pwd", "env", "wc"):
        os.symlink("busybox", os.path.join(root, "bin", a))
    # the SDK runs commands with /bin/bash -l -c: busybox's shell stands in
    with open(os.path.join(root, "bin", "bash"), "w") as f:
        f.write("#!/bin/sh\nexec /bin/sh \"$@\"\n")
    os.chmod(os.path.join(root, "bin", "bash"), 0o755)
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n")
    with open(os.path.join(root, "etc", "group"), "w") as f:
        f.write("root:x:0:\nuser:x:1000:\n")
    subprocess.run([os.path.join(BUILD, "abox"), "template", "import", "tplbb", root], check=True, capture_output=True)
    shutil.rmtree(root)


base()
logs = []


@test("Template.build from a template: copy, commands, env, workdir, start and ready commands")
def _():
    t = (Template(file_context_path=ctx)
         .from_template("tplbb")
         .set_envs({"GREETING": "hello", "PATH": "/bin"})
         .run_cmd("mkdir -p /srv && echo built > /srv/built", user="root")
         .copy("site", "/srv/site")
         .set_workdir("/srv")
         .run_cmd("id -u > /tmp/who", user="user")
         .set_start_cmd("touch /tmp/started; sleep 3600", "test -f /tmp/started"))
    info = Template.build(t, alias="sdk-built", cpu_count=1, memory_mb=512, on_build_logs=logs.append)
    eq(info.template_id, "sdk-built", "the template id")
    check(any("build finished" in getattr(e, "message", str(e)) for e in logs), f"the build's log: {logs}")


@test("Template.exists finds the template built and not an unknown one")
def _():
    check(Template.exists("sdk-built"), "sdk-built exists")
    check(not Template.exists("never-built-here"), "an unknown name")
    check(Template.exists("sdk-built:default"), "name:tag (the tag a build is given)")


@test("Sandbox.create(name) starts from it, its start command ran")
def _():
    s = Sandbox.create("sdk-built", timeout=120)
    made.append(s)
    eq(s.commands.run("cat /srv/built /srv/site/index.txt").stdout, "built\nfrom the context\n", "its files")
    eq(s.commands.run("cat /tmp/who").stdout.strip(), "1000", "the step run as user")
    eq(s.commands.run("echo $GREETING").stdout.strip(), "hello", "its env")
    eq(s.commands.run("pwd").stdout.strip(), "/srv", "its workdir")
    check(s.commands.run("test -f /tmp/started && echo yes").stdout.strip() == "yes", "the start command ran")


@test("a second build of the same steps is found in the cache")
def _():
    t = (Template(file_context_path=ctx).from_template("tplbb").set_envs({"GREETING": "hello", "PATH": "/bin"})
         .run_cmd("mkdir -p /srv && echo built > /srv/built", user="root").copy("site", "/srv/site"))
    lines = []
    Template.build(t, alias="sdk-cached", on_build_logs=lines.append)
    text = "\n".join(getattr(e, "message", str(e)) for e in lines)
    Template.build(t, alias="sdk-cached", on_build_logs=lines.append)
    text2 = "\n".join(getattr(e, "message", str(e)) for e in lines)
    check("(cached)" in text2[len(text):] or "up to date" in text2[len(text):], text2[len(text):])


@test("skip_cache(): the steps before it stay cached, it and the later ones run again")
def _():
    def steps():
        return (Template(file_context_path=ctx).from_template("tplbb").run_cmd("echo one > /one")
                .skip_cache().run_cmd("echo two > /two"))
    Template.build(steps(), alias="sdk-skip")
    lines = []
    Template.build(steps(), alias="sdk-skip", on_build_logs=lines.append)
    text = [getattr(e, "message", str(e)) for e in lines]
    one = [t for t in text if "echo one" in t]
    two = [t for t in text if "echo two" in t]
    check(one and "(cached)" in one[0] and two and "(cached)" not in two[0], text)


@test("a copy larger than a JSON body's limit (70 MB): streamed to disk, built")
def _():
    big = tempfile.mkdtemp(prefix="abox-tpl-big-")
    try:
        with open(os.path.join(big, "blob"), "wb") as f:
            f.write(os.urandom(70 << 20))
        t = Template(file_context_path=big).from_template("tplbb").copy("blob", "/data/blob")
        Template.build(t, alias="sdk-big")
        s = Sandbox.create("sdk-big", timeout=120)
        made.append(s)
        eq(s.commands.run("wc -c < /data/blob").stdout.strip(), str(70 << 20), "the file's size in the sandbox")
    finally:
        shutil.rmtree(big, ignore_errors=True)


@test("an upload link is the only way in: an unknown token is refused, nothing kept")
def _():
    import httpx
    r = httpx.put(os.environ["E2B_API_URL"] + "/templates/uploads/not-a-token", content=b"x" * 1000)
    eq(r.status_code, 404, "an unknown token")


@test("a failing step: BuildException naming it")
def _():
    t = Template(file_context_path=ctx).from_template("tplbb").run_cmd("echo fine").run_cmd("echo failing; exit 7")
    try:
        Template.build(t, alias="sdk-fails")
    except Exception as e:
        msg = str(e)
        check("exit code 7" in msg, f"the message: {msg}")
        step = getattr(e, "step", None)
        check(step in (None, 2, "2") or "2" in str(step), f"the step: {step!r}")
        return
    raise AssertionError("the build succeeded")


@test("tags: name:tag builds kept apart, assign_tags, get_tags, remove_tags")
def _():
    one = Template().from_template("tplbb").run_cmd("echo one > /v", user="root")
    two = Template().from_template("tplbb").run_cmd("echo two > /v", user="root")
    b1 = Template.build(one, "sdk-tags:v1")
    b2 = Template.build(two, "sdk-tags", tags=["v2"])

    def v(name):
        s = Sandbox.create(name, timeout=120)
        made.append(s)
        return s.commands.run("cat /v").stdout.strip()
    eq(v("sdk-tags:v1"), "one", "v1's build")
    eq(v("sdk-tags:v2"), "two", "v2's build")
    info = Template.assign_tags("sdk-tags:v1", ["stable"])
    eq(info.build_id, b1.build_id, "assign_tags names the build")
    eq(v("sdk-tags:stable"), "one", "stable is v1's build")
    tags = sorted((t.tag, t.build_id) for t in Template.get_tags("sdk-tags"))
    eq(tags, sorted([("v1", b1.build_id), ("v2", b2.build_id), ("stable", b1.build_id)]), "get_tags")
    Template.remove_tags("sdk-tags", ["v1"])
    check(not Template.exists("sdk-tags:v1"), "a removed tag is gone")
    eq(v("sdk-tags:stable"), "one", "the build lives on under its other tag")


try:
    run()
finally:
    abox = os.path.join(BUILD, "abox")
    tagged = [n for n in subprocess.run([abox, "template", "ls"], capture_output=True, text=True).stdout.split()
              if n.startswith("sdk-tags")]
    subprocess.run([abox, "template", "rm", "tplbb", "sdk-built", "sdk-cached", "sdk-big", "sdk-skip", *tagged],
                   capture_output=True)
    # the builds' layers (snapshots on tplbb), children before parents
    for _ in range(6):
        lines = subprocess.run([abox, "snapshots", "ls"], capture_output=True, text=True).stdout.splitlines()[1:]
        ids = [ln.split()[0] for ln in lines if " tplbb " in f" {ln} "]
        if not ids:
            break
        for i in ids:
            subprocess.run([abox, "snapshots", "rm", i], capture_output=True)
    shutil.rmtree(ctx, ignore_errors=True)
