import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { PostgresStorage } from '../src/storage/postgres/postgres.storage.js'
import { BACKENDS, seed, useResources, within } from './helpers.js'
import { TcpProxy } from './tcp-proxy.js'

const postgres = BACKENDS.find((b) => b.name === 'postgres')
// The key every petstore process takes while migrating (src/storage/postgres/migrate.ts).
const MIGRATION_LOCK = 727_001

/** A session of the test's own that holds the migration lock until released. */
async function holdMigrationLock(url: string) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK])
  return {
    /** Resolves once another session is waiting for the lock. */
    async waiter() {
      for (;;) {
        const { rows } = await client.query(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted",
          [MIGRATION_LOCK],
        )
        if (rows[0].n > 0) return
        await new Promise((r) => setTimeout(r, 50))
      }
    },
    release: () => client.end(),
  }
}

describe('PostgreSQL timeouts', { skip: !postgres && 'PostgreSQL is not reachable' }, () => {
  const resources = useResources()

  test('When an instance starts while another migrates for longer than DB_TIMEOUT_MS, then it waits and starts', async () => {
    const database = await resources.database(postgres!)
    const lock = await holdMigrationLock(database.url)
    const starting = resources.server(database.url, { DB_TIMEOUT_MS: '300' })
    await lock.waiter()
    // Held well past DB_TIMEOUT_MS: the request timeout must not apply to migrations.
    await new Promise((r) => setTimeout(r, 1000))
    await lock.release()
    const server = await starting
    assert.equal((await server.request('GET', '/readyz')).status, 200)
  })

  test('When the migration lock is held past DB_MIGRATION_TIMEOUT_MS, then start fails with one line', async () => {
    const database = await resources.database(postgres!)
    const lock = await holdMigrationLock(database.url)
    try {
      const started = Date.now()
      await assert.rejects(resources.server(database.url, { DB_MIGRATION_TIMEOUT_MS: '1000' }), (error: Error) => {
        assert.match(error.message, /server exited \(1\)/)
        assert.match(error.message, /Error: Cannot open the database \S+: .*(timeout|cancel)/i)
        return true
      })
      assert.ok(Date.now() - started < 10_000)
    } finally {
      await lock.release()
    }
  })

  describe('a write whose connection hangs', () => {
    const TIMEOUT_MS = 1000
    let proxy: TcpProxy
    let storage: PostgresStorage
    after(async () => {
      await storage?.close()
      await proxy?.close()
    })

    test('When a write hangs on the network, then it fails after one DB_TIMEOUT_MS (no ROLLBACK queued behind it) and the next write works', async () => {
      const database = await resources.database(postgres!)
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      const direct = new URL(database.url)
      proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
      const proxied = new URL(database.url)
      proxied.port = String(proxy.port)
      storage = await PostgresStorage.open(proxied.toString(), { poolSize: 2, timeoutMs: TIMEOUT_MS, migrationTimeoutMs: 10_000 })
      assert.deepEqual(await storage.setQuantity(1n, 2), { petId: 1n, quantity: 2, status: 'available' })

      await proxy.blackhole()
      const started = Date.now()
      await assert.rejects(storage.setQuantity(1n, 3), { code: 'service_unavailable' })
      const ms = Date.now() - started
      assert.ok(ms < TIMEOUT_MS * 1.5, `the write failed after ${ms} ms (DB_TIMEOUT_MS ${TIMEOUT_MS})`)

      await proxy.restore()
      assert.deepEqual(await within(storage.setQuantity(1n, 4), 5000, 'a write after the outage'), {
        petId: 1n,
        quantity: 4,
        status: 'available',
      })
    })
  })
})
