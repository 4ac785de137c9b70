// Through the official @e2b/code-interpreter SDK against aboxd (run by
// bench/code-interpreter): medians and p90 in ms, and the ratios to read.
import { Sandbox } from '@e2b/code-interpreter'

const N = Number(process.env.BENCH_RUNS || 100)
const now = () => Number(process.hrtime.bigint()) / 1e6
const stats = v => {
  const s = [...v].sort((a, b) => a - b)
  return { median: s[Math.floor((s.length - 1) / 2)], p90: s[Math.floor(s.length * 0.9)] }
}
const row = (name, v) => {
  const { median, p90 } = stats(v)
  console.log(`${name.padEnd(58)} ${median.toFixed(2).padStart(9)} ${p90.toFixed(2).padStart(9)}`)
  return median
}
const time = async fn => { const t = now(); await fn(); return now() - t }

console.log(`${'case'.padEnd(58)} ${'median ms'.padStart(9)} ${'p90 ms'.padStart(9)}`)
for (const [name, template] of [['code-interpreter (IPython)', 'code-interpreter-v1'], ['host template (plain runner)', 'base']]) {
  // a warm cell against a bare command, interleaved in one sandbox
  const s = await Sandbox.create(template, { timeoutMs: 600000 })
  await s.runCode('1+1')
  await s.commands.run('true')
  const cell = [], cmd = []
  for (let i = 0; i < N; i++) {
    cell.push(await time(() => s.runCode('1+1')))
    cmd.push(await time(() => s.commands.run('true')))
  }
  const c = row(`${name}: runCode('1+1'), warm`, cell)
  const b = row(`${name}: commands.run('true'), the same sandbox`, cmd)
  console.log(`${''.padEnd(58)} a cell is ${(c - b).toFixed(2)} ms over the bare command`)
  // a context made and its first cell (the interpreter's cold start)
  const ctx = [], first = []
  for (let i = 0; i < Math.min(N, 20); i++) {
    let made
    ctx.push(await time(async () => { made = await s.createCodeContext({ language: 'python' }) }))
    first.push(await time(() => s.runCode('1+1', { context: made })))
    await s.removeCodeContext(made.id)
  }
  row(`${name}: createCodeContext() (the interpreter starts)`, ctx)
  row(`${name}: its first cell`, first)
  await s.kill()
  // a fresh sandbox: create, then the first cell, as an SDK user goes
  const fresh = [], total = []
  for (let i = 0; i < Math.min(N, 20); i++) {
    let x
    const t = now()
    x = await Sandbox.create(template, { timeoutMs: 60000 })
    fresh.push(await time(() => x.runCode('1+1')))
    total.push(now() - t)
    await x.kill()
  }
  row(`${name}: first cell of a fresh sandbox`, fresh)
  row(`${name}: create -> first cell finished`, total)
  // the default javascript context's start with its first cell
  const js = []
  for (let i = 0; i < Math.min(N, 10); i++) {
    const x = await Sandbox.create(template, { timeoutMs: 60000 })
    js.push(await time(() => x.runCode('1+1', { language: 'js' })))
    await x.kill()
  }
  row(`${name}: first javascript cell of a fresh sandbox`, js)
}
