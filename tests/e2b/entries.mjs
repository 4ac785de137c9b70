// Directory entries as the official E2B JS SDK reads them (run by
// tests/e2b/run.sh like flows.mjs): a symlink is listed as a symlink with
// its target, whatever form the entry's type is sent in (older SDKs, such
// as the Python SDK on Debian's protobuf, need a form they parse too:
// tests/e2b/python/).
import { Sandbox } from 'e2b'

const tests = []
const test = (name, fn) => tests.push({ name, fn })
function assert(cond, msg) { if (!cond) throw new Error(msg) }
function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`) }
const made = []

test('list and getInfo report a symlink with its target', async () => {
  const s = await Sandbox.create({ timeoutMs: 120000 })
  made.push(s)
  await s.commands.run('mkdir -p /home/user/l/d && echo x > /home/user/l/f && ln -s f /home/user/l/link')
  const byName = Object.fromEntries((await s.files.list('/home/user/l')).map(e => [e.name, e]))
  eq(byName.f?.type, 'file', 'the file')
  eq(byName.d?.type, 'dir', 'the folder')
  eq(byName.link?.type, 'symlink', 'the symlink')
  assert(/(^|\/)f$/.test(byName.link?.symlinkTarget ?? ''), `its target: ${byName.link?.symlinkTarget}`)
  const info = await s.files.getInfo('/home/user/l/link')
  eq(info.type, 'symlink', 'getInfo type')
  assert((await s.files.list('/')).some(e => e.name === 'home'), 'a listing of /')
})

let n = 0, failed = 0
console.log(`1..${tests.length}`)
for (const t of tests) {
  n++
  try {
    await t.fn()
    console.log(`ok ${n} - ${t.name}`)
  } catch (e) {
    failed++
    console.log(`not ok ${n} - ${t.name}`)
    for (const line of String(e?.stack ?? e).split('\n')) console.log(`# ${line}`)
  }
  for (const s of made.splice(0)) await s.kill().catch(() => {})
}
process.exit(failed ? 1 : 0)
