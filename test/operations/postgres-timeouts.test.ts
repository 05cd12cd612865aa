import { CLI_ACTOR } from '../../src/domain.js'
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { hashKey } from '../../src/keys/api-key.js'
import { KeysService } from '../../src/keys/keys.service.js'
import { PostgresStorage } from '../../src/storage/postgres/postgres.storage.js'
import { BACKENDS, seed, useResources, within } from '../support/helpers.js'
import { TcpProxy } from '../support/tcp-proxy.js'

const postgres = BACKENDS.find((b) => b.name === 'postgres')

/** Storage reaching the database through a TcpProxy of the test's own; both closed after the describe. */
function useProxiedStorage(timeoutMs: number) {
  const opened: { proxy: TcpProxy; storage: PostgresStorage }[] = []
  after(async () => {
    for (const { proxy, storage } of opened) {
      await storage.close()
      await proxy.close()
    }
  })
  return {
    async proxied(url: string) {
      const direct = new URL(url)
      const proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
      const through = new URL(url)
      through.port = String(proxy.port)
      const storage = await PostgresStorage.open(through.toString(), { poolSize: 2, timeoutMs, migrationTimeoutMs: 10_000 })
      opened.push({ proxy, storage })
      return { proxy, storage }
    },
  }
}
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

  describe('the first key while the network hangs', () => {
    const TIMEOUT_MS = 300
    const { proxied } = useProxiedStorage(TIMEOUT_MS)

    test('When the database does not answer for longer than DB_TIMEOUT_MS while an instance makes the first key, then it waits, and one key is made', async () => {
      const database = await resources.database(postgres!)
      const { proxy, storage } = await proxied(database.url)
      await proxy.blackhole()
      const making = new KeysService(storage).createFirstKeyIfNone(10_000)
      await new Promise((r) => setTimeout(r, 1000))
      await proxy.restore()
      const first = await within(making, 8000, 'the first key after the outage')
      assert.ok(first)
      assert.deepEqual(
        (await storage.listKeys()).map((k) => k.id),
        [first.key.id],
      )
      assert.equal((await storage.findActiveKey(hashKey(first.token)))?.id, first.key.id)
    })
  })

  describe('a write whose connection hangs', () => {
    const TIMEOUT_MS = 1000
    const { proxied } = useProxiedStorage(TIMEOUT_MS)
    let proxy: TcpProxy
    let storage: PostgresStorage

    test('When a write hangs on the network, then it fails after one DB_TIMEOUT_MS (no ROLLBACK queued behind it) and the next write works', async () => {
      const database = await resources.database(postgres!)
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      ;({ proxy, storage } = await proxied(database.url))
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 2, actor: CLI_ACTOR }), {
        petId: 1n,
        quantity: 2,
        status: 'available',
      })

      await proxy.blackhole()
      const started = Date.now()
      await assert.rejects(storage.writeStock({ kind: 'set', petId: 1n, quantity: 3, actor: CLI_ACTOR }), { code: 'service_unavailable' })
      const ms = Date.now() - started
      assert.ok(ms < TIMEOUT_MS * 1.5, `the write failed after ${ms} ms (DB_TIMEOUT_MS ${TIMEOUT_MS})`)

      await proxy.restore()
      assert.deepEqual(
        await within(storage.writeStock({ kind: 'set', petId: 1n, quantity: 4, actor: CLI_ACTOR }), 5000, 'a write after the outage'),
        {
          petId: 1n,
          quantity: 4,
          status: 'available',
        },
      )
    })
  })

  describe('a listing whose connection fails midway', () => {
    const TIMEOUT_MS = 1000
    const PETS = 30_000
    const { proxied } = useProxiedStorage(TIMEOUT_MS)
    let proxy: TcpProxy
    let storage: PostgresStorage

    /** Reads the whole listing; `onFirstPiece` runs once, when the first piece has arrived. */
    async function listing(onFirstPiece?: () => Promise<void>) {
      const pieces: Buffer[] = []
      let entries = 0
      await storage.forEachInventoryJson(async (json, count) => {
        if (pieces.length === 0) await onFirstPiece?.()
        pieces.push(Buffer.from(json))
        entries += count
      })
      return { text: Buffer.concat(pieces).toString(), entries }
    }

    test('When the network hangs or the database goes away during a listing, then it fails as unavailable, within DB_TIMEOUT_MS of the stall, and the next listing is whole', async () => {
      const database = await resources.database(postgres!)
      await seed(
        database.url,
        Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: i % 7, status: 'available' })),
      )
      ;({ proxy, storage } = await proxied(database.url))
      const whole = await listing()
      assert.equal(whole.entries, PETS)
      assert.equal(JSON.parse(`[${whole.text}]`).length, PETS)

      let stalledAt = 0
      const stalled = listing(async () => {
        await proxy.blackhole()
        stalledAt = Date.now()
      })
      await assert.rejects(within(stalled, 10_000, 'the hung listing to fail'), { code: 'service_unavailable' })
      const ms = Date.now() - stalledAt
      assert.ok(ms < TIMEOUT_MS * 1.5, `the listing failed ${ms} ms after the network hung (DB_TIMEOUT_MS ${TIMEOUT_MS})`)
      await proxy.restore()
      assert.deepEqual(await within(listing(), 5000, 'a listing after the hang'), whole)

      await assert.rejects(
        listing(() => proxy.cut()),
        { code: 'service_unavailable' },
      )
      await proxy.restore()
      assert.deepEqual(await within(listing(), 5000, 'a listing after the outage'), whole)
    })
  })
})
