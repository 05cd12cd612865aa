import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { CLI, freePort, startServer } from './helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'petstore-config-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

interface Outcome {
  code: number | null | 'still running'
  ms: number
  stdout: string
  stderr: string
  port: number
  database: string
}

/** Runs `petstore serve` with a valid base environment plus `env`, and reports how it ended (killed after 8 s). */
async function serve(env: Record<string, string>, args: string[] = []): Promise<Outcome> {
  const port = await freePort()
  const database = join(mkdtempSync(join(dir, 'db-')), 'petstore.db')
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: `sqlite:${database}`, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const started = Date.now()
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const timer = setTimeout(() => child.kill('SIGKILL'), 8_000)
  // Meanwhile, a server that wrongly started would be listening on its port.
  let everListened = false
  let done = false
  void exited.then(() => (done = true))
  while (!done && Date.now() - started < 8_000) {
    if (await listening(port)) everListened = true
    await new Promise((r) => setTimeout(r, 50))
  }
  const code = await exited
  clearTimeout(timer)
  const ms = Date.now() - started
  if (everListened) stdout += '\n[the test saw the port accept a connection]'
  return { code: child.signalCode === 'SIGKILL' ? 'still running' : code, ms, stdout, stderr, port, database }
}

const badSettings: [string, string][] = [
  ['PORT', 'abc'],
  ['PORT', '70000'],
  ['PORT', '-1'],
  ['PORT', '80.5'],
  ['LOG_LEVEL', 'loud'],
  ['PETSTORE_ENV', 'prod'],
  ['DATABASE_URL', 'mysql://x'],
  ['DATABASE_URL', '/var/lib/petstore.db'],
  ['PUBLIC_BASE_URL', 'not-a-url'],
  ['PUBLIC_BASE_URL', 'ftp://petstore.example.com'],
  ['PRODUCTION_BASE_URL', 'petstore.example.com'],
  ['STAGING_BASE_URL', 'https://staging.example.com/v1?x=1'],
  ['HOST', 'a host'],
  ['WORKERS', '0'],
  ['PUBLIC_BASE_URL', 'https://petstore.example.com/v1'],
  ['PRODUCTION_BASE_URL', 'https://petstore.example.com/api/v1/'],
]

describe('configuration', () => {
  for (const [name, value] of badSettings) {
    test(`When ${name}=${value}, then serve exits non-zero within seconds naming ${name}, and never listens`, async () => {
      const outcome = await serve({ [name]: value })
      assert.notEqual(outcome.code, 'still running', `serve did not exit: ${outcome.stderr}`)
      assert.notEqual(outcome.code, 0)
      assert.ok(outcome.ms < 5_000, `took ${outcome.ms} ms`)
      assert.match(outcome.stderr, new RegExp(`\\b${name}\\b`))
      assert.ok(outcome.stderr.includes(value), 'the bad value is quoted')
      assert.doesNotMatch(outcome.stdout, /listening/i)
      assert.equal(await listening(outcome.port), false)
      if (name !== 'DATABASE_URL') assert.equal(existsSync(outcome.database), false, 'no database was created')
      assert.doesNotMatch(outcome.stderr, /psk_/, 'no key was created')
    })
  }

  test('When several variables are bad, then every one of them is named at once', async () => {
    const outcome = await serve({ PORT: 'abc', LOG_LEVEL: 'loud', PETSTORE_ENV: 'prod' })
    assert.notEqual(outcome.code, 0)
    for (const name of ['PORT', 'LOG_LEVEL', 'PETSTORE_ENV']) assert.match(outcome.stderr, new RegExp(name))
  })

  test('When serve --workers is not a valid count, then it exits non-zero naming the setting', async () => {
    const outcome = await serve({}, ['--workers', 'many'])
    assert.notEqual(outcome.code, 'still running')
    assert.notEqual(outcome.code, 0)
    assert.match(outcome.stderr, /WORKERS|workers/)
    assert.equal(await listening(outcome.port), false)
  })

  test('When the database cannot be opened, then serve exits 1 with one line naming it, without its password', async () => {
    for (const url of ['postgres://postgres:s3cret@127.0.0.1:1/petstore', `sqlite:${join(dir, 'db-')}/../${'x'.repeat(300)}/y/petstore.db`]) {
      const outcome = await serve({ DATABASE_URL: url, DB_TIMEOUT_MS: '1000' })
      assert.equal(outcome.code, 1, outcome.stderr)
      assert.match(outcome.stderr, /^Error: Cannot open the database \S+: .+\n$/)
      assert.doesNotMatch(outcome.stderr, /s3cret|\bat \S+:\d+/)
    }
  })

  test('When every variable is set to a valid value, then serve starts, documents its public URL and stops cleanly', async () => {
    const database = join(mkdtempSync(join(dir, 'db-')), 'petstore.db')
    const server = await startServer(`sqlite:${database}`, {
      LOG_LEVEL: 'warn',
      PETSTORE_ENV: 'staging',
      PUBLIC_BASE_URL: 'https://inventory.internal.example/',
      PRODUCTION_BASE_URL: 'https://petstore.example.com',
      STAGING_BASE_URL: 'https://staging.petstore.example.com',
    })
    try {
      const res = await server.request('GET', '/v1/openapi.json')
      assert.equal(res.status, 200)
      const urls = (res.body.servers as { url: string }[]).map((s) => s.url)
      assert.ok(urls.includes('https://inventory.internal.example/v1'), urls.join(', '))
    } finally {
      assert.equal(await server.stop(), 0)
    }
  })
})
