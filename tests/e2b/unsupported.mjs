// What E2B has and abox does not, through the official E2B JS SDK, as
// TAP: Template.exists of the built-in names, a create with an MCP server
// refused naming it, and a cell in a language abox does not serve.
import { Sandbox, Template } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, eq, run, create } from './lib.mjs'

test('Template.exists: the built-in names are there, an unknown one is not', async () => {
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

// the SDK shows a 400's body only to E2B's own CI (requestSource 'ci'):
// the message naming the language is checked over HTTP in
// tests/daemon/unsupported.py; here, that the SDK raises at once
test('runCode in a language abox does not serve: the SDK raises a 400, no empty result', async () => {
  const s = await create({}, CodeSandbox)
  let msg = ''
  try {
    await s.runCode('1', { language: 'cobol' })
  } catch (e) {
    msg = String(e?.message ?? e)
  }
  eq(/^400\b/.test(msg), true, `the error: ${msg}`)
})

await run()
