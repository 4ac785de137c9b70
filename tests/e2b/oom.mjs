// Memory pressure through the official E2B JS SDK, printed as TAP (run by
// tests/e2b/run.sh next to flows.mjs): a command the OOM killer ends
// throws a CommandExitError whose message names the OOM kill and the
// sandbox's memory limit, and the sandbox goes on serving commands and
// files.
import { Sandbox, CommandExitError } from 'e2b'

const tests = []
const test = (name, fn) => tests.push({ name, fn })
function assert(cond, msg) { if (!cond) throw new Error(msg) }
function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`) }
const made = []
async function create(opts = {}) {
  const s = await Sandbox.create({ timeoutMs: 120000, ...opts })
  made.push(s)
  return s
}

test('an OOM-killed command: CommandExitError names the OOM kill and the limit; the sandbox lives on', async () => {
  const s = await create()
  await s.files.write('/home/user/keep', 'kept\n')
  try {
    // the default sandbox has 512 MiB
    await s.commands.run("python3 -c 'a = bytearray(800 << 20)'")
    throw new Error('no CommandExitError')
  } catch (e) {
    assert(e instanceof CommandExitError, `wrong error ${e}`)
    assert(e.message.includes('out of memory'), `the message does not name the OOM kill: ${e.message}`)
    assert(e.message.includes('512M'), `the message does not name the limit: ${e.message}`)
    eq(e.error, e.message, 'the error field')
  }
  eq((await s.commands.run('cat /home/user/keep')).stdout, 'kept\n', 'files after the OOM kill')
  eq(await s.files.read('/home/user/keep'), 'kept\n', 'files API after the OOM kill')
})

console.log(`1..${tests.length}`)
let failed = 0
for (const [i, t] of tests.entries()) {
  try {
    await t.fn()
    console.log(`ok ${i + 1} - ${t.name}`)
  } catch (e) {
    failed++
    console.log(`not ok ${i + 1} - ${t.name}`)
    console.log(`  # ${String(e && e.stack || e).split('\n').join('\n  # ')}`)
  }
}
for (const s of made) await s.kill().catch(() => {})
process.exit(failed ? 1 : 0)
