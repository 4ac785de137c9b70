// envd features the official E2B JS SDK gates on the envd version aboxd
// reports, as TAP (run by tests/e2b/run.sh like flows.mjs): the version is
// the newest whose gated features abox serves, and each is served.
import { test, sleep, assert, same as eq, create, run } from './lib.mjs'

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

await run()
