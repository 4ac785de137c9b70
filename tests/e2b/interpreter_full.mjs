// R and Java cells through @e2b/code-interpreter, on the code interpreter's
// variant with R and a JDK (rootfs/code-interpreter-full.recipe, made ready
// by scripts/code-interpreter-template.sh), as TAP (run by tests/e2b/run.sh
// like flows.mjs); and both refused by name on a template without them.
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { test, assert, eq, same, create, run } from './lib.mjs'

const rbox = () => create({ template: 'code-interpreter-full' }, CodeSandbox)

test('r cells: printed values, stdout, stderr, errors, variables that persist, the folder', async () => {
  const s = await rbox()
  eq((await s.runCode('getwd()', { language: 'r' })).results[0]?.text.trim(), '[1] "/home/user"', 'getwd() as R prints it')
  await s.runCode('x <- 20', { language: 'r' })
  eq((await s.runCode('x + 22', { language: 'r' })).results[0]?.text, '[1] 42', 'variables persist')
  let r = await s.runCode('cat("hello\\n"); message("note"); invisible(1)', { language: 'r' })
  eq(r.logs.stdout.join(''), 'hello\n', 'cat() is stdout')
  eq(r.logs.stderr.join(''), 'note\n', 'message() is stderr')
  eq(r.results.length, 0, 'an invisible value is no result')
  r = await s.runCode('stop("boom")', { language: 'r' })
  eq(r.error?.name, 'ERROR', 'an error, named as R kernels name it')
  eq(r.error?.value, 'boom', 'its message')
  r = await s.runCode('system("printf no-newline"); 1 + 1', { language: 'r' })
  eq(r.results[0]?.text, '[1] 2', "a process's output without a newline breaks no message")
})

test('r: a run\'s envs, a context of its own, an interrupt at the client\'s timeout', async () => {
  const s = await rbox()
  eq((await s.runCode('Sys.getenv("FOO")', { language: 'r', envs: { FOO: 'bar' } })).results[0]?.text, '[1] "bar"', 'a run\'s env')
  eq((await s.runCode('Sys.getenv("FOO", "default")', { language: 'r' })).results[0]?.text, '[1] "default"', 'gone after')
  const ctx = await s.createCodeContext({ language: 'r', cwd: '/tmp' })
  eq((await s.runCode('getwd()', { context: ctx })).results[0]?.text, '[1] "/tmp"', 'a context in /tmp')
  let thrown = false
  try { await s.runCode('Sys.sleep(300)', { language: 'r', timeoutMs: 2000 }) } catch { thrown = true }
  assert(thrown, 'the timeout raised')
  const t0 = Date.now()
  eq((await s.runCode('1 + 1', { language: 'r', timeoutMs: 10000 })).results[0]?.text, '[1] 2', 'the next cell')
  assert(Date.now() - t0 < 3000, `it waited ${Date.now() - t0} ms behind the cut one`)
})

test('java cells: values, stdout, declarations that persist, exceptions, compile errors, a run\'s envs as properties', async () => {
  const s = await rbox()
  eq((await s.runCode('System.getProperty("user.dir")', { language: 'java' })).results[0]?.text.trim(), '/home/user', 'user.dir')
  let r = await s.runCode('int x = 40;\nSystem.out.println("hi");\nx + 2', { language: 'java' })
  eq(r.logs.stdout.join(''), 'hi\n', 'System.out')
  eq(r.results[0]?.text, '42', 'the last expression')
  eq((await s.runCode('x * 2', { language: 'java' })).results[0]?.text, '80', 'declarations persist')
  r = await s.runCode('int y = 1 / 0;', { language: 'java' })
  same([r.error?.name, r.error?.value], ['ArithmeticException', '/ by zero'], 'an exception')
  eq((await s.runCode('foo bar', { language: 'java' })).error?.name, 'CompilationException', 'a compile error')
  eq((await s.runCode('System.getProperty("FOO")', { language: 'java', envs: { FOO: 'bar' } })).results[0]?.text, 'bar', 'a run\'s env')
  eq((await s.runCode('System.getProperty("FOO", "default")', { language: 'java' })).results[0]?.text, 'default', 'gone after')
  let thrown = false
  try { await s.runCode('while (true) { }', { language: 'java', timeoutMs: 3000 }) } catch { thrown = true }
  assert(thrown, 'the timeout raised')
  eq((await s.runCode('1 + 1', { language: 'java', timeoutMs: 20000 })).results[0]?.text, '2', 'the next cell after an interrupt')
})

test('java and r on a template without them: a 400 that names what is missing', async () => {
  const s = await create({}, CodeSandbox)
  for (const [language, want] of [['java', /no Java \(a JDK/], ['r', /no R \(Rscript/]]) {
    let msg = ''
    try { await s.runCode('1', { language }) } catch (e) { msg = String(e?.message ?? e) }
    assert(/400/.test(msg), `${language} through the SDK: ${msg}`)
    // the SDK shows the status; the answer's text says what is missing
    const res = await fetch(`${process.env.E2B_SANDBOX_URL}/execute`, {
      method: 'POST',
      headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': s.envdAccessToken,
        'Content-Type': 'application/json' },
      body: JSON.stringify({ code: '1', language }),
    })
    const text = await res.text()
    assert(res.status === 400 && want.test(text), `${language}: ${res.status} ${text}`)
  }
})

await run()
