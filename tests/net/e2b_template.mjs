// The official JS SDK's Template SDK against aboxd inside a private
// network world (e2b_template.py made it): Template.build from an image in
// the world's registry with aptInstall and pipInstall served by the
// world's own apt repository and pip index, and a runCmd; then a sandbox
// from the template. As TAP; lib.mjs is tests/e2b/'s, copied beside.
import { Sandbox, Template } from 'e2b'
import { test, assert, eq, create, run } from './lib.mjs'

const image = process.env.ABOX_TEST_IMAGE

// Template.build, its log lines kept; a failure's message and the log's
// end in what it throws (the SDK's errors carry the caller's stack alone)
async function build(t, name, opts = {}) {
  const logs = []
  try {
    await Template.build(t, name, { ...opts, onBuildLogs: e => logs.push(String(e.message ?? e)) })
  } catch (e) {
    throw new Error(`${e.message}\n${logs.slice(-40).join('\n')}`)
  }
  return logs.join('\n')
}

test('Template.build: fromImage (local registry), aptInstall, pipInstall, runCmd; a sandbox from it', async () => {
  const t = Template()
    .fromImage(image)
    .aptInstall(['abox-hello'])
    .pipInstall(['abox-greet'])
    .runCmd('mkdir -p /opt/out && abox-hello > /opt/out/apt && python3 -c "import abox_greet; print(abox_greet.hello())" > /opt/out/pip', { user: 'root' })
  const text = await build(t, 'pyapt', { cpuCount: 1, memoryMB: 1024 })
  assert(text.includes('Setting up abox-hello'), `apt installed the package: ${text.slice(-3000)}`)
  assert(text.includes('Successfully installed abox-greet'), `pip installed the wheel: ${text.slice(-3000)}`)
  assert(await Template.exists('pyapt'), 'Template.exists')
  const s = await create({}, { create: o => Sandbox.create('pyapt', o) })
  eq((await s.commands.run('cat /opt/out/apt /opt/out/pip')).stdout, 'hello from apt\nhello from pip\n', 'the runCmd step\'s files')
  eq((await s.commands.run('abox-hello')).stdout, 'hello from apt\n', 'the apt package, as the sandbox\'s user')
  eq((await s.commands.run('python3 -c "import abox_greet; print(abox_greet.hello())"')).stdout, 'hello from pip\n', 'the pip package')
  eq((await s.commands.run("dpkg-query -W -f='${Version}' abox-hello")).stdout, '1.0', 'dpkg knows it')
})

test('a second build of the same steps: every step from the cache', async () => {
  const t = Template()
    .fromImage(image)
    .aptInstall(['abox-hello'])
    .pipInstall(['abox-greet'])
    .runCmd('mkdir -p /opt/out && abox-hello > /opt/out/apt && python3 -c "import abox_greet; print(abox_greet.hello())" > /opt/out/pip', { user: 'root' })
  const text = await build(t, 'pyapt')
  assert(!text.includes('Setting up abox-hello') && text.includes('cached'), `nothing ran again: ${text.slice(-3000)}`)
})

await run()
