// One pet's changes are read by the ledger's index by pet (SQLite migration 009, PostgreSQL 011): a
// page of the feed filtered by pet is full unless it is the last, its Link never leads to an empty
// page, and `petstore history` reads newest first; the query plan on each backend is an index range
// scan, not a scan of the ledger. Three imports of 25,000 pets give pet p the seqs p, 25,000 + p and
// 50,000 + p, far apart in a ledger of 75,000 rows.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { ImportRecord } from '../../src/domain.js'
import { InventoryService } from '../../src/inventory/inventory.service.js'
import { BACKENDS, useStorage } from './backends.js'

const PETS = 25_000

async function* records(quantity: number): AsyncIterable<ImportRecord[]> {
  for (let start = 0; start < PETS; start += 5000)
    yield Array.from({ length: 5000 }, (_, i) => ({
      item: { petId: BigInt(start + i + 1), quantity, status: 'available' as const },
      position: start + i + 1,
    }))
}

/** The plan of one pet's page as the backend would run it. */
async function planOf(url: string, newestFirst: boolean): Promise<string> {
  const order = newestFirst ? 'DESC' : ''
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true })
    try {
      const rows = db
        .prepare(`EXPLAIN QUERY PLAN SELECT * FROM inventory_changes WHERE seq > ? AND pet_id = ? ORDER BY seq ${order} LIMIT ?`)
        .all(0, 5, 101) as { detail: string }[]
      return rows.map((r) => r.detail).join('\n')
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      `EXPLAIN SELECT * FROM inventory_changes WHERE seq > $1 AND pet_id = $2 ORDER BY inventory_changes.seq ${order} LIMIT $3`,
      ['0', '5', 101],
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
        const { rows, nextAfter }: { rows: { seq: bigint }[]; nextAfter?: bigint } = await inventory.changesPage(cursor, 1, 5n)
        pages.push({ seqs: rows.map((r) => r.seq), nextAfter })
        cursor = nextAfter
      }
      assert.deepEqual(pages, [
        { seqs: [5n], nextAfter: 5n },
        { seqs: [25_005n], nextAfter: 25_005n },
        { seqs: [50_005n], nextAfter: undefined },
      ])
      const whole = await inventory.changesPage(0n, 100, 5n)
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
      const two = await inventory.changesPage(0n, 2, 5n)
      assert.deepEqual([two.rows.map((r) => r.seq), two.nextAfter], [[5n, 25_005n], 25_005n])
      assert.deepEqual(await inventory.changesPage(50_005n, 2, 5n), { rows: [] })
      assert.deepEqual(await inventory.changesPage(0n, 2, BigInt(PETS + 1)), { rows: [] })
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
        const plan = await planOf(fixture.database.url, newestFirst)
        assert.match(plan, /inventory_changes_pet/, plan)
      }
    })
  })
}
