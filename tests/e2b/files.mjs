// File flows of the official E2B JS SDK against a live aboxd that need
// big bodies or the file plane's error answers, printed as TAP. Run by
// tests/e2b/run.sh (its third argument), like flows.mjs.
import { NotFoundError, SandboxError } from 'e2b'
import { createHash, randomBytes } from 'node:crypto'
import { test, assert, eq, create as createSandbox, run } from './lib.mjs'

const sha = b => createHash('sha256').update(b).digest('hex')
// big bodies: more time and memory than the default sandbox's
const create = (opts = {}) => createSandbox({ timeoutMs: 300000, memoryMB: 1024, ...opts })

test('files.write of 80 MB (multipart, as the SDK sends it) and its read', async () => {
  const s = await create()
  const data = randomBytes(80 << 20)
  const info = await s.files.write('/home/user/big.bin', data.buffer.slice(data.byteOffset, data.byteOffset + data.length))
  eq(info.path, '/home/user/big.bin', 'written path')
  const back = Buffer.from(await s.files.read('/home/user/big.bin', { format: 'bytes' }))
  eq(back.length, data.length, 'size read back')
  eq(sha(back), sha(data), 'bytes read back')
  const r = await s.commands.run('stat -c %s /home/user/big.bin')
  eq(r.stdout.trim(), String(80 << 20), 'size on the sandbox disk')
})

test('files.write of several files, 10 MB each, in one multipart body', async () => {
  const s = await create()
  const a = randomBytes(10 << 20), b = randomBytes(10 << 20)
  await s.files.write([{ path: '/tmp/a.bin', data: new Blob([a]) }, { path: '/tmp/b.bin', data: new Blob([b]) }])
  const r = await s.commands.run('sha256sum /tmp/a.bin /tmp/b.bin')
  eq(r.stdout.split(/\s+/).filter((_, i) => i % 2 === 0).slice(0, 2).join(','), `${sha(a)},${sha(b)}`, 'both files')
})

test('files.read of a dangling symlink: NotFoundError; of a link: its target', async () => {
  const s = await create()
  await s.commands.run('ln -s /home/user/nowhere /home/user/dangling; printf target > /home/user/t; ln -s t /home/user/l')
  try {
    await s.files.read('/home/user/dangling')
    throw new Error('a dangling symlink was read')
  } catch (e) {
    assert(e instanceof NotFoundError, `wrong error: ${e}`)
  }
  eq(await s.files.read('/home/user/l'), 'target', 'read through a link')
})

test('files.list: depth over the limit is refused naming it; a deep listing works', async () => {
  const s = await create()
  try {
    await s.files.list('/', { depth: 17 })
    throw new Error('depth 17 was accepted')
  } catch (e) {
    assert(e instanceof SandboxError && /16/.test(e.message), `wrong error: ${e}`)
  }
  await s.commands.run('mkdir -p /tmp/l/a/b/c && touch /tmp/l/a/b/c/f')
  const list = await s.files.list('/tmp/l', { depth: 16 })
  assert(list.some(e => e.path === '/tmp/l/a/b/c/f'), 'the deepest file is listed')
})

await run({ keepUntilEnd: true })
