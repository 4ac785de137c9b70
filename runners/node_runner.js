// abox's code runner for JavaScript and TypeScript contexts of the code
// plane (see python_runner.py for the protocol): one JSON request per stdin
// line, JSON lines out tagged with its id.
//
// Cells run in one context of Node's REPL machinery, which gives what a
// notebook cell needs: declarations that persist between cells, top-level
// await, dynamic import(), require() from the context's folder, and the
// value of the last expression (awaited when it is a promise) as the main
// result. Static `import ... from` lines become awaited dynamic imports.
// TypeScript cells are transpiled first with the template's `typescript`
// package (types removed, nothing checked), then run the same way.
//   node -e "$(cat node_runner.js)" [javascript|typescript]
'use strict'
const repl = require('repl')
const util = require('util')
const vm = require('vm')
const readline = require('readline')
const { PassThrough, Writable } = require('stream')
const { Console } = require('console')

const language = process.argv[1] === 'typescript' || process.argv[2] === 'typescript' ? 'typescript' : 'javascript'
let current = null

// Messages go through the original stdout; what a cell writes to
// process.stdout/stderr becomes its stdout/stderr messages instead, so no
// cell can forge or break a message.
const rawWrite = process.stdout.write.bind(process.stdout)
const startNs = process.hrtime.bigint()
const startEpochNs = BigInt(Date.now()) * 1000000n
const nowNs = () => Number(process.hrtime.bigint() - startNs + startEpochNs)
const send = obj => {
  if ((obj.type === 'stdout' || obj.type === 'stderr') && current === null) return
  rawWrite(JSON.stringify({ ...obj, id: current }) + '\n')
}
const stream = kind => (chunk, enc, cb) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
  if (text) send({ type: kind, text, timestamp: nowNs() })
  if (typeof enc === 'function') enc()
  else if (typeof cb === 'function') cb()
  return true
}
process.stdout.write = stream('stdout')
process.stderr.write = stream('stderr')
const sink = kind => new Writable({ write: (chunk, enc, cb) => { stream(kind)(chunk); cb() } })
const cellConsole = new Console({ stdout: sink('stdout'), stderr: sink('stderr') })

const input = new PassThrough()
const output = new PassThrough()
output.resume()
const server = repl.start({
  input, output, prompt: '', terminal: false, useGlobal: false, ignoreUndefined: true,
  // the REPL's own SIGINT watchdog leaves SIGINT deadly after it: the
  // scripts below are interrupted by vm's, awaits by the handler at the end
  breakEvalOnSigint: false, preview: false,
})
server.context.console = cellConsole

let ts = null
if (language === 'typescript') {
  try { ts = require('typescript') } catch {
    send({ type: 'missing', value: "the template has no TypeScript compiler (the typescript package: Debian's node-typescript)" })
    process.exit(3)
  }
}

// a string's inspection is its text without the quotes, as E2B gives it
const unquote = t => (t.length >= 2 && t[0] === t[t.length - 1] && (t[0] === "'" || t[0] === '"' || t[0] === '`'))
  ? t.slice(1, -1) : t

// import X from 'm' / import * as X from 'm' / import { a, b as c } from 'm'
// / import X, { a } from 'm' / import 'm'  →  awaited dynamic imports
function rewriteImports(code) {
  let n = 0
  const named = spec => '{' + spec.slice(1, -1).split(',').map(s => s.trim()).filter(Boolean)
    .map(s => s.replace(/^type\s+/, '').replace(/\s+as\s+/, ': ')).join(', ') + '}'
  code = code.replace(/^([ \t]*)import\s+((?:[\w$]+\s*,\s*)?(?:\*\s+as\s+[\w$]+|\{[^}]*\}|[\w$]+))\s+from\s+(['"][^'"\n]+['"])[ \t]*;?/gm,
    (all, lead, clause, from) => {
      const m = `__abox_m${n++}`
      const parts = []
      let rest = clause.trim()
      const def = /^([\w$]+)\s*(,|$)/.exec(rest)
      if (def && !rest.startsWith('{') && !rest.startsWith('*')) {
        parts.push(`var ${def[1]} = ${m}.default !== undefined ? ${m}.default : ${m};`)
        rest = rest.slice(def[0].length).trim()
      }
      if (rest.startsWith('*')) parts.push(`var ${rest.replace(/^\*\s+as\s+/, '')} = ${m};`)
      else if (rest.startsWith('{')) parts.push(`var ${named(rest)} = ${m};`)
      return `${lead}var ${m} = await import(${from}); ${parts.join(' ')}`
    })
  return code.replace(/^([ \t]*)import\s+(['"][^'"\n]+['"])[ \t]*;?/gm, (all, lead, from) => `${lead}await import(${from});`)
}

function transpile(code) {
  const out = ts.transpileModule(code, {
    reportDiagnostics: true,
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, sourceMap: false },
  })
  const bad = (out.diagnostics || []).filter(d => d.category === ts.DiagnosticCategory.Error)
  if (bad.length) {
    const err = new SyntaxError(ts.flattenDiagnosticMessageText(bad[0].messageText, '\n'))
    err.stack = `SyntaxError: ${err.message}`
    throw err
  }
  // the module marker TypeScript adds to a file with imports is no statement
  return out.outputText.replace(/^export \{\};?\s*$/m, '')
}

const CELL = '<cell>'
// the runner's and Node's own frames are not the user's business
const cellStack = e => String(e.stack || '').split('\n')
  .filter(l => !/^\s+at /.test(l) || (l.includes(CELL) && !l.includes('node:')))
  .join('\n')

// Cells with await or import() go through the REPL's evaluation, which
// rewrites top-level await and resolves dynamic imports; the REPL hands an
// error to its domain instead of the callback when one is active (it is,
// after a cell that awaited): both ways end the cell. Other cells run as
// scripts in the same context, interruptible by SIGINT even in a busy loop.
let pending = null
if (server._domain) {
  server._domain.removeAllListeners('error')
  server._domain.on('error', e => { if (pending) pending.reject(e) })
}
function script(code) {
  // a cell that is one object literal is a value, not a block
  if (/^\s*\{[\s\S]*\}\s*;?\s*$/.test(code)) {
    try { return new vm.Script(`(${code.replace(/;\s*$/, '')})`, { filename: CELL }) } catch { }
  }
  return new vm.Script(code, { filename: CELL })
}
function evaluate(code) {
  if (!/\bawait\b|\bimport\s*\(/.test(code))
    return Promise.resolve().then(() => script(code).runInContext(server.context, { breakOnSigint: true }))
  return new Promise((resolve, reject) => {
    pending = { resolve, reject }
    server.eval(code, server.context, CELL, (err, value) => {
      if (err) reject(err)
      else resolve(value)
    })
  }).finally(() => { pending = null })
}

let count = 0
async function run(req) {
  current = req.id
  count++
  const saved = { ...process.env }
  Object.assign(process.env, req.env || {})
  try {
    let code = req.code || ''
    if (language === 'typescript') code = transpile(code)
    let value = await evaluate(rewriteImports(code))
    if (value && typeof value.then === 'function') value = await value
    if (value !== undefined) {
      let json
      try { if (value !== null && typeof value === 'object') json = JSON.parse(JSON.stringify(value)) } catch { }
      send({ type: 'result', is_main_result: true, text: unquote(util.inspect(value)), ...(json ? { json } : {}), extra: {} })
    }
  } catch (e) {
    // errors of the context's realm are not this realm's Error: read them
    // by shape, so a ReferenceError stays a ReferenceError
    const isErr = e !== null && typeof e === 'object' && 'message' in e
    const name = (e && e.constructor && e.constructor.name === 'Recoverable') ? 'SyntaxError'
      : isErr ? String(e.name || 'Error') : 'Error'
    const inner = e && e.err ? e.err : e // the REPL wraps incomplete input
    send({
      type: 'error', name, value: isErr ? String(inner.message) : String(e),
      traceback: isErr ? cellStack(inner) : '',
    })
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
  }
  send({ type: 'number_of_executions', execution_count: count })
  send({ type: 'end_of_execution' })
  current = null
}

const queue = []
let busy = false
async function pump() {
  if (busy) return
  busy = true
  while (queue.length) await run(queue.shift())
  busy = false
}

// an interrupt ends the running cell (one waiting for a promise too), not
// the context
process.on('SIGINT', () => {
  if (pending) pending.reject(Object.assign(new Error('the cell was interrupted'), { name: 'KeyboardInterrupt' }))
})
send({ type: 'ready' }) // aboxd answers the context's creation now
readline.createInterface({ input: process.stdin }).on('line', line => {
  try { queue.push(JSON.parse(line)) } catch { return }
  pump()
})
