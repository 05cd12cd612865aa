import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { LogDestination } from '../../src/log-destination.js'

const moduleUrl = new URL('../../src/log-destination.js', import.meta.url).href
const lines = (n: number, width = 40) => Array.from({ length: n }, (_, i) => `${String(i).padStart(width, '.')}\n`)
const settle = () => new Promise((resolve) => setTimeout(resolve, 50))

/** Runs `script` (an ES module body, with LogDestination imported) as a process; its stdout, read only after `readAfterMs`. */
function runChild(script: string, readAfterMs = 0): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', `import { LogDestination, stdoutLog } from '${moduleUrl}'\n${script}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const out: Buffer[] = []
  let err = ''
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  child.stdout.pause()
  setTimeout(() => {
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.stdout.resume()
  }, readAfterMs)
  return new Promise((resolve) => {
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: err }))
  })
}

describe('LogDestination (the service’s stdout for pino)', () => {
  test('When lines are written across event-loop turns, then the file holds every one once, in order', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'log-destination-')), 'out.log')
    const fd = openSync(file, 'w')
    const destination = new LogDestination(fd)
    const written = lines(5000)
    for (const [i, line] of written.entries()) {
      assert.equal(destination.write(line), true)
      if (i % 700 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    await settle()
    closeSync(fd)
    assert.equal(readFileSync(file, 'utf8'), written.join(''))
    assert.equal(destination.dropped, 0)
  })

  test('When more is pending than the bound, then the lines past it are dropped, counted and refused, and the rest is written', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'log-destination-')), 'out.log')
    const fd = openSync(file, 'w')
    const destination = new LogDestination(fd, 100)
    const written = lines(5, 30) // 31 characters each: three fit in 100
    const accepted = written.map((line) => destination.write(line))
    assert.deepEqual(accepted, [true, true, true, false, false])
    assert.equal(destination.dropped, 2)
    await settle()
    closeSync(fd)
    assert.equal(readFileSync(file, 'utf8'), written.slice(0, 3).join(''))
  })

  test('When the process exits right after logging, then the pending lines are written before it ends', async () => {
    const { code, stdout, stderr } = await runChild(
      'const log = stdoutLog(); for (let i = 0; i < 1000; i++) log.write("line " + i + "\\n"); process.exit(0)',
    )
    assert.equal(code, 0, stderr)
    assert.equal(stdout, Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join(''))
  })

  test('When stdout is a pipe that its reader leaves full for a while, then every line still arrives once, in order, and the event loop keeps turning', async () => {
    // 2 MB of lines while the reader waits 300 ms: the pipe (64 KB) fills, writes meet EAGAIN or block
    // a pool thread; the child counts its event-loop turns meanwhile.
    const script = `
      process.stdout // makes fd 1 non-blocking, as a service that touches process.stdout has it
      const log = new LogDestination(1)
      let turns = 0
      const tick = setInterval(() => turns++, 1)
      for (let i = 0; i < 20000; i++) { log.write(\`\${String(i).padStart(99, '.')}\\n\`); if (i % 1000 === 0) await new Promise((r) => setImmediate(r)) }
      await new Promise((r) => setTimeout(r, 200))
      clearInterval(tick)
      process.stderr.write(String(turns))
      await new Promise((r) => setTimeout(r, 1500))
      process.exit(0)`
    const { code, stdout, stderr } = await runChild(script, 300)
    assert.equal(code, 0, stderr)
    const expected = Array.from({ length: 20000 }, (_, i) => `${String(i).padStart(99, '.')}\n`).join('')
    assert.equal(stdout.length, expected.length)
    assert.ok(stdout === expected, 'every line once, in order')
    assert.ok(Number(stderr) > 20, `the event loop turned while the pipe was full (${stderr} turns of 1 ms in 200 ms)`)
  })
})
