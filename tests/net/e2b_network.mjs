// The official E2B JS SDK's network options against aboxd in the private
// world of tests/net/world.py (e2b_sdk.py runs this): E2B's defaults,
// allowInternetAccess, network.allowOut/denyOut by address and by name,
// updateNetwork, E2B's errors, and what getInfo shows.
import { Sandbox, ALL_TRAFFIC } from 'e2b'

const tests = []
const made = []
const test = (name, fn) => tests.push({ name, fn })
function assert(cond, msg) { if (!cond) throw new Error(msg) }

async function create(opts = {}) {
  const s = await Sandbox.create({ timeoutMs: 120000, ...opts })
  made.push(s)
  return s
}

// the command's stdout, or '' when it failed (curl's error: no output)
async function sh(sbx, cmd) {
  try {
    return (await sbx.commands.run(cmd, { timeoutMs: 30000 })).stdout
  } catch (e) {
    return e.stdout ?? ''
  }
}
const get = (sbx, url) => sh(sbx, `curl -sS -m 5 ${url}`)
// what must get through: a longer bound, so that a loaded machine (the
// first lookup goes through abox-netd's resolver to the world's DNS
// server) is not taken for a refusal; refusals are checked with get
const reach = (sbx, url) => sh(sbx, `curl -sS -m 20 ${url}`)

async function refused(promise, status, text) {
  try {
    await promise
  } catch (e) {
    assert(String(e.message).includes(`${status}: ${text}`), `expected ${status}: ${text}, got ${e.message}`)
    return
  }
  throw new Error(`expected ${status}: ${text}, the call succeeded`)
}

test('no network settings: the internet, as on E2B', async () => {
  const s = await create()
  assert((await reach(s, 'http://allowed.test/')).includes('hello from 203.0.113.10'), 'allowed.test over HTTP')
  assert((await reach(s, 'http://other.test/')).includes('hello from 203.0.113.11'), 'other.test over HTTP')
  assert(!(await get(s, 'http://169.254.169.254/')).includes('hello'), 'the metadata service is never reached')
})

test('allowInternetAccess: false lets nothing out', async () => {
  const s = await create({ allowInternetAccess: false })
  assert(!(await get(s, 'http://203.0.113.10/')).includes('hello'), 'no address answers')
  assert((await sh(s, 'getent hosts allowed.test || echo none')).includes('none'), 'no name resolves')
  const info = await s.getInfo()
  assert(info.allowInternetAccess === false, `getInfo().allowInternetAccess: ${info.allowInternetAccess}`)
})

test('network.allowOut by name with denyOut ALL_TRAFFIC', async () => {
  const s = await create({ network: { allowOut: ['allowed.test', '*.other.test'], denyOut: [ALL_TRAFFIC] } })
  assert((await reach(s, 'http://allowed.test/')).includes('hello from 203.0.113.10'), 'an allowed name')
  assert((await reach(s, 'http://www.other.test/')).includes('hello from 203.0.113.11'), 'a name below *.other.test')
  assert(!(await get(s, 'http://other.test/')).includes('hello'), 'other.test itself is not below it')
  assert(!(await get(s, 'http://203.0.113.11/')).includes('hello from'), 'an address is not a name')
  const info = await s.getInfo()
  assert(JSON.stringify(info.network?.allowOut) === JSON.stringify(['allowed.test', '*.other.test']),
    `getInfo().network.allowOut: ${JSON.stringify(info.network)}`)
  assert(JSON.stringify(info.network?.denyOut) === JSON.stringify([ALL_TRAFFIC]), 'getInfo().network.denyOut')
})

test('network.denyOut by address, the rest open', async () => {
  const s = await create({ network: { denyOut: ['203.0.113.11/32'] } })
  assert((await reach(s, 'http://203.0.113.10/')).includes('hello'), 'an address not denied')
  assert(!(await get(s, 'http://203.0.113.11/')).includes('hello'), 'the denied one')
})

test("E2B's validation errors, with E2B's texts", async () => {
  await refused(create({ network: { allowOut: ['allowed.test'] } }), 400,
    "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out to block all other traffic.")
  await refused(create({ network: { denyOut: ['example.com'] } }), 400, 'invalid denied CIDR example.com')
  await refused(create({ network: { allowOut: ['0.0.0.0'] } }), 400, 'invalid allowed address 0.0.0.0')
})

test('updateNetwork replaces the policy of a running sandbox', async () => {
  const s = await create()
  assert((await reach(s, 'http://203.0.113.10/')).includes('hello'), 'open at first')
  await s.updateNetwork({ denyOut: [ALL_TRAFFIC] })
  assert(!(await get(s, 'http://203.0.113.10/')).includes('hello'), 'closed after the update')
  await s.updateNetwork({ allowOut: ['203.0.113.11'], denyOut: [ALL_TRAFFIC] })
  assert((await reach(s, 'http://203.0.113.11/')).includes('hello'), 'the allowed address after a second update')
  assert(!(await get(s, 'http://203.0.113.10/')).includes('hello'), 'and only that one')
  await s.updateNetwork({})
  assert((await reach(s, 'http://203.0.113.10/')).includes('hello'), 'an empty update opens it again')
  await refused(s.updateNetwork({ denyOut: ['not-a-cidr'] }), 400, 'invalid denied CIDR not-a-cidr')
})

test('what abox does not do yet is answered as E2B answers a team without it', async () => {
  await refused(create({ network: { egressProxy: { address: 'proxy.test:1080' } } }), 403,
    'Egress proxy (network.egressProxy) is not enabled for this team.')
})

console.log(`1..${tests.length}`)
let failed = 0
for (const [i, t] of tests.entries()) {
  try {
    await t.fn()
    console.log(`ok ${i + 1} - ${t.name}`)
  } catch (e) {
    failed++
    console.log(`not ok ${i + 1} - ${t.name}`)
    for (const l of String(e.stack || e).split('\n').slice(0, 6)) console.log(`# ${l}`)
  }
  for (const s of made.splice(0)) await s.kill().catch(() => {})
}
process.exit(failed ? 1 : 0)
