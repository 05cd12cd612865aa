// One pet's changes are read by the ledger's index by pet (SQLite migration 012, PostgreSQL 011): a
// page of the feed filtered by pet is full unless it is the last, its Link never leads to an empty
// page, and `petstore history` and the feed with `before` read newest first; the query plan on each
// backend is an index range scan, not a scan of the ledger, both ways. Three imports of 25,000 pets
// give pet p the seqs p, 25,000 + p and 50,000 + p, far apart in a ledger of 75,000 rows. One
// reason's rows (the feed's `reason`, SQLite migration 011, PostgreSQL 013) by the index by reason.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { ImportRecord } from '../../src/domain.js'
import { InventoryService } from '../../src/inventory/inventory.service.js'
import { CHANGE_COLUMNS } from '../../src/storage/postgres/ledger.js'
import { petSpanSql } from '../../src/storage/sqlite/ledger.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, INT64_MAX } from './fixtures.js'

const PETS = 25_000

async function* records(quantity: number): AsyncIterable<ImportRecord[]> {
  for (let start = 0; start < PETS; start += 5000)
    yield Array.from({ length: 5000 }, (_, i) => ({
      item: { petId: BigInt(start + i + 1), quantity, status: 'available' as const },
      position: start + i + 1,
    }))
}

interface PlannedPage {
  newestFirst: boolean
  /** A newest-first page's `before`: the storage reads through the seq below it. */
  before?: bigint
  /** Without it, a page of the whole ledger. */
  petId?: bigint
  reason?: string
}

/** The plan of a page as the backend would run it (the statement of src/storage/<backend>/ledger.ts). */
async function planOf(url: string, { newestFirst, before, petId, reason }: PlannedPage): Promise<string> {
  const order = newestFirst ? 'DESC' : ''
  const values = [
    0n,
    ...(before === undefined ? [] : [before - 1n]),
    ...(petId === undefined ? [] : [petId]),
    ...(reason === undefined ? [] : [reason]),
    101n,
  ]
  const where = [
    'seq > ?',
    ...(before === undefined ? [] : ['seq <= ?']),
    ...(petId === undefined ? [] : ['pet_id = ?']),
    ...(reason === undefined ? [] : ['reason = ?']),
  ].join(' AND ')
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true })
    try {
      // One pet's page is read span by span, each span by this statement.
      const [sql, args] =
        petId === undefined
          ? [`SELECT * FROM inventory_changes WHERE ${where} ORDER BY seq ${order} LIMIT ?`, values]
          : [
              petSpanSql(reason !== undefined, newestFirst),
              [0n, petId, 0n, before === undefined ? INT64_MAX : before - 1n, ...(reason === undefined ? [] : [reason]), 101n],
            ]
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as {
        detail: string
      }[]
      return rows.map((r) => r.detail).join('\n')
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    // With the statistics autovacuum keeps (a column never written, trace_context, is then as wide as it
    // is: nothing); without them the planner guesses each text column's width, and in this small
    // fixture a wider guess tips the newest-first page to a sort.
    await client.query('ANALYZE inventory_changes')
    let n = 0
    const { rows } = await client.query(
      `EXPLAIN SELECT ${CHANGE_COLUMNS} FROM inventory_changes WHERE ${where.replace(/\?/g, () => `$${++n}`)} ORDER BY inventory_changes.seq ${order} LIMIT $${++n}`,
      values.map(String),
    )
    return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')
  } finally {
    await client.end()
  }
}

for (const backend of BACKENDS) {
  describe(`one pet's changes by the ledger's index (${backend.name})`, () => {
    const fixture = useStorage(backend, { scope: 'describe' })
    let inventory: InventoryService

    test('When the feed is filtered by pet, then every page but the last is full and the Links lead through every row of the pet, then stop', async () => {
      const { storage } = fixture
      for (const quantity of [1, 2, 3]) await storage.importInventory(records(quantity))
      inventory = new InventoryService(storage)
      const pages: { seqs: bigint[]; nextAfter: bigint | undefined }[] = []
      let cursor: bigint | undefined = 0n
      while (cursor !== undefined && pages.length < 10) {
        const { rows, nextAfter }: { rows: { seq: bigint }[]; nextAfter?: bigint } = await inventory.changesPage(cursor, 1, { petId: 5n })
        pages.push({ seqs: rows.map((r) => r.seq), nextAfter })
        cursor = nextAfter
      }
      assert.deepEqual(pages, [
        { seqs: [5n], nextAfter: 5n },
        { seqs: [25_005n], nextAfter: 25_005n },
        { seqs: [50_005n], nextAfter: undefined },
      ])
      const whole = await inventory.changesPage(0n, 100, { petId: 5n })
      assert.deepEqual(
        [whole.rows.map((r) => [r.seq, r.quantity]), whole.nextAfter],
        [
          [
            [5n, 1],
            [25_005n, 2],
            [50_005n, 3],
          ],
          undefined,
        ],
      )
      const two = await inventory.changesPage(0n, 2, { petId: 5n })
      assert.deepEqual([two.rows.map((r) => r.seq), two.nextAfter], [[5n, 25_005n], 25_005n])
      assert.deepEqual(await inventory.changesPage(50_005n, 2, { petId: 5n }), { rows: [] })
      assert.deepEqual(await inventory.changesPage(0n, 2, { petId: BigInt(PETS + 1) }), { rows: [] })
      // Unfiltered, the same: full pages, the last without a next.
      const end = await inventory.changesPage(74_995n, 5)
      assert.deepEqual([end.rows.map((r) => r.seq), end.nextAfter], [[74_996n, 74_997n, 74_998n, 74_999n, 75_000n], undefined])
    })

    test('When a history is read, then it comes newest first, up to the limit', async () => {
      assert.deepEqual(
        (await inventory.history(5n, 10)).map((r) => [r.seq, r.quantity]),
        [
          [50_005n, 3],
          [25_005n, 2],
          [5n, 1],
        ],
      )
      assert.deepEqual(
        (await inventory.history(5n, 1)).map((r) => r.seq),
        [50_005n],
      )
      assert.deepEqual(await inventory.history(BigInt(PETS + 1), 10), [])
    })

    test("When one pet's page is planned, then the backend reads it by the index by pet, both ways", async () => {
      for (const newestFirst of [false, true]) {
        const plan = await planOf(fixture.database.url, { newestFirst, petId: 5n })
        assert.match(plan, /inventory_changes_pet/, plan)
      }
    })

    test('When the feed is read newest first below a seq, then the pages are the rows oldest first reversed, full but the last, for the store and for one pet', async () => {
      const walk = async (before: bigint, limit: number, petId?: bigint) => {
        const pages: { seqs: bigint[]; nextBefore: bigint | undefined }[] = []
        let cursor: bigint | undefined = before
        while (cursor !== undefined && pages.length < 10) {
          const { rows, nextBefore }: { rows: { seq: bigint }[]; nextBefore?: bigint } = await inventory.changesPageBefore(cursor, limit, {
            petId,
          })
          pages.push({ seqs: rows.map((r) => r.seq), nextBefore })
          cursor = nextBefore
        }
        return pages
      }
      assert.deepEqual(await walk(INT64_MAX, 1, 5n), [
        { seqs: [50_005n], nextBefore: 50_005n },
        { seqs: [25_005n], nextBefore: 25_005n },
        { seqs: [5n], nextBefore: undefined },
      ])
      // Two full pages and nothing after them: the second has no Link onward.
      assert.deepEqual(await walk(50_006n, 2, 5n), [
        { seqs: [50_005n, 25_005n], nextBefore: 25_005n },
        { seqs: [5n], nextBefore: undefined },
      ])
      assert.deepEqual(await walk(50_005n, 2, 5n), [{ seqs: [25_005n, 5n], nextBefore: undefined }])
      assert.deepEqual(await walk(5n, 2, 5n), [{ seqs: [], nextBefore: undefined }])
      assert.deepEqual(await walk(INT64_MAX, 2, BigInt(PETS + 1)), [{ seqs: [], nextBefore: undefined }])
      // The whole ledger, from its newest row (the first ten pages), and from the middle.
      const top = await walk(INT64_MAX, 3)
      assert.deepEqual(
        top.flatMap((p) => p.seqs),
        Array.from({ length: 30 }, (_, i) => 75_000n - BigInt(i)),
      )
      assert.ok(top.every((p) => p.nextBefore === p.seqs.at(-1)))
      const middle = await inventory.changesPageBefore(30_001n, 4)
      assert.deepEqual([middle.rows.map((r) => r.seq), middle.nextBefore], [[30_000n, 29_999n, 29_998n, 29_997n], 29_997n])
      const start = await inventory.changesPageBefore(4n, 3)
      assert.deepEqual([start.rows.map((r) => r.seq), start.nextBefore], [[3n, 2n, 1n], undefined])
      assert.deepEqual(await inventory.changesPageBefore(1n, 3), { rows: [] })
    })

    test('When a newest-first page is planned, then the backend reads it backwards by an index (the primary key, or the index by pet), whether from the newest row or the middle', async () => {
      for (const before of [INT64_MAX, 30_001n]) {
        const store = await planOf(fixture.database.url, { newestFirst: true, before })
        const pet = await planOf(fixture.database.url, { newestFirst: true, before, petId: 5n })
        if (backend.name === 'sqlite') {
          // SQLite: a SEARCH in the index's order, so no sort (a TEMP B-TREE) of what it finds.
          assert.match(store, /^SEARCH inventory_changes USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/, store)
          assert.match(
            pet,
            /^SEARCH inventory_changes USING INDEX inventory_changes_pet_span \(<expr>=\? AND pet_id=\? AND rowid>\? AND rowid<\?\)$/,
            pet,
          )
        } else {
          assert.match(store, /Index Scan Backward using inventory_changes_pkey/, store)
          assert.match(pet, /Index Scan Backward using inventory_changes_pet/, pet)
          for (const plan of [store, pet]) assert.doesNotMatch(plan, /Sort|Seq Scan/, plan)
        }
      }
    })

    test("When the feed is filtered by reason, then a rare reason's rows come by the ledger's index by reason, full pages both ways, with a pet too", async () => {
      const { storage } = fixture
      // After the 75,000 import rows: counts of pets 7, 8 and 9, an arrival for 7, then a count of 7 again.
      const written: [bigint, 'count' | 'arrival'][] = [
        [7n, 'count'],
        [8n, 'count'],
        [9n, 'count'],
        [7n, 'arrival'],
        [7n, 'count'],
      ]
      for (const [i, [petId, reason]] of written.entries())
        await storage.writeStock({ kind: 'set', petId, quantity: 100 + i, reason, note: null, actor: actor() })
      const seqs = async (read: () => Promise<{ rows: { seq: bigint }[] }>) => (await read()).rows.map((r) => r.seq)
      const counts = await inventory.changesPage(0n, 2, { reason: 'count' })
      assert.deepEqual(
        [counts.rows.map((r) => [r.seq, r.petId, r.reason]), counts.nextAfter],
        [
          [
            [75_001n, 7n, 'count'],
            [75_002n, 8n, 'count'],
          ],
          75_002n,
        ],
      )
      assert.deepEqual(await seqs(() => inventory.changesPage(75_002n, 2, { reason: 'count' })), [75_003n, 75_005n])
      assert.deepEqual(await inventory.changesPage(75_005n, 2, { reason: 'count' }), { rows: [] })
      const newest = await inventory.changesPageBefore(INT64_MAX, 3, { reason: 'count' })
      assert.deepEqual([newest.rows.map((r) => r.seq), newest.nextBefore], [[75_005n, 75_003n, 75_002n], 75_002n])
      assert.deepEqual(await seqs(() => inventory.changesPageBefore(75_002n, 3, { reason: 'count' })), [75_001n])
      assert.deepEqual(await seqs(() => inventory.changesPageBefore(INT64_MAX, 10, { reason: 'arrival' })), [75_004n])
      assert.deepEqual(await seqs(() => inventory.changesPageBefore(INT64_MAX, 10, { petId: 7n, reason: 'count' })), [75_005n, 75_001n])
      assert.deepEqual(await seqs(() => inventory.changesPage(0n, 10, { petId: 7n, reason: 'import' })), [7n, 25_007n, 50_007n])
      assert.deepEqual(await seqs(() => inventory.changesPage(0n, 10, { reason: 'order' })), [])
      for (const newestFirst of [false, true]) {
        const plan = await planOf(fixture.database.url, { newestFirst, reason: 'count' })
        assert.match(plan, /inventory_changes_reason/, plan)
        // SQLite walks the index in seq order; PostgreSQL may fetch a rare reason's few rows by a bitmap
        // of the index and sort them, never reading the ledger whole.
        assert.doesNotMatch(plan, backend.name === 'sqlite' ? /TEMP B-TREE|SCAN inventory_changes$/ : /Seq Scan/, plan)
      }
    })
  })
}
