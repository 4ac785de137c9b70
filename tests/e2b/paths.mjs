// Relative paths with the official E2B JS SDK, as TAP: files and a
// command's cwd are below the user's home, as envd resolves them, and a
// remove of what is not there succeeds.
import { test, eq, create, run } from './lib.mjs'

test('files.write/read/getInfo/list/makeDir/rename/remove with relative paths are in the home', async () => {
  const s = await create()
  const w = await s.files.write('rel.txt', 'hello')
  eq(w.path, '/home/user/rel.txt', 'write names the file in the home')
  eq(await s.files.read('rel.txt'), 'hello', 'read')
  eq((await s.files.getInfo('rel.txt')).path, '/home/user/rel.txt', 'getInfo')
  await s.files.makeDir('d')
  const moved = await s.files.rename('rel.txt', 'd/moved.txt')
  eq(moved.path, '/home/user/d/moved.txt', 'rename')
  const names = (await s.files.list('d')).map(e => e.path)
  eq(names.includes('/home/user/d/moved.txt'), true, `list: ${names}`)
  await s.files.remove('d')
  eq(await s.files.exists('/home/user/d'), false, 'removed')
  await s.files.remove('never-was.txt') // resolves: envd answers a missing file with success
  const r = await s.files.write('x.txt', 'as root', { user: 'root' })
  eq(r.path, '/root/x.txt', 'root\'s home')
})

test('commands.run with a relative cwd runs below the home', async () => {
  const s = await create()
  await s.files.makeDir('work')
  eq((await s.commands.run('pwd', { cwd: 'work' })).stdout.trim(), '/home/user/work', 'pwd')
})

await run()
