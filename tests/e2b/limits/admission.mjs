// Admission and input validation as the official E2B JS SDK sees them.
// Run by tests/e2b/run.sh (its third argument) against an aboxd started
// with ABOXD_LIMIT_KEY_SANDBOXES=2: the third concurrent sandbox of the
// key is a RateLimitError carrying E2B's words, a wrong-typed create is a
// 400 naming the field, and nothing refused leaves a sandbox.
import { Sandbox, RateLimitError } from 'e2b'
import { test, assert, made, run } from '../lib.mjs'

const api = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY

async function running() {
  const r = await fetch(`${api}/v2/sandboxes?state=running,paused`, { headers: { 'X-API-Key': key } })
  return (await r.json()).map(s => s.sandboxID).sort()
}

test('the concurrency cap: RateLimitError naming the limit, in E2B\'s words', async () => {
  made.push(await Sandbox.create({ timeoutMs: 60000 }))
  made.push(await Sandbox.create({ timeoutMs: 60000 }))
  const before = await running()
  try {
    made.push(await Sandbox.create({ timeoutMs: 60000 }))
    throw new Error('a third sandbox was made')
  } catch (e) {
    assert(e instanceof RateLimitError, `wrong error: ${e}`)
    assert(/maximum number of concurrent sandboxes \(2\)/.test(e.message), `message: ${e.message}`)
    assert(/limits\.keySandboxes/.test(e.message), `message names the limit: ${e.message}`)
  }
  const after = await running()
  assert(JSON.stringify(after) === JSON.stringify(before), `refused create left ${after} (before ${before})`)
})

test('room again once a sandbox is killed', async () => {
  await made.shift().kill()
  made.push(await Sandbox.create({ timeoutMs: 60000 }))
})

test('setTimeout beyond the maximum per sandbox: 400 naming it', async () => {
  try {
    await made[0].setTimeout(40 * 86400 * 1000)
    throw new Error('a 40-day timeout was taken')
  } catch (e) {
    assert(/timeout/.test(e.message) && /2592000/.test(e.message), `message: ${e.message}`)
  }
})

test('a create body with a wrong type or a name given twice is a 400 naming the field', async () => {
  const headers = { 'X-API-Key': key, 'Content-Type': 'application/json' }
  const post = async body => {
    const r = await fetch(`${api}/sandboxes`, { method: 'POST', body, headers })
    if (r.status === 201) {
      // taken when it should not have been: do not leave it running
      const made = await r.clone().json()
      await fetch(`${api}/sandboxes/${made.sandboxID}`, { method: 'DELETE', headers })
    }
    return r
  }
  let r = await post(JSON.stringify({ templateID: 'base', timeout: '60' }))
  let b = await r.json()
  assert(r.status === 400 && /timeout/.test(b.message), `string timeout: ${r.status} ${JSON.stringify(b)}`)
  r = await post('{"templateID": "base", "metadata": {"a": "1", "a": "2"}}')
  b = await r.json()
  assert(r.status === 400 && /metadata\.a/.test(b.message), `duplicate: ${r.status} ${JSON.stringify(b)}`)
})

// the tests use the sandboxes earlier ones made
await run({ keepUntilEnd: true })
