"""Users made inside a sandbox, through the official Python SDK, as TAP
(run by tests/e2b/python/run.sh): a `useradd agent` user runs commands
and file operations as itself, entries name it as owner, and a user the
sandbox lacks raises the SDK's authentication error."""
from e2b import AuthenticationException

from tap import check, create, eq, run, test


def with_agent():
    s = create()
    s.commands.run("useradd -m -s /bin/bash agent && groupadd team && usermod -aG team agent", user="root")
    return s


@test("commands and files as a user made with useradd")
def _():
    s = with_agent()
    r = s.commands.run("id -un; id -Gn; pwd", user="agent")
    eq(r.stdout, "agent\nagent team\n/home/agent\n", "id and home")
    info = s.files.write("notes.txt", "hi", user="agent")
    eq(info.path, "/home/agent/notes.txt", "a relative path is in its home")
    eq(s.files.read("notes.txt", user="agent"), "hi", "read back")
    entry = s.files.get_info("/home/agent/notes.txt")
    eq(entry.owner, "agent", "owner from the sandbox's own files")
    names = [e.name for e in s.files.list(".", user="agent")]
    check("notes.txt" in names, f"listed: {names}")


@test("an unknown user raises the SDK's authentication error")
def _():
    s = create()
    try:
        s.commands.run("id", user="nosuch")
        raise AssertionError("it did not raise")
    except AuthenticationException as e:
        check("nosuch" in str(e), f"names the user: {e}")


run()
