// Directory entries as the official E2B JS SDK reads them (run by
// tests/e2b/run.sh like flows.mjs): a symlink is listed as a symlink with
// its target, whatever form the entry's type is sent in (older SDKs, such
// as the Python SDK on Debian's protobuf, need a form they parse too:
// tests/e2b/python/).
import { test, assert, eq, create, run } from './lib.mjs'

test('list and getInfo report a symlink with its target', async () => {
  const s = await create()
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

await run()
