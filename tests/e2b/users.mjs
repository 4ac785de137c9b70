// Users made inside a sandbox with the official E2B JS SDK, as TAP: a
// harness's `useradd agent` user runs commands, a pty and file operations
// as itself (uid, groups, home), entries name their owners from the
// sandbox's own files, and a user the sandbox lacks gets envd's error.
import { test, eq, create, run } from './lib.mjs'

async function withAgent () {
  const s = await create()
  await s.commands.run('useradd -m -s /bin/bash agent && groupadd team && usermod -aG team agent', { user: 'root' })
  return s
}

test('commands run as a user made with useradd: its uid, groups and home', async () => {
  const s = await withAgent()
  const r = await s.commands.run('id -un; id -Gn; pwd; echo $HOME', { user: 'agent' })
  eq(r.stdout, 'agent\nagent team\n/home/agent\n/home/agent\n', 'id and home')
  await s.files.makeDir('work', { user: 'agent' })
  eq((await s.commands.run('pwd', { user: 'agent', cwd: 'work' })).stdout.trim(), '/home/agent/work', 'relative cwd')
  const bg = await s.commands.run('sleep 0.2; id -u', { user: 'agent', background: true })
  eq((await bg.wait()).stdout.trim(), '1001', 'background command')
})

test('a pty as that user', async () => {
  const s = await withAgent()
  let out = ''
  const p = await s.pty.create({ cols: 80, rows: 24, user: 'agent', onData: d => { out += new TextDecoder().decode(d) } })
  await s.pty.sendInput(p.pid, new TextEncoder().encode('id -un; exit\n'))
  await p.wait().catch(() => {})
  eq(out.includes('agent'), true, `pty output: ${JSON.stringify(out)}`)
})

test('files as that user: relative paths in its home, its permissions, owner names', async () => {
  const s = await withAgent()
  const w = await s.files.write('notes.txt', 'hi', { user: 'agent' })
  eq(w.path, '/home/agent/notes.txt', 'written in its home')
  eq(await s.files.read('notes.txt', { user: 'agent' }), 'hi', 'read back')
  const info = await s.files.getInfo('/home/agent/notes.txt')
  eq(info.owner, 'agent', 'owner named from the sandbox')
  eq(info.group, 'agent', 'group named from the sandbox')
  const list = await s.files.list('.', { user: 'agent' })
  eq(list.some(e => e.name === 'notes.txt' && e.owner === 'agent'), true, 'listed with its owner')
  // a folder of its group: the group grants what the user alone would not have
  await s.commands.run('mkdir /srv/team && chgrp team /srv/team && chmod 770 /srv/team', { user: 'root' })
  await s.files.write('/srv/team/x.txt', 'team', { user: 'agent' })
  let denied = false
  try { await s.files.write('/srv/team/y.txt', 'no', { user: 'user' }) } catch (e) { denied = true }
  eq(denied, true, 'user, not in the group, is refused')
  eq(await s.files.exists('/home/agent', { user: 'agent' }), true, 'exists')
})

test('a user the sandbox does not have gets envd\'s error', async () => {
  const s = await create()
  let e1 = null
  try { await s.commands.run('id', { user: 'nosuch' }) } catch (e) { e1 = e }
  eq(e1 !== null && /invalid username: 'nosuch'/.test(e1.message), true, `commands: ${e1?.message}`)
  let e2 = null
  try { await s.files.read('/etc/hostname', { user: 'nosuch' }) } catch (e) { e2 = e }
  eq(e2 !== null && /nosuch/.test(e2.message), true, `files: ${e2?.message}`)
})

await run()
