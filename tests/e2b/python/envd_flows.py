"""envd features the official Python SDK gates on the envd version aboxd
reports (e2b/envd/versions.py), as TAP (run by tests/e2b/python/run.sh):
each one the SDK lets through is served."""
import asyncio
import os
import time

import httpx
from e2b import FilesystemEventType, InvalidArgumentException
from e2b.envd.versions import ENVD_VERSION_WATCH_NETWORK_MOUNTS
from packaging.version import Version

from tap import acreate, check, create, eq, run, test


@test("the envd version reported is the newest whose gated features are served")
def _():
    s = create()
    check(s._envd_version >= ENVD_VERSION_WATCH_NETWORK_MOUNTS, f"envd {s._envd_version}")


@test("file metadata: kept on upload, in the answer, in get_info and list, lower-cased keys")
def _():
    s = create()
    info = s.files.write("/home/user/m.txt", "x", metadata={"Owner": "alice", "k2": "v 2"})
    eq(info.metadata, {"owner": "alice", "k2": "v 2"}, "the upload's answer")
    eq(s.files.get_info("/home/user/m.txt").metadata, {"owner": "alice", "k2": "v 2"}, "get_info")
    by = {e.name: e for e in s.files.list("/home/user")}
    eq(by["m.txt"].metadata, {"owner": "alice", "k2": "v 2"}, "list")
    check(not by.get(".bashrc") or not by[".bashrc"].metadata, "a file without metadata has none")
    # kept where the sandbox keeps it, as the user who wrote it
    got = s.commands.run("getfattr -d --absolute-names /home/user/m.txt 2>/dev/null || "
                         "python3 -c \"import os; print(sorted(os.listxattr('/home/user/m.txt')))\"").stdout
    check("user.e2b.owner" in got, f"the extended attribute: {got!r}")
    # a multi-file upload: the same metadata on every file
    infos = s.files.write_files([{"path": "/tmp/a", "data": "1"}, {"path": "/tmp/b", "data": "2"}], metadata={"batch": "7"})
    eq([i.metadata for i in infos], [{"batch": "7"}, {"batch": "7"}], "multi-file answer")
    eq(s.files.get_info("/tmp/b").metadata, {"batch": "7"}, "multi-file kept")


@test("file metadata in a long listing (its paths sent to init in batches)")
def _():
    s = create()
    s.commands.run("mkdir -p /tmp/big && cd /tmp/big && for i in $(seq 2000); do : > $(printf 'f%0200d' $i); done")
    last = "/tmp/big/" + "f%0200d" % 2000
    s.files.write(last, "x", metadata={"last": "yes"})
    entries = s.files.list("/tmp/big")
    eq(len(entries), 2000, "all listed")
    eq([e.name for e in entries if e.metadata], [last.rsplit("/", 1)[1]], "the one with metadata")
    eq(next(e for e in entries if e.metadata).metadata, {"last": "yes"}, "its metadata")


@test("file metadata: a bad key or value is a 400 naming it, and nothing is written")
def _():
    s = create()
    h = {"E2b-Sandbox-Id": s.sandbox_id, "E2b-Sandbox-Port": "49983", "X-Access-Token": s._envd_access_token}
    url = os.environ["E2B_SANDBOX_URL"] + "/files"
    r = httpx.post(url, params={"path": "/tmp/bad"}, content=b"x",
                   headers={**h, "Content-Type": "application/octet-stream", "X-Metadata-ok": "caf\u00e9".encode()})
    eq(r.status_code, 400, f"a non-ASCII value: {r.text}")
    check("metadata" in r.text, f"names the cause: {r.text}")
    many = {f"X-Metadata-k{i}": "v" for i in range(65)}
    r = httpx.post(url, params={"path": "/tmp/bad"}, content=b"x",
                   headers={**h, "Content-Type": "application/octet-stream", **many})
    eq(r.status_code, 400, f"65 entries: {r.text}")
    check(not s.files.exists("/tmp/bad"), "nothing was written")
    try:
        s.files.write("/tmp/bad", "x", metadata={"bad key": "v"})
        raise AssertionError("the SDK let a bad key through")
    except InvalidArgumentException:
        pass


@test("async client: metadata round trip")
async def _():
    s = await acreate()
    info = await s.files.write("/home/user/a.txt", "x", metadata={"a": "1"})
    eq(info.metadata, {"a": "1"}, "the upload's answer")
    eq((await s.files.get_info("/home/user/a.txt")).metadata, {"a": "1"}, "get_info")


@test("watch_dir include_entry: events carry their entry (polling watcher)")
def _():
    s = create()
    s.files.make_dir("/home/user/we")
    w = s.files.watch_dir("/home/user/we", include_entry=True, allow_network_mounts=True)
    s.files.write("/home/user/we/a.txt", "abc", metadata={"m": "1"})
    s.files.remove("/home/user/we/a.txt")
    events = []
    for _ in range(50):
        events += w.get_new_events()
        if any(e.type == FilesystemEventType.REMOVE for e in events):
            break
        time.sleep(0.1)
    w.stop()
    made_ev = [e for e in events if e.type != FilesystemEventType.REMOVE and e.entry]
    check(made_ev, f"events with an entry: {events}")
    eq(made_ev[-1].entry.path, "/home/user/we/a.txt", "the entry's path")
    eq(made_ev[-1].entry.type.value, "file", "the entry's type")
    check(all(e.entry is None for e in events if e.type == FilesystemEventType.REMOVE), "a removal has none")


@test("watch_dir include_entry: events carry their entry (async stream)")
async def _():
    s = await acreate()
    await s.files.make_dir("/home/user/wa")
    events = []
    w = await s.files.watch_dir("/home/user/wa", events.append, include_entry=True)
    await s.files.write("/home/user/wa/b.txt", "abcd")
    for _ in range(50):
        if any(e.entry and e.entry.size == 4 for e in events):
            break
        await asyncio.sleep(0.1)
    await w.stop()
    check(any(e.name == "b.txt" and e.entry and e.entry.name == "b.txt" for e in events), f"the entry: {events}")


run()
