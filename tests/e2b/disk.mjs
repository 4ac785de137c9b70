// Disks through the official E2B JS SDK: a sandbox's files live on a disk
// of its own, never in its memory, and the disk's size holds (ENOSPC
// inside). Run by tests/e2b/run.sh after flows.mjs, TAP like it.
import { CommandExitError } from 'e2b'
import { test, assert, eq, create, run } from './lib.mjs'

const MB = 1 << 20

test('600 MB of files in a default sandbox: written, and not counted as memory', async () => {
  const s = await create()
  // more than the default 512 MB of memory: in memory this ended the
  // command with exitCode -1 (init OOM-killed)
  const r = await s.commands.run('dd if=/dev/zero of=/home/user/big bs=1M count=600 2>/dev/null; echo rc=$?; stat -c %s /home/user/big')
  eq(r.stdout, `rc=0\n${600 * MB}\n`, 'the files are written')
  const m = (await s.getMetrics()).at(-1)
  assert(m, 'no metrics')
  assert(m.memUsed < 128 * MB, `memUsed ${m.memUsed} counts the files`)
  assert(m.diskUsed >= 600 * MB, `diskUsed ${m.diskUsed}`)
  eq(m.diskTotal, 1024 * MB, 'diskTotal is the disk size')
  eq((await s.commands.run('echo still here')).stdout, 'still here\n', 'the sandbox goes on')
})

test('writing past the disk size fails with ENOSPC inside, and the sandbox goes on', async () => {
  const s = await create()
  try {
    await s.commands.run('dd if=/dev/zero of=/home/user/fill bs=1M count=1100')
    throw new Error('writing 1100 MB to a 1 GiB disk succeeded')
  } catch (e) {
    assert(e instanceof CommandExitError, `wrong error ${e}`)
    assert(/No space left on device/.test(e.stderr), `stderr: ${e.stderr}`)
  }
  await s.files.write('/home/user/small', 'x')
  eq((await s.commands.run('rm /home/user/fill; cat /home/user/small')).stdout, 'x', 'room again')
})

await run({ keepUntilEnd: true })
