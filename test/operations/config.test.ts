import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { CLI, startServer } from '../support/helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'petstore-config-'))
after(() => rmSync(dir, { recursive: true, force: true }))

interface Outcome {
  code: number | null | 'still running'
  ms: number
  stdout: string
  stderr: string
  database: string
}

/**
 * Runs `petstore serve` with a valid base environment plus `env`, and reports how it ended (killed
 * after 8 s). It logs at info, so a server that wrongly started would say where it listens.
 */
async function serve(env: Record<string, string>, args: string[] = []): Promise<Outcome> {
  const database = join(mkdtempSync(join(dir, 'db-')), 'petstore.db')
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: `sqlite:${database}`, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const started = Date.now()
  const timer = setTimeout(() => child.kill('SIGKILL'), 8_000)
  const [code] = (await once(child, 'exit')) as [number | null]
  clearTimeout(timer)
  return { code: child.signalCode === 'SIGKILL' ? 'still running' : code, ms: Date.now() - started, stdout, stderr, database }
}

describe('configuration', () => {
  // Every variable's rules are unit-tested in test/unit/config.test.ts; this checks what a refusal does to the process.
  test('When a variable is invalid, then serve exits 2 within seconds naming it, and never listens or creates anything', async () => {
    const outcome = await serve({ PORT: 'abc', LOG_LEVEL: 'loud' })
    assert.equal(outcome.code, 2, outcome.stderr)
    assert.ok(outcome.ms < 5_000, `took ${outcome.ms} ms`)
    assert.match(outcome.stderr, /^Invalid configuration:\nPORT="abc" is invalid: .+\nLOG_LEVEL="loud" is invalid: .+\n$/)
    assert.doesNotMatch(outcome.stdout, /listening/i)
    assert.equal(existsSync(outcome.database), false, 'no database was created')
    assert.doesNotMatch(outcome.stderr, /psk_/, 'no key was created')
  })

  test('When a stream or webhook variable is invalid, then serve exits 2 naming each of them, and never listens', async () => {
    const outcome = await serve({ STREAM_MAX_PER_KEY: '0', WEBHOOK_RETRY_SCHEDULE: '5s,25h', WEBHOOK_ALLOW_PRIVATE: 'yes' })
    assert.equal(outcome.code, 2, outcome.stderr)
    assert.match(
      outcome.stderr,
      /^Invalid configuration:\nSTREAM_MAX_PER_KEY="0" is invalid: .+\nWEBHOOK_RETRY_SCHEDULE="5s,25h" is invalid: .+\nWEBHOOK_ALLOW_PRIVATE="yes" is invalid: .+\n$/,
    )
    assert.doesNotMatch(outcome.stdout, /listening/i)
    assert.equal(existsSync(outcome.database), false, 'no database was created')
  })

  test('When serve --workers is not a valid count, then it exits non-zero naming the setting', async () => {
    const outcome = await serve({}, ['--workers', 'many'])
    assert.notEqual(outcome.code, 'still running')
    assert.notEqual(outcome.code, 0)
    assert.match(outcome.stderr, /WORKERS|workers/)
    assert.doesNotMatch(outcome.stdout, /listening/i)
  })

  test('When the database cannot be opened, then serve exits 1 with one line naming it, without its password', async () => {
    for (const url of [
      'postgres://postgres:s3cret@127.0.0.1:1/petstore',
      `sqlite:${join(dir, 'db-')}/../${'x'.repeat(300)}/y/petstore.db`,
    ]) {
      const outcome = await serve({ DATABASE_URL: url, DB_TIMEOUT_MS: '1000' })
      assert.equal(outcome.code, 1, outcome.stderr)
      assert.match(outcome.stderr, /^Error: Cannot open the database \S+: .+\n$/)
      assert.doesNotMatch(outcome.stderr, /s3cret|\bat \S+:\d+/)
    }
  })

  test('When every variable is set to a valid value, then serve starts, documents its public URL and stops cleanly', async () => {
    const database = join(mkdtempSync(join(dir, 'db-')), 'petstore.db')
    const server = await startServer(`sqlite:${database}`, {
      PETSTORE_ENV: 'staging',
      PUBLIC_BASE_URL: 'https://inventory.internal.example/',
      PRODUCTION_BASE_URL: 'https://petstore.example.com',
      STAGING_BASE_URL: 'https://staging.petstore.example.com',
      STREAM_HEARTBEAT_MS: '5000',
      STREAM_MAX_PER_KEY: '3',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_SCHEDULE: '1s,1m,1h',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_LEASE_MS: '5000',
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
