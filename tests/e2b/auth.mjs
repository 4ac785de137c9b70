// The sandbox planes' credentials through the official E2B JS SDK, as TAP
// (run by tests/e2b/run.sh like flows.mjs): every sandbox is secured,
// whatever the SDK version sends; uploadUrl()/downloadUrl() work as plain
// fetches and grant only what they were signed for; requests without the
// token are refused, envd's and the code plane's alike.
import { Sandbox } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, sleep, assert, eq, create, run } from './lib.mjs'

const base = process.env.E2B_SANDBOX_URL

test('a sandbox created without `secure` has an access token, and connect gives it back', async () => {
  const s = await create()
  assert(typeof s.envdAccessToken === 'string' && s.envdAccessToken.length >= 32, 'no envdAccessToken')
  const again = await Sandbox.connect(s.sandboxId)
  eq(again.envdAccessToken, s.envdAccessToken, 'connect answers the same token')
  await again.files.write('/tmp/c.txt', 'via connect')
  eq(await s.files.read('/tmp/c.txt'), 'via connect', 'both handles work')
})

test('envd refuses requests without the token (headers and Host form)', async () => {
  const s = await create()
  await s.files.write('/home/user/secret.txt', 'top secret')
  const url = `${base}/files?path=/home/user/secret.txt`
  const forms = [
    { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983' },
    { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'f'.repeat(64) },
  ]
  for (const headers of forms) {
    const r = await fetch(url, { headers })
    const body = await r.text()
    eq(r.status, 401, `status with ${JSON.stringify(Object.keys(headers))}`)
    assert(!body.includes('top secret'), 'the file leaked')
  }
  // the Host form: node's fetch does not let a Host header through, so raw HTTP
  const { request } = await import('node:http')
  const u = new URL(base)
  const st = await new Promise((resolve, reject) => {
    const q = request({ host: u.hostname, port: u.port, path: '/files?path=/home/user/secret.txt',
      headers: { Host: `49983-${s.sandboxId}.abox.test` } }, res => { res.resume(); resolve(res.statusCode) })
    q.on('error', reject)
    q.end()
  })
  eq(st, 401, 'Host form without a token')
  const ok = await fetch(url, { headers: { ...forms[0], 'X-Access-Token': s.envdAccessToken } })
  eq(await ok.text(), 'top secret', 'with the token')
})

test('downloadUrl and uploadUrl work as plain fetches', async () => {
  const s = await create()
  await s.files.write('/tmp/down.txt', 'download me')
  const dl = await s.downloadUrl('/tmp/down.txt')
  assert(dl.includes('signature='), `not signed: ${dl}`)
  assert(!dl.includes(s.sandboxId), 'the URL names no sandbox (built from E2B_SANDBOX_URL)')
  const r = await fetch(dl)
  eq(r.status, 200, 'download status')
  eq(await r.text(), 'download me', 'downloaded')
  const ul = await s.uploadUrl('/tmp/up.txt')
  const form = new FormData()
  form.append('file', new Blob(['uploaded']), 'up.txt')
  const w = await fetch(ul, { method: 'POST', body: form })
  eq(w.status, 200, `upload status (${await w.text()})`)
  eq(await s.files.read('/tmp/up.txt'), 'uploaded', 'the upload arrived')
  await s.files.write('/root/only.txt', "root's", { user: 'root' })
  const rootUrl = await s.downloadUrl('/root/only.txt', { user: 'root' })
  eq(await (await fetch(rootUrl)).text(), "root's", 'a URL signed for root reads as root')
  eq((await fetch(await s.downloadUrl('/root/only.txt'))).status, 403, 'the default user may not')
})

test('a signed URL grants only its operation and path, and only in its own sandbox', async () => {
  const a = await create()
  const b = await create()
  await a.files.write('/tmp/who', 'a')
  await b.files.write('/tmp/who', 'b')
  eq(await (await fetch(await b.downloadUrl('/tmp/who'))).text(), 'b', "b's URL reaches b")
  eq(await (await fetch(await a.downloadUrl('/tmp/who'))).text(), 'a', "a's URL reaches a")
  const dl = new URL(await a.downloadUrl('/tmp/who'))
  const other = new URL(dl)
  other.searchParams.set('path', '/tmp/other')
  eq((await fetch(other)).status, 401, 'another path')
  eq((await fetch(dl, { method: 'POST', body: 'x', headers: { 'Content-Type': 'application/octet-stream' } })).status,
    401, 'a read URL does not write')
  eq((await fetch(await a.uploadUrl('/tmp/who'))).status, 401, 'an upload URL does not read')
  const tampered = new URL(dl)
  const sig = tampered.searchParams.get('signature')
  tampered.searchParams.set('signature', sig.slice(0, -2) + (sig.endsWith('AA') ? 'BB' : 'AA'))
  eq((await fetch(tampered)).status, 401, 'a tampered signature')
  eq((await fetch(dl, { headers: { 'E2b-Sandbox-Id': b.sandboxId, 'E2b-Sandbox-Port': '49983' } })).status, 401,
    "a's URL sent to b")
  eq(await a.files.read('/tmp/who'), 'a', 'nothing was overwritten')
})

test('useSignatureExpiration: valid until it expires', async () => {
  const s = await create()
  await s.files.write('/tmp/exp.txt', 'soon gone')
  const dl = await s.downloadUrl('/tmp/exp.txt', { useSignatureExpiration: 2 })
  assert(dl.includes('signature_expiration='), `no expiration: ${dl}`)
  eq(await (await fetch(dl)).text(), 'soon gone', 'before the expiry')
  const ul = await s.uploadUrl('/tmp/exp2.txt', { useSignatureExpiration: 2 })
  await sleep(3200)
  eq((await fetch(dl)).status, 401, 'an expired download URL')
  const form = new FormData()
  form.append('file', new Blob(['late']), 'exp2.txt')
  eq((await fetch(ul, { method: 'POST', body: form })).status, 401, 'an expired upload URL')
  eq(await s.files.exists('/tmp/exp2.txt'), false, 'nothing was written')
})

test('the code plane: the SDK works, /execute and /contexts without a token are refused', async () => {
  const s = await create({}, CodeSandbox)
  eq((await s.runCode('print(6 * 7)')).logs.stdout.join(''), '42\n', 'runCode')
  const ctx = await s.createCodeContext({ language: 'python' })
  assert(ctx.id, 'createCodeContext')
  const h = { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49999' }
  const r = await fetch(`${base}/execute`, { method: 'POST', headers: h,
    body: JSON.stringify({ code: "open('/tmp/ran', 'w').write('x')" }) })
  eq(r.status, 401, '/execute without a token')
  eq((await fetch(`${base}/contexts`, { headers: h })).status, 401, '/contexts without a token')
  eq(await s.files.exists('/tmp/ran'), false, 'no code ran')
})

await run({ keepUntilEnd: true })
