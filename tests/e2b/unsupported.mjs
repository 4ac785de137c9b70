// What E2B has and abox does not, through the official E2B JS SDK, as
// TAP: Template.exists of the built-in names, and a create with volumes
// refused with a message naming them.
import { Sandbox, Template } from 'e2b'
import { test, eq, run } from './lib.mjs'

test('Template.exists: the built-in names are there, an unknown one is not', async () => {
  if (typeof Template?.exists !== 'function') return // this SDK version has no Template SDK
  eq(await Template.exists('base'), true, 'base')
  eq(await Template.exists('code-interpreter-v1'), true, 'code-interpreter-v1')
  eq(await Template.exists('no-such-template-here'), false, 'unknown')
})

test('a create with an MCP server is refused, naming MCP', async () => {
  let msg = ''
  try {
    const s = await Sandbox.create({ mcp: { github: { githubPersonalAccessToken: 'x' } }, timeoutMs: 60000 })
    await s.kill()
  } catch (e) {
    msg = String(e?.message ?? e)
  }
  eq(/mcp/i.test(msg), true, `the error: ${msg}`)
})

await run()
