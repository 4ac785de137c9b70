// The code interpreter as @e2b/code-interpreter's users meet it, on the
// template aboxd serves as code-interpreter-v1 (rootfs/code-interpreter.recipe,
// made ready by scripts/code-interpreter-template.sh), as TAP (run by
// tests/e2b/run.sh like flows.mjs): IPython cells with magics, shell lines,
// top-level await, figures, DataFrames and images; JavaScript with ESM
// imports and TypeScript; contexts; envs; interrupts; streaming.
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, assert, eq, same, create, run } from './lib.mjs'

const code = (opts = {}) => create(opts, CodeSandbox)

test('a fresh sandbox lists the default python and javascript contexts, in /home/user', async () => {
  const s = await code()
  const ctxs = await s.listCodeContexts()
  for (const l of ['python', 'javascript']) {
    const c = ctxs.find(x => x.language === l)
    assert(c, `no ${l} context in ${JSON.stringify(ctxs)}`)
    eq(c.cwd, '/home/user', `${l} cwd`)
  }
  eq((await s.runCode('from pathlib import Path; print(Path.cwd())')).logs.stdout.join(''), '/home/user\n', 'python cwd')
  eq((await s.runCode('process.cwd()', { language: 'js' })).text, '/home/user', 'javascript cwd')
  eq((await s.runCode('pwd', { language: 'bash' })).logs.stdout.join(''), '/home/user\n', 'bash cwd')
  eq((await s.commands.run('whoami; echo $HOME')).stdout, 'user\nhome/user\n'.replace('home', '/home'), "the template's default user has an account")
})

test('python on IPython: !cmd, %magics, top-level await, execution count, tracebacks with source lines', async () => {
  const s = await code()
  eq((await s.runCode('!echo hi')).logs.stdout.join(''), 'hi\n', '!echo hi')
  eq((await s.runCode('%pwd')).text, '/home/user', '%pwd (a string, unquoted as E2B)')
  eq((await s.runCode('import asyncio\nawait asyncio.sleep(0)\n"awaited"')).text, 'awaited', 'top-level await')
  const r = await s.runCode('def f():\n    return 1 / 0\nf()')
  eq(r.error?.name, 'ZeroDivisionError', 'error name')
  eq(r.error?.value, 'division by zero', 'error value')
  assert(r.error?.traceback.includes('return 1 / 0'), `the cell's source line in the traceback: ${r.error?.traceback}`)
  eq((await s.runCode('x = 1')).executionCount, 5, 'execution count (one per cell)')
  eq((await s.runCode('import os; os.system("echo from-a-subprocess")')).logs.stdout.join(''), 'from-a-subprocess\n',
    "a subprocess's output is the cell's")
  const e = await s.runCode('xyz')
  eq(e.error?.name, 'NameError', 'NameError')
  eq(e.error?.value, "name 'xyz' is not defined", 'its value')
})

test('rich results: a matplotlib figure is a PNG, a DataFrame HTML and data, an image a PNG, lists JSON', async () => {
  const s = await code()
  let r = await s.runCode('import matplotlib.pyplot as plt\nimport numpy as np\nx = np.linspace(0, 20, 100)\nplt.plot(x, np.sin(x))\nplt.show()')
  eq(r.results.length, 1, 'one figure')
  assert(Buffer.from(r.results[0].png ?? '', 'base64').subarray(1, 4).toString() === 'PNG', 'a PNG')
  assert(r.results[0].text?.startsWith('<Figure'), `its text: ${r.results[0].text}`)
  same(r.results[0].extra, {}, 'extra')
  r = await s.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})')
  assert(r.results[0]?.html?.includes('<table'), 'DataFrame html')
  same(r.results[0]?.data, { a: [1, 2, 3] }, 'DataFrame data')
  r = await s.runCode('import numpy\nfrom PIL import Image\nimage = Image.fromarray((numpy.random.rand(16, 16, 3) * 255).astype("uint8"))\nimage.show()\nprint("done")')
  assert(r.results[0]?.png, 'Image.show() displays it')
  eq(r.logs.stdout.join(''), 'done\n', 'and the cell goes on')
  assert((await s.runCode('image.save("test.png")')).results[0]?.png, 'Image.save(path) displays it')
  r = await s.runCode('from IPython.display import display, Markdown\ndisplay(Markdown("**b**"))\n[1, 2]')
  eq(r.results[0]?.markdown, '**b**', 'display(Markdown)')
  eq(r.results[0]?.isMainResult, false, 'a display is no main result')
  same(r.results[1]?.json, [1, 2], 'a list as JSON')
  eq(r.results[1]?.isMainResult, true, 'the last expression is')
})

test('charts: a figure\'s result carries the chart data E2B extracts (line, bar, pie, box, superchart)', async () => {
  const s = await code()
  let r = await s.runCode(`import matplotlib.pyplot as plt
import numpy as np
import datetime
dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
x = np.linspace(0, 2 * np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)')
plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel("Time (s)")
plt.ylabel("Amplitude (Hz)")
plt.title('Plot of sin(x) and cos(x)')
plt.show()`)
  let c = r.results[0]?.chart
  same([c?.type, c?.title, c?.x_label, c?.y_unit, c?.x_unit, c?.x_scale, c?.y_scale],
    ['line', 'Plot of sin(x) and cos(x)', 'Time (s)', 'Hz', 's', 'datetime', 'linear'], 'line chart')
  same(c.elements.map(e => [e.label, e.points.length]), [['sin(x)', 100], ['cos(x)', 100]], 'its lines')
  eq(new Date(c.elements[0].points[0][0]).toISOString(), '2023-09-01T00:00:00.000Z', 'dates as ISO text')
  assert(c.y_ticks.every(t => typeof t === 'number') && c.x_tick_labels.every(t => typeof t === 'string'), 'ticks')
  r = await s.runCode(`plt.figure()
plt.bar(['Author A', 'Author B', 'Author C'], [100, 200, 300], label='Books Sold')
plt.xlabel('Authors')
plt.title('Book Sales')
plt.show()`)
  c = r.results[0]?.chart
  same(c?.elements?.map(e => [e.label, e.group, e.value]), [['Author A', 'Books Sold', 100], ['Author B', 'Books Sold', 200],
    ['Author C', 'Books Sold', 300]], 'bar chart')
  r = await s.runCode(`fig, ax = plt.subplots()
ax.pie([90, 10], labels=["No", "No, in blue"], autopct='%1.1f%%', startangle=90)
plt.show()`)
  same(r.results[0]?.chart?.elements?.map(e => [e.label, e.angle, e.radius]), [['No', 324, 1], ['No, in blue', 36, 1]], 'pie chart')
  r = await s.runCode(`data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots()
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.show()`)
  c = r.results[0]?.chart
  eq(c?.type, 'box_and_whisker', 'box chart')
  same(c.elements.map(e => [e.label, e.min, e.first_quartile, e.median, e.third_quartile, e.max, e.outliers]),
    [['Class A', 78, 85, 88, 90, 92, []], ['Class B', 84, 84.75, 88, 90.5, 95, [76]], ['Class C', 75, 79, 82, 86, 88, []]], 'its boxes')
  r = await s.runCode(`fig, axs = plt.subplots(1, 2)
fig.suptitle('Two')
axs[0].plot([1, 2, 3])
axs[1].scatter([1, 2], [3, 4], label='pts')
plt.show()`)
  c = r.results[0]?.chart
  same([c?.type, c?.title, c?.elements?.map(e => e.type)], ['superchart', 'Two', ['line', 'scatter']], 'superchart')
})

test('javascript and typescript: ESM imports, top-level await, require, error names', async () => {
  const s = await code()
  eq((await s.runCode('console.log("Hello World!")', { language: 'js' })).logs.stdout.join(''), 'Hello World!\n', 'console.log')
  eq((await s.runCode("\n    import { readFileSync } from 'fs'\n    console.log(typeof readFileSync)\n    ", { language: 'js' })).logs.stdout.join(''),
    'function\n', 'a named ESM import')
  eq((await s.runCode('import fs from "node:fs"\ntypeof fs.existsSync', { language: 'js' })).text, 'function', 'a default import')
  eq((await s.runCode("await Promise.resolve('Hello World!')", { language: 'js' })).text, 'Hello World!', 'top-level await')
  eq((await s.runCode('const path = require("path"); path.join("a", "b")', { language: 'js' })).text, 'a/b', 'require')
  eq((await s.runCode('path.join("c", "d")', { language: 'js' })).text, 'c/d', 'declarations persist')
  const r = await s.runCode('foo.bar', { language: 'js' })
  eq(r.error?.name, 'ReferenceError', 'ReferenceError keeps its name')
  assert(!/node:|repl/.test(r.error?.traceback ?? ''), `no runner frames: ${r.error?.traceback}`)
  eq((await s.runCode('null.x', { language: 'js' })).error?.name, 'TypeError', 'TypeError')
  eq((await s.runCode('const message: string = "Hello World!"; console.log(message)', { language: 'ts' })).logs.stdout.join(''),
    'Hello World!\n', 'a TypeScript cell with types')
  eq((await s.runCode('process.cwd()', { language: 'typescript' })).text, '/home/user', 'typescript cwd')
  let msg = ''
  try { await s.runCode('1', { language: 'r' }) } catch (e) { msg = String(e?.message ?? e) }
  assert(/^400\b/.test(msg), `r is a 400: ${msg}`)
})

test('contexts: any cwd (/root too), restart, remove, independence', async () => {
  const s = await code()
  await s.runCode('x = 1')
  const ctx = await s.createCodeContext({ language: 'python', cwd: '/root' })
  eq(ctx.cwd, '/root', 'the cwd asked for')
  const last = (await s.listCodeContexts()).find(c => c.id === ctx.id)
  same([last?.language, last?.cwd], ['python', '/root'], 'listed as made')
  eq((await s.runCode('import os; os.getcwd()', { context: ctx })).text, '/root', 'usable in /root')
  eq((await s.runCode('x', { context: ctx })).error?.value, "name 'x' is not defined", 'its own variables')
  await s.runCode('y = 1', { context: ctx })
  await s.restartCodeContext(ctx.id)
  eq((await s.runCode('y', { context: ctx })).error?.name, 'NameError', 'a restart forgets them')
  await s.removeCodeContext(ctx.id)
  assert(!(await s.listCodeContexts()).some(c => c.id === ctx.id), 'removed')
  let thrown = false
  try { await s.runCode({ context: ctx, language: 'python' }) } catch { thrown = true }
  assert(thrown, 'context and language together are refused')
})

test('an interpreter that dies says so; its context restarts on request; a default one starts again', async () => {
  const s = await code()
  const ctx = await s.createCodeContext({ language: 'python', cwd: '/tmp' })
  await s.runCode('keep = 1', { context: ctx })
  let r = await s.runCode('import os; os._exit(3)', { context: ctx })
  eq(r.error?.name, 'ContextEnded', 'the cell says its interpreter ended')
  assert(/exit 3/.test(r.error?.value ?? '') && /restart/.test(r.error.value), `and how: ${r.error?.value}`)
  let msg = ''
  try { await s.runCode('1', { context: ctx }) } catch (e) { msg = String(e?.message ?? e) }
  assert(/404/.test(msg) && /ended/.test(msg) && /restart/.test(msg), `a cell in the dead context is refused, saying why: ${msg}`)
  await s.restartCodeContext(ctx.id)
  eq((await s.runCode('import os; os.getcwd()', { context: ctx })).text, '/tmp', 'restarted, in its folder')
  eq((await s.runCode('keep', { context: ctx })).error?.name, 'NameError', 'with fresh variables')
  r = await s.runCode('import os; os._exit(1)')
  eq(r.error?.name, 'ContextEnded', 'the default context died too')
  eq((await s.runCode('1 + 1')).text, '2', 'and the next default cell starts it again')
  await s.removeCodeContext(ctx.id)
  assert(!(await s.listCodeContexts()).some(c => c.id === ctx.id), 'a removed context is not listed')
})

test('envs: the sandbox\'s and each run\'s, in python, javascript and bash', async () => {
  const s = await code({ envs: { TEST_ENV_VAR: 'supertest' } })
  for (const [language, get, dflt] of [
    ['python', 'import os; os.getenv("TEST_ENV_VAR")', "import os; os.getenv('FOO', 'default')"],
    ['javascript', 'process.env.TEST_ENV_VAR', "process.env.FOO || 'default'"],
  ]) {
    eq((await s.runCode(get, { language })).results[0]?.text, 'supertest', `${language}: the sandbox's`)
    eq((await s.runCode(get, { language, envs: { TEST_ENV_VAR: 'overwrite' } })).results[0]?.text, 'overwrite', `${language}: a run's wins`)
    eq((await s.runCode(get, { language })).results[0]?.text, 'supertest', `${language}: and goes again`)
    eq((await s.runCode(dflt, { language })).results[0]?.text, 'default', `${language}: unset after`)
  }
  eq((await s.runCode('echo $FOO', { language: 'bash', envs: { FOO: 'bar' } })).logs.stdout[0], 'bar\n', 'bash: a run\'s')
  eq((await s.runCode('echo ${FOO:-default}', { language: 'bash' })).logs.stdout[0], 'default\n', 'bash: gone after')
  eq((await s.runCode('echo $TEST_ENV_VAR', { language: 'bash', envs: { TEST_ENV_VAR: 'overwrite' } })).logs.stdout[0], 'overwrite\n', 'bash: over the sandbox\'s')
  eq((await s.runCode('echo $TEST_ENV_VAR', { language: 'bash' })).logs.stdout[0], 'supertest\n', 'bash: the sandbox\'s again')
})

test('a cell cut by its timeout is interrupted at once: the next cell runs without waiting', async () => {
  const s = await code()
  let thrown = false
  try { await s.runCode('import time; time.sleep(300)', { timeoutMs: 2000 }) } catch { thrown = true }
  assert(thrown, 'the timeout raised')
  const t0 = Date.now()
  eq((await s.runCode('1 + 1', { timeoutMs: 10000 })).text, '2', 'the next cell')
  assert(Date.now() - t0 < 3000, `it waited ${Date.now() - t0} ms behind the cut one`)
  thrown = false
  try { await s.runCode('await new Promise(r => setTimeout(r, 300000))', { language: 'js', timeoutMs: 2000 }) } catch { thrown = true }
  assert(thrown, 'javascript: the timeout raised')
  eq((await s.runCode('1 + 1', { language: 'js', timeoutMs: 10000 })).text, '2', 'javascript: the next cell')
})

test('streaming: every stdout/stderr message carries its timestamp; callbacks see each once', async () => {
  const s = await code()
  const out = [], err = [], results = []
  const r = await s.runCode('import sys\nprint(1)\nprint(2, file=sys.stderr)\n3', {
    onStdout: m => out.push(m), onStderr: m => err.push(m), onResult: x => results.push(x),
  })
  same(out.map(m => m.line), ['1\n'], 'stdout')
  same(err.map(m => m.line), ['2\n'], 'stderr')
  for (const m of [...out, ...err]) assert(Number.isFinite(m.timestamp) && m.timestamp > 1.6e15, `timestamp ${m.timestamp}`)
  eq(results.length, 1, 'one result')
  eq(r.text, '3', 'the main result')
})

await run()
