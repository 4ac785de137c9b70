"""Commands as envd reports them, through the official Python SDK, as TAP
(run by tests/e2b/python/run.sh): a command's timeout raises
TimeoutException (not CommandExitException with exit code -1), a kill of
a pid that is not there is False, a killed command's wait() names the
kill, and list() gives the command as started."""
from e2b import CommandExitException, TimeoutException
from e2b_code_interpreter import Sandbox as CodeSandbox

from tap import check, create, eq, run, test


@test("a command that hits its timeout raises TimeoutException")
def _():
    s = create()
    try:
        s.commands.run("sleep 30", timeout=1)
        raise AssertionError("it did not raise")
    except TimeoutException:
        pass


@test("kill of an unknown pid is False; a killed command's wait() says 'signal: killed'")
def _():
    s = create()
    eq(s.commands.kill(999999), False, "unknown pid")
    h = s.commands.run("sleep 60", background=True)
    eq(s.commands.kill(h.pid), True, "a running pid")
    try:
        h.wait()
        raise AssertionError("wait() did not raise")
    except CommandExitException as e:
        eq(e.error, "signal: killed", "the error")


@test("commands.list() gives cmd, args, cwd and envs as started")
def _():
    s = create()
    h = s.commands.run("sleep 60; echo 'a  b'", background=True, cwd="/tmp", envs={"K": "v w"})
    p = next((x for x in s.commands.list() if x.pid == h.pid), None)
    check(p is not None, "the command is listed")
    eq(p.cmd, "/bin/bash", "cmd")
    eq(p.args, ["-l", "-c", "sleep 60; echo 'a  b'"], "args")
    eq(p.cwd, "/tmp", "cwd")
    eq(p.envs, {"K": "v w"}, "envs")
    h.kill()


@test("a code cell that outlives its timeout raises TimeoutException, and the next cell runs")
def _():
    s = create(CodeSandbox)
    try:
        s.run_code("import time; time.sleep(30)", timeout=2)
        raise AssertionError("it did not raise")
    except TimeoutException:
        pass
    eq(s.run_code("6 * 7", timeout=60).text, "42", "a later cell")


run()
