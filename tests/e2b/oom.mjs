// Memory pressure through the official E2B JS SDK, printed as TAP (run by
// tests/e2b/run.sh next to flows.mjs): a command the OOM killer ends
// throws a CommandExitError whose message names the OOM kill and the
// sandbox's memory limit, and the sandbox goes on serving commands and
// files.
import { CommandExitError } from 'e2b'
import { test, assert, eq, create, run } from './lib.mjs'


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

await run({ keepUntilEnd: true })
