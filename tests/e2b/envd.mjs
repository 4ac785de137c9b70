// envd features the official E2B JS SDK gates on the envd version aboxd
// reports, as TAP (run by tests/e2b/run.sh like flows.mjs): the version is
// the newest whose gated features abox serves, and each is served.
import { Sandbox } from 'e2b'

const tests = []
const test = (name, fn) => tests.push({ name, fn })
const sleep = ms => new Promise(r => setTimeout(r, ms))
function assert(cond, msg) { if (!cond) throw new Error(msg) }
function eq(a, b, msg) { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`) }
const made = []
async function create() {
  const s = await Sandbox.create({ timeoutMs: 120000 })
  made.push(s)
  return s
}

test('file metadata (envd 0.6.2): upload answer, getInfo and list', async () => {
  const s = await create()
  const info = await s.files.write('/home/user/m.txt', 'x', { metadata: { Owner: 'alice' } })
  eq(info.metadata, { owner: 'alice' }, 'the upload answer')
  eq((await s.files.getInfo('/home/user/m.txt')).metadata, { owner: 'alice' }, 'getInfo')
  const e = (await s.files.list('/home/user')).find(x => x.name === 'm.txt')
  eq(e?.metadata, { owner: 'alice' }, 'list')
})

test('watchDir includeEntry (0.6.3) and allowNetworkMounts (0.6.4)', async () => {
  const s = await create()
  await s.files.makeDir('/home/user/we')
  const events = []
  const h = await s.files.watchDir('/home/user/we', ev => events.push(ev), { includeEntry: true, allowNetworkMounts: true })
  await s.files.write('/home/user/we/a.txt', 'abc')
  for (let i = 0; i < 50 && !events.some(ev => ev.entry?.size === 3); i++) await sleep(100)
  await h.stop()
  const withEntry = events.filter(ev => ev.entry)
  assert(withEntry.length > 0, `events with an entry: ${JSON.stringify(events)}`)
  eq(withEntry.at(-1).entry.path, '/home/user/we/a.txt', 'the entry path')
  eq(withEntry.at(-1).entry.type, 'file', 'the entry type')
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
