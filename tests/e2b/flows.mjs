// Scripted flows of the official E2B JS SDK against a live aboxd, printed
// as TAP. Run by tests/e2b/run.sh with E2B_API_KEY, E2B_API_URL and
// E2B_SANDBOX_URL pointing at the daemon; the SDK is whichever version
// run.sh installed next to this file's copy.
import { Sandbox, AuthenticationError, CommandExitError, TimeoutError } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, sleep, assert, eq, made, create, run } from './lib.mjs'

test('create with metadata, envs and timeout; info and list by metadata', async () => {
  const tag = `m${Date.now()}`
  const s = await create({ metadata: { flow: tag }, envs: { FOO: 'bar' } })
  const info = await s.getInfo()
  eq(info.sandboxId, s.sandboxId, 'info id')
  eq(info.metadata.flow, tag, 'metadata')
  eq(info.state, 'running', 'state')
  const items = await Sandbox.list({ query: { metadata: { flow: tag } } }).nextItems()
  eq(items.length, 1, 'list by metadata')
  eq((await s.commands.run('echo $FOO')).stdout, 'bar\n', 'sandbox env')
})

test('commands.run: streams, exit codes, envs, cwd, users', async () => {
  const s = await create()
  const r = await s.commands.run('echo out; echo err >&2; pwd; whoami')
  eq(r.stdout, 'out\n/home/user\nuser\n', 'stdout')
  eq(r.stderr, 'err\n', 'stderr')
  eq(r.exitCode, 0, 'exit code')
  eq((await s.commands.run('whoami', { user: 'root' })).stdout, 'root\n', 'root')
  eq((await s.commands.run('echo $A-$B', { envs: { A: '1', B: '2' } })).stdout, '1-2\n', 'envs')
  eq((await s.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n', 'cwd')
  let seen = ''
  await s.commands.run('echo streamed', { onStdout: d => { seen += d } })
  eq(seen, 'streamed\n', 'onStdout')
  try {
    await s.commands.run('echo no >&2; exit 7')
    throw new Error('no CommandExitError')
  } catch (e) {
    assert(e instanceof CommandExitError, `wrong error ${e}`)
    eq(e.exitCode, 7, 'exit code of the error')
    eq(e.stderr, 'no\n', 'stderr of the error')
  }
})

test('background command, connect by pid, stdin, kill', async () => {
  const s = await create()
  const h = await s.commands.run('i=0; while :; do i=$((i+1)); echo $i; sleep 0.1; done', { background: true })
  await sleep(300)
  const list = await s.commands.list()
  assert(list.some(p => p.pid === h.pid), 'the background command is listed')
  let again = ''
  const c = await s.commands.connect(h.pid, { onStdout: d => { again += d } })
  await sleep(400)
  assert(again.length > 0, 'connect streams output')
  assert(await c.kill(), 'kill by handle')
  const cat = await s.commands.run('cat', { background: true, stdin: true })
  await s.commands.sendStdin(cat.pid, 'via stdin\n')
  await s.commands.closeStdin(cat.pid)
  const done = await cat.wait()
  eq(done.stdout, 'via stdin\n', 'stdin round trip')
})

test('commands.run timeoutMs: the client gives up and the command is killed', async () => {
  const s = await create()
  const t0 = Date.now()
  try {
    await s.commands.run('sleep 30 & sleep 30', { timeoutMs: 1000 })
    throw new Error('no TimeoutError')
  } catch (e) {
    assert(e instanceof TimeoutError, `wrong error ${e}`)
  }
  assert(Date.now() - t0 < 5000, 'it gave up in time')
  let left = ''
  for (let i = 0; i < 20; i++) {
    left = (await s.commands.run('pgrep -c sleep || true')).stdout.trim()
    if (left === '0') break
    await sleep(100)
  }
  eq(left, '0', 'no sleep is left')
  const h = await s.commands.run('sleep 1; echo late', { background: true, timeoutMs: 0 })
  eq((await h.wait()).stdout, 'late\n', 'timeoutMs 0: no limit')
})

test('pty: create, input, resize, kill', async () => {
  const s = await create()
  let out = ''
  const pty = await s.pty.create({ cols: 80, rows: 24, onData: d => { out += new TextDecoder().decode(d) } })
  await s.pty.resize(pty.pid, { cols: 120, rows: 40 })
  await s.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo mark-$((6*7))\n'))
  for (let i = 0; i < 50 && !out.includes('mark-42'); i++) await sleep(100)
  assert(out.includes('40 120'), `the resize reached the terminal: ${JSON.stringify(out)}`)
  assert(out.includes('mark-42'), 'pty output')
  assert(await s.pty.kill(pty.pid), 'pty kill')
})

test('files: write, read, list, exists, rename, makeDir, getInfo, remove, multi-file write', async () => {
  const s = await create()
  await s.files.write('/home/user/dir/a.txt', 'alpha')
  eq(await s.files.read('/home/user/dir/a.txt'), 'alpha', 'read')
  assert(await s.files.exists('/home/user/dir/a.txt'), 'exists')
  assert(!(await s.files.exists('/home/user/none')), 'missing does not exist')
  const names = (await s.files.list('/home/user/dir')).map(e => e.name)
  eq(JSON.stringify(names), '["a.txt"]', 'list')
  await s.files.makeDir('/home/user/dir/sub')
  await s.files.rename('/home/user/dir/a.txt', '/home/user/dir/sub/b.txt')
  const info = await s.files.getInfo('/home/user/dir/sub/b.txt')
  eq(info.type, 'file', 'type')
  eq(info.size, 5, 'size')
  await s.files.write([{ path: '/tmp/m1', data: 'one' }, { path: '/tmp/m2', data: 'two' }])
  eq(await s.files.read('/tmp/m2'), 'two', 'multi-file write')
  // gzip both ways (SDKs that know the option compress; the file holds the plain text)
  const text = 'gzip me\n'.repeat(5000)
  await s.files.write('/tmp/gz.txt', text, { gzip: true })
  eq(await s.files.read('/tmp/gz.txt', { gzip: true }), text, 'gzip write/read')
  const plain = await s.commands.run('wc -c < /tmp/gz.txt')
  eq(plain.stdout.trim(), String(text.length), 'the file holds the inflated bytes')
  await s.files.remove('/home/user/dir')
  assert(!(await s.files.exists('/home/user/dir/sub/b.txt')), 'removed recursively')
  try {
    await s.files.read('/home/user/none')
    throw new Error('reading a missing file did not fail')
  } catch (e) {
    assert(/not found|no such/i.test(String(e)), `a missing file is not-found: ${e}`)
  }
})

test('watchDir sees files made, written and removed (recursive too)', async () => {
  const s = await create()
  await s.files.makeDir('/home/user/w/sub')
  const events = []
  const handle = await s.files.watchDir('/home/user/w', e => events.push(`${e.type}:${e.name}`), { recursive: true })
  await s.files.write('/home/user/w/a.txt', 'x')
  await s.files.write('/home/user/w/sub/b.txt', 'y')
  await s.files.remove('/home/user/w/a.txt')
  for (let i = 0; i < 50 && !events.some(e => e.startsWith('remove:')); i++) await sleep(100)
  await handle.stop()
  assert(events.some(e => e.endsWith(':a.txt')), `a.txt seen: ${events}`)
  assert(events.some(e => e.endsWith(':sub/b.txt')), `sub/b.txt seen (recursive): ${events}`)
  assert(events.some(e => e === 'remove:a.txt'), `the removal seen: ${events}`)
})

test('pause, then connect: files and processes are still there', async () => {
  const s = await create()
  await s.files.write('/tmp/kept', 'kept')
  await s.commands.run('i=0; while :; do i=$((i+1)); echo $i > /tmp/n.t; mv /tmp/n.t /tmp/n; sleep 0.1; done', { background: true })
  await sleep(400)
  await s.betaPause?.() ?? await s.pause()
  eq((await Sandbox.getInfo(s.sandboxId)).state, 'paused', 'paused')
  const again = await Sandbox.connect(s.sandboxId)
  eq(await again.files.read('/tmp/kept'), 'kept', 'files after resume')
  const a = Number((await again.commands.run('cat /tmp/n')).stdout)
  await sleep(500)
  const b = Number((await again.commands.run('cat /tmp/n')).stdout)
  assert(b > a, `the counter runs on after resume (${a} -> ${b})`)
})

test('setTimeout and expiry', async () => {
  const s = await create({ timeoutMs: 3000 })
  await s.setTimeout(60000)
  await sleep(3500)
  assert(await s.isRunning(), 'a longer timeout keeps it')
  await s.setTimeout(1000)
  await sleep(2500)
  assert(!(await s.isRunning()), 'it ends at its deadline')
})

test('connect only ever extends a running sandbox', async () => {
  const s = await create({ timeoutMs: 3600000 })
  const left = async () => (new Date((await Sandbox.getInfo(s.sandboxId)).endAt) - Date.now()) / 1000
  await Sandbox.connect(s.sandboxId)
  assert(await left() > 3580, `connect() with the default timeout keeps the hour (${await left()} s left)`)
  await Sandbox.connect(s.sandboxId, { timeoutMs: 60000 })
  assert(await left() > 3580, `connect({timeoutMs: 60000}) keeps the hour (${await left()} s left)`)
  await s.setTimeout(60000)
  assert(await left() <= 60, `setTimeout shortens (${await left()} s left)`)
})

test('list pagination', async () => {
  const tag = `p${Date.now()}`
  for (let i = 0; i < 3; i++) await create({ metadata: { page: tag } })
  const pager = Sandbox.list({ query: { metadata: { page: tag } }, limit: 2 })
  let pages = 0, seen = 0
  while (pager.hasNext) { seen += (await pager.nextItems()).length; pages++ }
  eq(seen, 3, 'all seen')
  assert(pages >= 2, 'more than one page')
})

test('createSnapshot, then Sandbox.create(snapshotId)', async () => {
  const s = await create()
  await s.files.write('/home/user/snap.txt', 'in the snapshot')
  const snap = await s.createSnapshot()
  const from = await Sandbox.create(snap.snapshotId, { timeoutMs: 120000 })
  made.push(from)
  eq(await from.files.read('/home/user/snap.txt'), 'in the snapshot', 'files of the snapshot')
  await from.kill()
  await Sandbox.deleteSnapshot(snap.snapshotId)
})

test('fork', async () => {
  if (typeof Sandbox.prototype.fork !== 'function') return 'this SDK version has no fork'
  const s = await create()
  await s.files.write('/home/user/f.txt', 'forked')
  const forks = await s.fork({ count: 2 })
  eq(forks.length, 2, 'two results')
  for (const f of forks) {
    assert(!(f instanceof Error), `a fork failed: ${f}`)
    made.push(f)
    eq(await f.files.read('/home/user/f.txt'), 'forked', 'the fork has the files')
    assert(f.sandboxId !== s.sandboxId, 'its own id')
  }
})

test('runCode: python results, stdout, errors, persisted variables, rich results', async () => {
  const s = await CodeSandbox.create({ timeoutMs: 120000 })
  made.push(s)
  let r = await s.runCode('x = 21\nprint("hello")\nx * 2')
  eq(r.results[0]?.text, '42', 'the last expression is the main result')
  eq(r.logs.stdout.join(''), 'hello\n', 'stdout')
  r = await s.runCode('x + 1')
  eq(r.results[0]?.text, '22', 'variables persist')
  r = await s.runCode('1/0')
  eq(r.error?.name, 'ZeroDivisionError', 'error name')
  assert(r.error?.traceback.includes('ZeroDivisionError'), 'traceback')
  r = await s.runCode('class Img:\n  def _repr_png_(self): return b"PNGDATA"\n  def _repr_html_(self): return "<b>x</b>"\nImg()')
  eq(r.results[0]?.png, Buffer.from('PNGDATA').toString('base64'), 'png from _repr_png_')
  eq(r.results[0]?.html, '<b>x</b>', 'html from _repr_html_')
  assert(r.executionCount >= 4, 'execution count')
})

test('runCode: javascript and bash, and contexts', async () => {
  const s = await CodeSandbox.create({ timeoutMs: 120000 })
  made.push(s)
  let r = await s.runCode('const a = 40; a + 2', { language: 'javascript' })
  eq(r.results[0]?.text, '42', 'javascript result')
  eq((await s.runCode('a + 1', { language: 'javascript' })).results[0]?.text, '41', 'javascript keeps its variables')
  r = await s.runCode('V=7; echo bash-$V', { language: 'bash' })
  eq(r.logs.stdout.join(''), 'bash-7\n', 'bash')
  eq((await s.runCode('echo $V', { language: 'bash' })).logs.stdout.join(''), '7\n', 'bash keeps its variables')
  const ctx = await s.createCodeContext({ language: 'python', cwd: '/tmp' })
  eq((await s.runCode('import os; os.getcwd()', { context: ctx })).results[0]?.text, '/tmp', 'context cwd (a string result without its quotes, as E2B)')
  await s.runCode('y = 5', { context: ctx })
  assert((await s.listCodeContexts()).some(c => c.id === ctx.id), 'listed')
  await s.restartCodeContext(ctx)
  r = await s.runCode('y', { context: ctx })
  eq(r.error?.name, 'NameError', 'a restart forgets the variables')
  await s.removeCodeContext(ctx)
  assert(!(await s.listCodeContexts()).some(c => c.id === ctx.id), 'removed')
})

test('kill twice; a wrong key is an AuthenticationError', async () => {
  const s = await create()
  assert(await Sandbox.kill(s.sandboxId), 'first kill')
  assert(!(await Sandbox.kill(s.sandboxId)), 'second kill returns false')
  try {
    await Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems()
    throw new Error('a wrong key was accepted')
  } catch (e) {
    assert(e instanceof AuthenticationError, `wrong error: ${e}`)
  }
})

await run({ keepUntilEnd: true })
