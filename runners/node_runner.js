// abox's code runner for JavaScript contexts of the code plane (see
// python_runner.py for the protocol): one JSON request per stdin line,
// JSON lines out tagged with its id. Top-level declarations persist
// between cells (one vm context); the value of the cell's last expression
// (awaited when it is a promise) is the main result.
//   node -e "$(cat node_runner.js)"
const vm = require('vm')
const util = require('util')
const readline = require('readline')

let current = null
// stdout/stderr messages carry a timestamp (Unix epoch in nanoseconds), as
// the SDKs' OutputMessage has one
const nowNs = () => Number(process.hrtime.bigint() - startNs) + startEpochNs
const startNs = process.hrtime.bigint()
const startEpochNs = Date.now() * 1e6
const write = obj => process.stdout.write(JSON.stringify({
  ...obj, ...(obj.type === 'stdout' || obj.type === 'stderr' ? { timestamp: nowNs() } : {}), id: current,
}) + '\n')
const text = args => args.map(a => (typeof a === 'string' ? a : util.inspect(a))).join(' ') + '\n'
const console2 = {
  log: (...a) => write({ type: 'stdout', text: text(a) }),
  info: (...a) => write({ type: 'stdout', text: text(a) }),
  warn: (...a) => write({ type: 'stderr', text: text(a) }),
  error: (...a) => write({ type: 'stderr', text: text(a) }),
}
const sandbox = { console: console2, require, process, Buffer, setTimeout, setInterval, clearTimeout, clearInterval,
  URL, TextEncoder, TextDecoder, fetch: globalThis.fetch }
sandbox.globalThis = sandbox
const context = vm.createContext(sandbox)
let count = 0
const queue = []
let busy = false

async function run(req) {
  current = req.id
  count++
  const saved = { ...process.env }
  Object.assign(process.env, req.env || {})
  try {
    let value = vm.runInContext(req.code || '', context, { filename: '<cell>', breakOnSigint: true })
    if (value && typeof value.then === 'function') value = await value
    if (value !== undefined) {
      let json
      try { if (value !== null && typeof value === 'object') json = JSON.parse(JSON.stringify(value)) } catch { }
      write({ type: 'result', is_main_result: true, text: util.inspect(value), ...(json ? { json } : {}) })
    }
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e))
    write({ type: 'error', name: err.name, value: err.message, traceback: err.stack || '' })
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
  }
  write({ type: 'number_of_executions', execution_count: count })
  write({ type: 'end_of_execution' })
}

async function pump() {
  if (busy) return
  busy = true
  while (queue.length) await run(queue.shift())
  busy = false
}

process.on('SIGINT', () => {}) // an interrupt ends the wait, not the context
readline.createInterface({ input: process.stdin }).on('line', line => {
  try { queue.push(JSON.parse(line)) } catch { return }
  pump()
})
