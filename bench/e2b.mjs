// Through the official E2B JS SDK against aboxd (run by bench/e2b):
// commands.run('true') round trip, create -> first command finished, and
// N sandboxes each streaming a command at once. Medians and p90 in ms.
import { Sandbox } from 'e2b'

const N = Number(process.env.BENCH_RUNS || 200)
const FLEET = Number(process.env.BENCH_FLEET || 100)
const now = () => Number(process.hrtime.bigint()) / 1e6
const stats = v => {
  const s = [...v].sort((a, b) => a - b)
  return { median: s[Math.floor((s.length - 1) / 2)], p90: s[Math.floor(s.length * 0.9)] }
}
const row = (name, v) => { const { median, p90 } = stats(v); console.log(`${name.padEnd(44)} ${median.toFixed(2).padStart(9)} ${p90.toFixed(2).padStart(9)}`) }

console.log(`${'case'.padEnd(44)} ${'median ms'.padStart(9)} ${'p90 ms'.padStart(9)}`)
const s = await Sandbox.create({ timeoutMs: 600000 })
await s.commands.run('true')
const rt = []
for (let i = 0; i < N; i++) { const t = now(); await s.commands.run('true'); rt.push(now() - t) }
row("commands.run('true')", rt)
await s.kill()

const cf = []
for (let i = 0; i < Math.min(N, 30); i++) {
  const t = now()
  const x = await Sandbox.create({ timeoutMs: 60000 })
  await x.commands.run('true')
  cf.push(now() - t)
  await x.kill()
}
row('create -> first command finished', cf)

const fleet = await Promise.all(Array.from({ length: FLEET }, () => Sandbox.create({ timeoutMs: 600000 })))
let errors = 0
const lat = []
const t0 = now()
await Promise.all(fleet.map(async x => {
  const t = now()
  try {
    const r = await x.commands.run('for i in 1 2 3 4 5; do echo line $i; sleep 0.05; done')
    if (r.stdout.split('\n').length !== 6) errors++
  } catch { errors++ }
  lat.push(now() - t)
}))
row(`${FLEET} sandboxes streaming at once (each)`, lat)
console.log(`${FLEET} streams: ${errors} errors, all done in ${(now() - t0).toFixed(0)} ms`)
await Promise.all(fleet.map(x => x.kill()))
