import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { holdSqliteRecoveryLock } from '../support/sqlite-locks.js'

describe('SQLite write lock held by another process', () => {
  const suite = useSuite(BACKENDS.find((b) => b.name === 'sqlite')!, {
    env: { DB_TIMEOUT_MS: '500' },
    seed: [{ petId: 1, quantity: 1, status: 'available' }],
  })
  const path = () => suite.database.url.slice('sqlite:'.length)

  test('When another writer holds the lock past the busy timeout, then PATCH gets 503 and nothing changes; once released, writes work', async () => {
    const other = new Database(suite.database.url.slice('sqlite:'.length))
    other.exec('BEGIN IMMEDIATE')
    try {
      const started = Date.now()
      const patch = suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 50 } })
      // While that PATCH waits for the lock, the process keeps serving: reads are answered at once.
      await new Promise((r) => setTimeout(r, 50))
      const readStarted = Date.now()
      const [list, health] = await Promise.all([
        suite.server.request('GET', '/v1/inventory', { token: suite.token }),
        suite.server.request('GET', '/healthz'),
      ])
      assert.equal(list.body[0].quantity, 1)
      assert.equal(health.status, 200)
      assert.ok(Date.now() - readStarted < 200, `reads took ${Date.now() - readStarted} ms behind a waiting writer`)
      const res = await patch
      assert.equal(res.status, 503, res.text)
      assert.deepEqual(res.body, { code: 'service_unavailable', message: res.body.message, status: 503 })
      assert.ok(Date.now() - started < 3000)
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
    const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 51 } })
    assert.equal(res.status, 200)
    assert.equal((await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body[0].quantity, 51)
  })

  test('When another process holds the database in recovery, then reads wait without stalling the process and answer 503 past DB_TIMEOUT_MS', async () => {
    const lock = await holdSqliteRecoveryLock(path())
    try {
      const started = Date.now()
      const list = suite.server.request('GET', '/v1/inventory', { token: suite.token })
      const health = await suite.server.request('GET', '/healthz')
      assert.equal(health.status, 200, 'the process keeps serving while the read waits')
      const res = await list
      assert.equal(res.status, 503, res.text)
      assert.deepEqual(res.body, { code: 'service_unavailable', message: res.body.message, status: 503 })
      assert.ok(Date.now() - started < 3000)
    } finally {
      await lock.release()
    }
  })

  test('When the lock is released while a read waits, then the read succeeds', async () => {
    const lock = await holdSqliteRecoveryLock(path())
    const list = suite.server.request('GET', '/v1/inventory', { token: suite.token })
    await new Promise((r) => setTimeout(r, 100))
    await lock.release()
    const res = await list
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body[0].quantity, 51)
  })
})
