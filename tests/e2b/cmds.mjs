// Commands as envd reports them, through the official E2B JS SDK, as TAP
// (run by tests/e2b/run.sh like flows.mjs): a command's timeout, a kill, a
// kill of a pid that is not there, what commands.list() gives, and
// connect() to a running command.
import { TimeoutError, CommandExitError, SandboxNotFoundError } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, assert, same as eq, create, run } from './lib.mjs'

async function rejection(p) {
  try { await p } catch (e) { return e }
  throw new Error('it did not reject')
}

test('a command that hits its timeout raises TimeoutError', async () => {
  const s = await create()
  const e = await rejection(s.commands.run('sleep 30', { timeoutMs: 1000 }))
  assert(e instanceof TimeoutError, `${e?.constructor?.name}: ${e?.message}`)
  const b = await s.commands.run('sleep 30', { timeoutMs: 1000, background: true })
  const e2 = await rejection(b.wait())
  assert(e2 instanceof TimeoutError, `background: ${e2?.constructor?.name}: ${e2?.message}`)
})

test('a code cell that outlives its timeout raises TimeoutError; the next cell runs', async () => {
  const s = await create({}, CodeSandbox)
  const e = await rejection(s.runCode('import time; time.sleep(30)', { timeoutMs: 2000 }))
  assert(e instanceof TimeoutError || e?.name === 'TimeoutError', `${e?.constructor?.name}: ${e?.message}`)
  eq((await s.runCode('6 * 7', { timeoutMs: 60000 })).text, '42', 'a later cell')
})

test('kill of a pid that is not there is false; of a running one true', async () => {
  const s = await create()
  eq(await s.commands.kill(999999), false, 'unknown pid')
  const h = await s.commands.run('sleep 60', { background: true })
  eq(await s.commands.kill(h.pid), true, 'a running pid')
  const e = await rejection(h.wait())
  assert(e instanceof CommandExitError, `${e?.constructor?.name}: ${e?.message}`)
  eq(e.error, 'signal: killed', 'the error of a killed command')
  eq(e.message, 'signal: killed', 'its message')
  eq(await s.commands.kill(h.pid), false, 'the same pid once it ended')
})

test('commands.list gives cmd, args, cwd, envs and tag as started', async () => {
  const s = await create()
  const h = await s.commands.run('sleep 60; echo "a  b"', { background: true, cwd: '/tmp', envs: { K: 'v w' } })
  const p = (await s.commands.list()).find(x => x.pid === h.pid)
  assert(p, 'the command is listed')
  eq(p.cmd, '/bin/bash', 'cmd')
  eq(p.args, ['-l', '-c', 'sleep 60; echo "a  b"'], 'args')
  eq(p.cwd, '/tmp', 'cwd')
  eq(p.envs, { K: 'v w' }, 'envs')
  eq(p.tag, undefined, 'no tag was given: none is listed')
  await h.kill()
})

test('connect(pid, {timeoutMs}) ends with TimeoutError when its timeout passes', async () => {
  const s = await create()
  const h = await s.commands.run('sleep 60', { background: true, timeoutMs: 0 })
  const c = await s.commands.connect(h.pid, { timeoutMs: 1000 })
  const e = await rejection(c.wait())
  assert(e instanceof TimeoutError, `${e?.constructor?.name}: ${e?.message}`)
  // the connection's timeout is the connection's: the command runs on
  const again = (await s.commands.list()).find(x => x.pid === h.pid)
  assert(again, 'the command still runs after its connection timed out')
  await h.kill()
})

test('getInfo().lifecycle', async () => {
  const s = await create({ lifecycle: { onTimeout: 'pause', autoResume: true } })
  const i = await s.getInfo()
  eq(i.lifecycle, { onTimeout: 'pause', autoResume: true }, 'lifecycle')
  const t = await create()
  eq((await t.getInfo()).lifecycle, { onTimeout: 'kill', autoResume: false }, 'default lifecycle')
})

test('lifecycle.autoResume: a paused sandbox resumes on its next command; without it a clear error', async () => {
  const s = await create({ lifecycle: { onTimeout: 'pause', autoResume: true } })
  await s.commands.run('echo kept > /tmp/k')
  await s.pause()
  eq((await s.commands.run('cat /tmp/k')).stdout, 'kept\n', 'the command after the pause')
  eq((await s.getInfo()).state, 'running', 'the state')
  const t = await create({ lifecycle: { onTimeout: 'pause' } })
  await t.pause()
  const e = await rejection(t.commands.run('true'))
  // E2B answers 502 for a sandbox that does not run: the SDK's not-found error
  assert(e instanceof SandboxNotFoundError, `${e?.constructor?.name}: ${e?.message}`)
  eq((await t.getInfo()).state, 'paused', 'the one without autoResume stays paused')
})

await run()
