"""The code interpreter through the official Python SDK (e2b_code_interpreter,
sync and asyncio), on the template aboxd serves as code-interpreter-v1
(rootfs/code-interpreter.recipe), as TAP (run by tests/e2b/python/run.sh):
streamed output with its timestamp (on_stdout/on_stderr read it), rich
results, contexts, envs, a timed-out cell interrupted at once, TypeScript."""
import base64
import time

from e2b_code_interpreter import AsyncSandbox as AsyncCodeSandbox
from e2b_code_interpreter import Sandbox as CodeSandbox

from tap import acreate, check, create, eq, run, test


@test("on_stdout/on_stderr get every line with its timestamp; results and errors as E2B gives them")
def _():
    s = create(CodeSandbox)
    out, err = [], []
    r = s.run_code("import sys\nprint('hello')\nprint('oops', file=sys.stderr)\n'text'",
                   on_stdout=out.append, on_stderr=err.append)
    eq([m.line for m in out], ["hello\n"], "stdout")
    eq([m.line for m in err], ["oops\n"], "stderr")
    check(all(isinstance(m.timestamp, int) and m.timestamp > 0 for m in out + err), "timestamps")
    eq(r.text, "text", "a string result, without its quotes")
    r = s.run_code("xyz")
    eq((r.error.name, r.error.value), ("NameError", "name 'xyz' is not defined"), "NameError")
    check("xyz" in r.error.traceback, "the source line in the traceback")


@test("IPython: !cmd, %pwd, top-level await, a figure as PNG, a DataFrame as HTML and data")
def _():
    s = create(CodeSandbox)
    eq(s.run_code("!echo hi").logs.stdout, ["hi\n"], "!echo hi")
    eq(s.run_code("%pwd").text, "/home/user", "%pwd")
    eq(s.run_code("import asyncio\nawait asyncio.sleep(0)\n7").text, "7", "top-level await")
    r = s.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()")
    eq(len(r.results), 1, "one figure")
    check(base64.b64decode(r.results[0].png)[1:4] == b"PNG", "a PNG")
    r = s.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    check("<table" in (r.results[0].html or ""), "html")
    eq(r.results[0].data, {"a": [1, 2]}, "data")


@test("contexts: the defaults listed, one in /root usable, bash envs per run, TypeScript")
def _():
    s = create(CodeSandbox)
    langs = [c.language for c in s.list_code_contexts()]
    check("python" in langs and "javascript" in langs, f"default contexts: {langs}")
    ctx = s.create_code_context(cwd="/root", language="python")
    eq(s.run_code("import os; os.getcwd()", context=ctx).text, "/root", "a context in /root")
    eq(s.run_code("echo $FOO", language="bash", envs={"FOO": "bar"}).logs.stdout, ["bar\n"], "bash: a run's env")
    eq(s.run_code("echo ${FOO:-default}", language="bash").logs.stdout, ["default\n"], "bash: gone after")
    eq(s.run_code('const m: number = 6 * 7; m', language="typescript").text, "42", "typescript")


@test("a cell cut by its timeout is interrupted: the next cell runs at once")
def _():
    s = create(CodeSandbox)
    try:
        s.run_code("import time; time.sleep(300)", timeout=2)
        raise AssertionError("the timeout did not raise")
    except Exception as e:
        check("timed out" in str(e).lower() or "timeout" in type(e).__name__.lower(), f"{type(e).__name__}: {e}")
    t0 = time.monotonic()
    eq(s.run_code("1 + 1", timeout=10).text, "2", "the next cell")
    check(time.monotonic() - t0 < 3, f"it waited {time.monotonic() - t0:.1f} s behind the cut one")


@test("asyncio: on_stdout, javascript with an ESM import")
async def _():
    s = await acreate(AsyncCodeSandbox)
    out = []
    await s.run_code("print(1)", on_stdout=out.append)
    eq([m.line for m in out], ["1\n"], "on_stdout")
    r = await s.run_code("import { join } from 'node:path'\njoin('a', 'b')", language="javascript")
    eq(r.text, "a/b", "an ESM import")


run()
