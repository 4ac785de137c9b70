// getHost() of the official E2B JS SDK against an aboxd with no `domain`
// configured (tests/e2b/run.sh configures none), as TAP: the host names
// this daemon, never the public cloud, and reaches the sandbox's port by
// Host header and by name (curl resolves *.localhost to loopback).
import { request } from 'node:http'
import { execFileSync } from 'node:child_process'
import { test, sleep, assert, eq, create, run } from './lib.mjs'

const api = new URL(process.env.E2B_API_URL)

test('getHost without a configured domain names this daemon, not e2b.app', async () => {
  const s = await create()
  const h = s.getHost(8000)
  assert(!h.includes('e2b.app'), `the public cloud: ${h}`)
  eq(h, `8000-${s.sandboxId}.localhost:${api.port}`, 'the host')
})

test('getHost reaches the sandbox port by Host header and by name', async () => {
  const s = await create()
  await s.commands.run('mkdir -p /tmp/www && echo served > /tmp/www/i.txt && cd /tmp/www && exec python3 -m http.server 8000 --bind 127.0.0.1', { background: true })
  for (let i = 0; i < 50; i++) {
    const r = await s.commands.run('python3 -c \'import socket; socket.create_connection(("127.0.0.1", 8000))\' 2>/dev/null && echo up || true')
    if (r.stdout.trim() === 'up') break
    await sleep(100)
  }
  const h = s.getHost(8000)
  // node's fetch does not let a Host header through, so raw HTTP
  const body = await new Promise((resolve, reject) => {
    const q = request({ host: '127.0.0.1', port: api.port, path: '/i.txt', headers: { Host: h } }, res => {
      let b = ''
      res.on('data', d => { b += d })
      res.on('end', () => resolve(`${res.statusCode} ${b}`))
    })
    q.on('error', reject)
    q.end()
  })
  eq(body, '200 served\n', 'by Host header')
  eq(execFileSync('curl', ['-s', `http://${h}/i.txt`], { encoding: 'utf8', timeout: 30000 }), 'served\n', 'by name')
})

await run()
