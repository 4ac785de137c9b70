// The JS SDK's Template SDK against aboxd, as TAP (run by tests/e2b/run.sh
// like flows.mjs): Template.build from a template made here, with a copy
// of uploaded files, commands as root and as user, environment, working
// folder and a start and ready command; Template.exists; a sandbox from
// it; a failing step reported as a BuildError.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox, Template } from 'e2b'
import { test, assert, eq, create, run } from './lib.mjs'

const abox = join(process.env.ABOX_TEST_BUILD, 'abox')
const ctx = mkdtempSync(join(tmpdir(), 'abox-tpljs-ctx-'))
mkdirSync(join(ctx, 'site'))
writeFileSync(join(ctx, 'site', 'index.txt'), 'from the context\n')

// a static busybox as template tjsbb in aboxd's own state; the SDK runs
// commands with /bin/bash -l -c, which busybox's shell stands in for
const root = mkdtempSync(join(tmpdir(), 'abox-tpljs-root-'))
mkdirSync(join(root, 'bin'))
mkdirSync(join(root, 'etc'))
copyFileSync('/bin/busybox', join(root, 'bin', 'busybox'))
chmodSync(join(root, 'bin', 'busybox'), 0o755)
for (const a of ['sh', 'cat', 'echo', 'id', 'mkdir', 'test', 'sleep', 'touch', 'pwd']) symlinkSync('busybox', join(root, 'bin', a))
writeFileSync(join(root, 'bin', 'bash'), '#!/bin/sh\nexec /bin/sh "$@"\n', { mode: 0o755 })
writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n')
writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nuser:x:1000:\n')
execFileSync(abox, ['template', 'import', 'tjsbb', root])
rmSync(root, { recursive: true, force: true })

test('Template.build: copy, commands as root and user, env, workdir, start and ready commands', async () => {
  const t = Template({ fileContextPath: ctx })
    .fromTemplate('tjsbb')
    .setEnvs({ GREETING: 'hello', PATH: '/bin' })
    .runCmd('mkdir -p /srv && echo built > /srv/built', { user: 'root' })
    .copy('site', '/srv/site')
    .setWorkdir('/srv')
    .runCmd('id -u > /tmp/who', { user: 'user' })
    .setStartCmd('touch /tmp/started; sleep 3600', 'test -f /tmp/started')
  const logs = []
  const info = await Template.build(t, { alias: 'js-built', cpuCount: 1, memoryMB: 512, onBuildLogs: e => logs.push(String(e.message ?? e)) })
  eq(info.templateId, 'js-built', 'the template id')
  assert(logs.some(l => l.includes('build finished')), `the log: ${logs.join(' | ')}`)
  assert(await Template.exists('js-built'), 'Template.exists')
  assert(!(await Template.exists('never-built-js')), 'an unknown name')
  const s = await create({}, { create: o => Sandbox.create('js-built', o) })
  eq((await s.commands.run('cat /srv/built /srv/site/index.txt')).stdout, 'built\nfrom the context\n', 'its files')
  eq((await s.commands.run('cat /tmp/who')).stdout.trim(), '1000', 'the step run as user')
  eq((await s.commands.run('echo $GREETING; pwd')).stdout, 'hello\n/srv\n', 'its env and folder')
  eq((await s.commands.run('test -f /tmp/started && echo yes')).stdout.trim(), 'yes', 'the start command ran')
})

test('a failing step: the build fails with its message', async () => {
  const t = Template({ fileContextPath: ctx }).fromTemplate('tjsbb').runCmd('echo fine').runCmd('echo failing; exit 7')
  let msg = ''
  try {
    await Template.build(t, { alias: 'js-fails' })
  } catch (e) {
    msg = String(e.message ?? e)
  }
  assert(msg.includes('exit code 7'), `the error: ${msg}`)
})

test('tags: builds kept apart by tag, assignTags, getTags, removeTags, name:BUILD_ID', async () => {
  const one = Template().fromTemplate('tjsbb').runCmd('echo one > /v', { user: 'root' })
  const two = Template().fromTemplate('tjsbb').runCmd('echo two > /v', { user: 'root' })
  const b1 = await Template.build(one, 'js-tags:v1')
  eq(JSON.stringify(b1.tags), '["v1"]', 'the build\'s tags')
  const b2 = await Template.build(two, 'js-tags', { tags: ['v2', 'latest'] })
  eq(JSON.stringify(b2.tags), '["v2","latest"]', 'the tags given')
  const v = async t => {
    const s = await create({}, { create: o => Sandbox.create(t, o) })
    return (await s.commands.run('cat /v')).stdout.trim()
  }
  eq(await v('js-tags:v1'), 'one', 'v1 is the first build')
  eq(await v('js-tags:v2'), 'two', 'v2 the second')
  eq(await v('js-tags:latest'), 'two', 'and latest')
  assert(!(await Template.exists('js-tags')), 'no default tag: the bare name is not there')
  const a = await Template.assignTags('js-tags:v1', ['production', 'default'])
  eq(a.buildId, b1.buildId, 'assignTags names the build it tagged')
  eq(await v('js-tags:production'), 'one', 'production is v1\'s build')
  eq(await v('js-tags'), 'one', 'so is the default')
  eq(await v(`js-tags:${b2.buildId}`), 'two', 'a build by its id')
  const tags = (await Template.getTags('js-tags')).map(t => `${t.tag}=${t.buildId === b1.buildId ? 1 : t.buildId === b2.buildId ? 2 : '?'}`).sort()
  eq(tags.join(' '), 'default=1 latest=2 production=1 v1=1 v2=2', 'getTags')
  await Template.removeTags('js-tags', 'v1')
  assert(!(await Template.exists('js-tags:v1')), 'a removed tag is gone')
  eq(await v('js-tags:production'), 'one', 'its build stays under its other tags')
  let msg = ''
  try { await Sandbox.create('js-tags:v1') } catch (e) { msg = String(e.message ?? e) }
  assert(msg.includes("'js-tags:v1' not found"), `a sandbox of a removed tag: ${msg}`)
  msg = ''
  try { await Template.removeTags('js-tags', 'never') } catch (e) { msg = String(e.message ?? e) }
  assert(msg.includes("no tag 'never'"), `removing a tag it never had: ${msg}`)
  msg = ''
  try { await Template.build(one, 'js-tags:.bad') } catch (e) { msg = String(e.message ?? e) }
  assert(msg.includes("tag '.bad'"), `a malformed tag: ${msg}`)
})

// run() ends the process: what the flow made goes on the way out
process.on('exit', () => {
  const made = execFileSync(abox, ['template', 'ls']).toString().split('\n').filter(n => n.startsWith('js-tags'))
  for (const n of ['tjsbb', 'js-built', ...made]) {
    try { execFileSync(abox, ['template', 'rm', n], { stdio: 'ignore' }) } catch {}
  }
  // the builds' layers (snapshots on tjsbb), children before parents
  for (let i = 0; i < 6; i++) {
    const ids = execFileSync(abox, ['snapshots', 'ls']).toString().split('\n').slice(1)
      .filter(l => ` ${l} `.includes(' tjsbb ')).map(l => l.split(/\s+/)[0])
    if (!ids.length) break
    for (const id of ids) {
      try { execFileSync(abox, ['snapshots', 'rm', id], { stdio: 'ignore' }) } catch {}
    }
  }
  rmSync(ctx, { recursive: true, force: true })
})
await run()
