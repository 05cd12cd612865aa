// PostgreSQL stock batches that are not plain PATCHes (issue 25): read without the lock, planned, and
// applied by apply_stock_plan (migration 010) under the lock. Here another writer holds the lock while
// the batch is read and commits before the function gets it, deterministically (the test waits until
// the function waits for the lock): when that writer gave out seqs and order ids but changed nothing
// the batch read, the plan applies with its seqs and ids moved past the other writer's; when it changed
// what the batch read, nothing of the stale plan is written and the batch is planned again under the lock.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import type { Storage, StorageObserver } from '../../src/storage/ports.js'
import type { PlaceResult } from '../../src/stock/writes.js'
import { postgresDatabase, postgresUnavailable, type TestDatabase } from '../support/databases.js'
import { openOn } from './backends.js'
import { actor, allOrders, changesAfter, item, seed } from './fixtures.js'

const unavailable = await postgresUnavailable()
const skip = unavailable !== undefined && !process.env.CI ? unavailable : false

describe('PostgreSQL stock batches applied by apply_stock_plan', { skip }, () => {
  let database: TestDatabase
  let storage: Storage
  let other: pg.Client
  let replans = 0
  const observer: StorageObserver = { batchCommitted() {}, statementRan() {}, stockReplanned: () => replans++ }

  before(async () => {
    database = await postgresDatabase()
    storage = await openOn(database, observer)
    other = new pg.Client({ connectionString: database.url })
    await other.connect()
    await seed(storage, [item(1n, 10), item(2n, 50)])
  })
  after(async () => {
    await other?.end()
    await storage?.close()
    await database?.drop()
  })

  const counters = async () => {
    const { rows } = await other.query('SELECT last_change::text AS c, last_order::text AS o FROM inventory_version')
    return { lastChange: BigInt(rows[0].c), lastOrder: BigInt(rows[0].o) }
  }

  /** Runs `during` in a transaction of another connection that holds the inventory_version lock while `write` is read and planned, and until the plan's call waits for the lock. */
  async function whileLocked<T>(write: () => Promise<T>, during: (client: pg.Client) => Promise<void>): Promise<T> {
    await other.query('BEGIN')
    await other.query('SELECT 1 FROM inventory_version FOR UPDATE')
    let settled: unknown
    const pending = write()
    pending.then(
      (value) => (settled ??= { value }),
      (error: unknown) => (settled ??= { error }),
    )
    const deadline = Date.now() + 10_000
    for (;;) {
      // A backend waiting for this connection's lock: the plan's call (the read before it takes no lock).
      const { rows } = await other.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pg_backend_pid() = ANY(pg_blocking_pids(pid))`,
      )
      if (rows[0].n > 0) break
      assert.equal(settled, undefined, 'the write was answered while another writer held the lock')
      assert.ok(Date.now() < deadline, 'the plan never came to wait for the lock')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    try {
      await during(other)
      await other.query('COMMIT')
    } catch (error) {
      await other.query('ROLLBACK')
      throw error
    }
    return pending
  }

  test('When another writer gives out seqs and order ids while a placement waits for the lock, then the placement applies with its seq and order id after theirs, and answers that id', async () => {
    const before = await counters()
    const placement = { kind: 'place', petId: 1n, quantity: 2, actor: actor(7), idempotency: { key: 'shifted', fingerprint: 'f' } } as const
    const placed = (await whileLocked(
      () => storage.writeStock(placement),
      async (client) => {
        // Five PATCHes of pet 2 and three orders of pet 2, as another instance would commit them.
        for (const quantity of [41, 42, 43, 44, 45])
          await client.query(
            `SELECT * FROM set_inventory_quantities(ARRAY[2]::bigint[], ARRAY[$1]::integer[], ARRAY[NULL]::integer[],
               ARRAY[NULL]::text[], ARRAY['adjustment'], ARRAY[NULL]::text[], now())`,
            [quantity],
          )
        await client.query(
          `INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
             SELECT v.last_order + g, 2, 1, 'placed', now(), now() FROM inventory_version AS v, generate_series(1, 3) AS g`,
        )
        await client.query('UPDATE inventory_version SET last_order = last_order + 3')
      },
    )) as PlaceResult
    assert.ok(
      placed !== 'idempotency_key_reused' && placed.outcome === 'placed',
      JSON.stringify(placed, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
    )
    assert.equal(placed.order.id, before.lastOrder + 4n)
    assert.equal(replans, 0)
    assert.deepEqual(await counters(), { lastChange: before.lastChange + 6n, lastOrder: before.lastOrder + 4n })
    const changes = await changesAfter(storage, before.lastChange)
    assert.deepEqual(
      changes.map((c) => [c.seq, c.petId, c.previousQuantity, c.quantity, c.reason, c.orderId]),
      [
        [before.lastChange + 1n, 2n, 50, 41, 'adjustment', null],
        [before.lastChange + 2n, 2n, 41, 42, 'adjustment', null],
        [before.lastChange + 3n, 2n, 42, 43, 'adjustment', null],
        [before.lastChange + 4n, 2n, 43, 44, 'adjustment', null],
        [before.lastChange + 5n, 2n, 44, 45, 'adjustment', null],
        [before.lastChange + 6n, 1n, 10, 8, 'order', before.lastOrder + 4n],
      ],
    )
    const order = await storage.getOrder(placed.order.id)
    assert.deepEqual(order && [order.petId, order.quantity, order.status], [1n, 2, 'placed'])
    assert.equal((await storage.getInventoryItem(1n))?.quantity, 8)
    assert.deepEqual(
      (await allOrders(storage)).map((o) => o.id),
      [1n, 2n, 3n, 4n].map((n) => before.lastOrder + n),
    )
    // The Idempotency-Key was stored with the order's id as given out, so a replay answers that order.
    const replayed = (await storage.writeStock(placement)) as PlaceResult
    assert.ok(replayed !== 'idempotency_key_reused' && replayed.outcome === 'placed' && replayed.replayed)
    assert.equal(replayed.order.id, before.lastOrder + 4n)
  })

  test('When a batch moves an order it places itself and another writer places one while it waits for the lock, then the batch is planned again and moves the order the id names', async () => {
    const before = await counters()
    const replansBefore = replans
    const L = before.lastOrder
    // One batch (written in one turn): two placements, then a cancellation of the id the second would get as read.
    const results = await whileLocked(
      () =>
        Promise.all([
          storage.writeStock({ kind: 'place', petId: 1n, quantity: 1, actor: actor() }),
          storage.writeStock({ kind: 'place', petId: 2n, quantity: 1, actor: actor() }),
          storage.writeStock({ kind: 'transition', orderId: L + 2n, status: 'cancelled', actor: actor() }),
        ]),
      async (client) => {
        await client.query(
          `INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
             SELECT last_order + 1, 2, 1, 'placed', now(), now() FROM inventory_version`,
        )
        await client.query('UPDATE inventory_version SET last_order = last_order + 1')
      },
    )
    assert.equal(replans, replansBefore + 1)
    // Planned under the lock: the other writer's order is L+1, so L+2 is pet 1's, and that is the one cancelled.
    const [first, second, moved] = results as [PlaceResult, PlaceResult, { id: bigint; petId: bigint; status: string }]
    assert.ok(first !== 'idempotency_key_reused' && first.outcome === 'placed' && first.order.id === L + 2n)
    assert.ok(second !== 'idempotency_key_reused' && second.outcome === 'placed' && second.order.id === L + 3n)
    assert.deepEqual([moved.id, moved.petId, moved.status], [L + 2n, 1n, 'cancelled'])
    assert.equal((await storage.getOrder(L + 3n))?.status, 'placed')
  })

  test('When another writer changes the stock a placement read while it waits for the lock, then the stale plan writes nothing and the placement is decided again on the stock as it is', async () => {
    const before = await counters()
    const replansBefore = replans
    const stock = (await storage.getInventoryItem(1n))!.quantity
    const placed = (await whileLocked(
      () => storage.writeStock({ kind: 'place', petId: 1n, quantity: stock, actor: actor() }),
      async (client) => {
        await client.query(
          `SELECT * FROM set_inventory_quantities(ARRAY[1]::bigint[], ARRAY[3]::integer[], ARRAY[NULL]::integer[],
             ARRAY[NULL]::text[], ARRAY['count'], ARRAY[NULL]::text[], now())`,
        )
      },
    )) as PlaceResult
    assert.deepEqual(placed, { outcome: 'insufficient_stock', available: 3, replayed: false })
    assert.equal(replans, replansBefore + 1)
    assert.deepEqual(await counters(), { lastChange: before.lastChange + 1n, lastOrder: before.lastOrder })
    assert.deepEqual(
      (await changesAfter(storage, before.lastChange)).map((c) => [c.petId, c.quantity, c.reason]),
      [[1n, 3, 'count']],
    )
    assert.equal((await storage.getInventoryItem(1n))?.quantity, 3)
  })

  test('When a batch is planned again under the lock, then its ledger rows keep their writes’ trace contexts', async () => {
    const before = await counters()
    const replansBefore = replans
    const traceContext = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    await whileLocked(
      () => storage.writeStock({ kind: 'place', petId: 1n, quantity: 1, actor: { ...actor(), traceContext } }),
      async (client) => {
        await client.query(
          `SELECT * FROM set_inventory_quantities(ARRAY[1]::bigint[], ARRAY[50]::integer[], ARRAY[NULL]::integer[],
             ARRAY[NULL]::text[], ARRAY['count'], ARRAY[NULL]::text[], now())`,
        )
      },
    )
    assert.equal(replans, replansBefore + 1)
    assert.deepEqual(
      (await storage.listChanges({ after: before.lastChange, limit: 10, traceContexts: true })).map((c) => [
        c.quantity,
        c.reason,
        c.traceContext,
      ]),
      [
        [50, 'count', undefined],
        [49, 'order', traceContext],
      ],
    )
  })

  test('When another writer cancels an order a transition read as placed, then the stale plan writes nothing and the transition is refused as the order now is', async () => {
    const placed = (await storage.writeStock({ kind: 'place', petId: 2n, quantity: 5, actor: actor() })) as PlaceResult
    assert.ok(placed !== 'idempotency_key_reused' && placed.outcome === 'placed')
    const id = placed.order.id
    const stockBefore = (await storage.getInventoryItem(2n))!.quantity
    const replansBefore = replans
    const moved = await whileLocked(
      () => storage.writeStock({ kind: 'transition', orderId: id, status: 'approved', actor: actor() }),
      async (client) => {
        await client.query(`UPDATE orders SET status = 'cancelled', updated_at = now() WHERE id = $1`, [String(id)])
      },
    )
    assert.deepEqual(moved, { refused: 'invalid_transition', from: 'cancelled' })
    assert.equal(replans, replansBefore + 1)
    assert.equal((await storage.getOrder(id))?.status, 'cancelled')
    assert.equal((await storage.getInventoryItem(2n))?.quantity, stockBefore)
  })

  test('When another writer claims the Idempotency-Key a placement read as unused while it waits for the lock, then the stale plan writes nothing and the placement answers as the key now does', async () => {
    const before = await counters()
    const replansBefore = replans
    const placed = await whileLocked(
      () =>
        storage.writeStock({
          kind: 'place',
          petId: 2n,
          quantity: 1,
          actor: actor(7),
          idempotency: { key: 'raced', fingerprint: 'mine' },
        }),
      async (client) => {
        await client.query(
          `INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at)
           VALUES (7, 'raced', 'theirs', 'not_found', NULL, NULL, now())`,
        )
      },
    )
    assert.equal(placed, 'idempotency_key_reused')
    assert.equal(replans, replansBefore + 1)
    assert.deepEqual(await counters(), before)
  })
})
