// What the E2B JS SDK flow files share (run.sh copies it beside them, next
// to the SDK it installed; it is no flow itself): tests register with
// test(), sandboxes made with create() (or pushed on `made`) are killed,
// and run() prints the tests' TAP and exits non-zero when any failed.
import { Sandbox } from 'e2b'

const tests = []
export const made = []
export const test = (name, fn) => tests.push({ name, fn })
export const sleep = ms => new Promise(r => setTimeout(r, ms))
export function assert(cond, msg) { if (!cond) throw new Error(msg) }
// strict equality: for strings, numbers and booleans
export function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`) }
// equality of the JSON forms: arrays and objects by their contents
export function same(a, b, msg) { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`) }

// a sandbox of class cls (the code interpreter's too) for two minutes, or
// what opts say, killed after the test (see run())
export async function create(opts = {}, cls = Sandbox) {
  const s = await cls.create({ timeoutMs: 120000, ...opts })
  made.push(s)
  return s
}

// Runs the tests in order. A test that returns a string did not run its
// checks: `not ok # TODO` with that reason, and it counts as failed. The
// sandboxes made are killed after each test, or with keepUntilEnd only
// after the last (for tests that use what an earlier one made).
export async function run({ keepUntilEnd = false } = {}) {
  const killMade = async () => { for (const s of made.splice(0)) await s.kill().catch(() => {}) }
  console.log(`1..${tests.length}`)
  let failed = 0
  for (const [i, t] of tests.entries()) {
    try {
      const skip = await t.fn()
      console.log(skip ? `not ok ${i + 1} - ${t.name} # TODO ${skip}` : `ok ${i + 1} - ${t.name}`)
      if (skip) failed++
    } catch (e) {
      failed++
      console.log(`not ok ${i + 1} - ${t.name}`)
      for (const line of String(e?.stack ?? e).split('\n')) console.log(`# ${line}`)
    }
    if (!keepUntilEnd) await killMade()
  }
  await killMade()
  process.exit(failed ? 1 : 0)
}
