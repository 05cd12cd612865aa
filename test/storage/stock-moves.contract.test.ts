// Stock moves (issue 46) through the storage port, on every backend: a delta applied alone, changes
// applied in a batch all or nothing (one ledger row each, contiguous, carrying the batch's id), a set
// refused unless the entry holds its expectedQuantity, an Idempotency-Key that answers as it first
// did, and deltas racing on one hot pet (from one instance, and on PostgreSQL from two) that lose no update.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { type Actor, type InventoryChange, type InventoryItem, MAX_QUANTITY } from '../../src/domain.js'
import type { Storage } from '../../src/storage/ports.js'
import type { Violation } from '../../src/storage/invariants.js'
import type { ChangesResult, StockChange, StockWrite } from '../../src/stock/writes.js'
import { assertInvariants } from '../support/helpers.js'
import { BACKENDS, useStorage } from './backends.js'
import { BEYOND_DOUBLE, INT64_MAX, INT64_MIN, actor, changesAfter, expectChanges, item, now, row, seed } from './fixtures.js'

const who = actor(7, 'req-1')
const START = [item(1n, 10), item(2n, 5, 'pending'), item(3n, 0, 'sold')]

type ChangesWrite = StockWrite & { kind: 'changes' }

/** Changes as the service hands them to storage: a batch with its id, or one delta alone (batchId null). */
const changes = (
  list: StockChange[],
  options: { batchId?: string | null; by?: Actor; idempotency?: { key: string; fingerprint: string } } = {},
): ChangesWrite => ({
  kind: 'changes',
  batchId: options.batchId ?? null,
  changes: list,
  actor: options.by ?? who,
  ...(options.idempotency ? { idempotency: options.idempotency } : {}),
})

/** One adjustment alone: a delta, with no batch. */
const adjust = (petId: bigint, delta: number, by: Actor = who): ChangesWrite => changes([{ petId, delta }], { by })

const applied = (batchId: string | null, entries: InventoryItem[], replayed = false): ChangesResult => ({
  outcome: 'applied',
  batchId,
  entries,
  replayed,
})

/** A ledger row of a batch: as `row` makes it, with the batch's id. */
const batchRow = (batchId: string, ...args: Parameters<typeof row>): Omit<InventoryChange, 'at'> => ({ ...row(...args), batchId })

/** A value as JSON, bigints as decimal strings: for failure messages. */
const show = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))

/** Every violation `petstore check` would report, read in-process. */
async function violations(storage: Storage): Promise<Violation[]> {
  const found: Violation[] = []
  await storage.checkInvariants((v) => found.push(v))
  return found
}

/** Runs `sql` with `params` straight on the database, outside the service (as an operator's mistake would). */
async function runSql(url: string, sql: { sqlite: string; postgres: string }, params: unknown[]) {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    try {
      db.prepare(sql.sqlite).run(...params)
    } finally {
      db.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(sql.postgres, params)
  } finally {
    await client.end()
  }
}

/**
 * `clients` concurrent clients, client i on storages[i % storages.length], each submitting `perClient`
 * adjustments of +1 to pet 1 one after another; resolves with every quantity they were answered.
 */
async function hammer(storages: Storage[], clients: number, perClient: number): Promise<number[]> {
  const answered: number[][] = await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const storage = storages[c % storages.length]!
      const by = actor(c + 1, `client-${c}`)
      const quantities: number[] = []
      for (let i = 0; i < perClient; i++) {
        const result = await storage.writeStock(adjust(1n, 1, by))
        if (typeof result !== 'object' || result.outcome !== 'applied' || result.entries.length !== 1)
          assert.fail(`client ${c}, adjustment ${i}: ${show(result)}`)
        quantities.push(result.entries[0]!.quantity)
      }
      return quantities
    }),
  )
  return answered.flat()
}

/**
 * After `total` adjustments of +1 to pet 1 from `from`: the entry holds from + total, every quantity
 * in between was answered exactly once, and the ledger holds one row per adjustment, in seq order,
 * each starting where the one before it ended.
 */
async function assertHammered(storage: Storage, last: bigint, from: number, total: number, answered: number[]) {
  assert.deepEqual(await storage.getInventoryItem(1n), item(1n, from + total))
  assert.equal(answered.length, total)
  const sorted = Int32Array.from(answered).sort()
  for (let i = 0; i < total; i++)
    if (sorted[i] !== from + 1 + i) assert.fail(`answered quantity #${i} is ${sorted[i]}, not ${from + 1 + i}`)
  const rows = await changesAfter(storage, last)
  assert.equal(rows.length, total, 'one ledger row per adjustment')
  let previous = from
  for (const [i, r] of rows.entries()) {
    if (
      r.seq !== last + 1n + BigInt(i) ||
      r.petId !== 1n ||
      r.previousQuantity !== previous ||
      r.quantity !== previous + 1 ||
      r.batchId !== null
    )
      assert.fail(`ledger row ${i} after seq ${last}: ${show(r)}`)
    previous = r.quantity
  }
  assert.equal(await storage.lastChangeSeq(), last + BigInt(total))
}

for (const backend of BACKENDS) {
  describe(`Storage contract: stock moves (${backend.name})`, () => {
    const fixture = useStorage(backend)

    /** The fresh inventory of START, and the last seq its import left. */
    const start = async () => {
      await seed(fixture.storage, START)
      const last = await fixture.storage.lastChangeSeq()
      assert.equal(last, 3n)
      return last
    }
    const entries = () => Promise.all(START.map((i) => fixture.storage.getInventoryItem(i.petId)))
    /** Nothing was written since `last`: the entries as START left them, no ledger row, the same last seq. */
    const unchanged = async (last: bigint, state: InventoryItem[] = START) => {
      assert.deepEqual(await entries(), state)
      assert.deepEqual(await changesAfter(fixture.storage, last), [])
      assert.equal(await fixture.storage.lastChangeSeq(), last)
    }

    describe('an adjustment alone', () => {
      test('When a delta is applied alone, then it answers the entry as moved, and one row records it with no batch', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        assert.deepEqual(await storage.writeStock(adjust(2n, 3)), applied(null, [item(2n, 8, 'pending')]))
        assert.deepEqual(
          await storage.writeStock(changes([{ petId: 1n, delta: -4, reason: 'damage', note: 'crate dropped' }], { by: actor(9, 'req-9') })),
          applied(null, [item(1n, 6)]),
        )
        assert.deepEqual(
          await storage.writeStock(changes([{ petId: 1n, delta: -1, reason: 'loss', note: null }])),
          applied(null, [item(1n, 5)]),
        )
        assert.deepEqual(await entries(), [item(1n, 5), item(2n, 8, 'pending'), START[2]])
        const rows = await changesAfter(storage, last)
        expectChanges(
          rows,
          [
            row(4n, 2n, 5, 8, 'adjustment', who),
            row(5n, 1n, 10, 6, 'damage', actor(9, 'req-9'), null, 'crate dropped'),
            row(6n, 1n, 6, 5, 'loss', who),
          ],
          from,
          now(),
        )
        assert.ok(rows.every((r) => r.batchId === null && r.orderId === null))
        assert.equal(await storage.lastChangeSeq(), 6n)
      })

      test('When a delta takes the stock to exactly 0, then it applies; one more below zero answers insufficient_stock and writes nothing', async () => {
        const { storage } = fixture
        await start()
        assert.deepEqual(await storage.writeStock(adjust(2n, -5)), applied(null, [item(2n, 0, 'pending')]))
        const last = await storage.lastChangeSeq()
        const state = [START[0]!, item(2n, 0, 'pending'), START[2]!]
        assert.deepEqual(await storage.writeStock(adjust(2n, -1)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'insufficient_stock', found: 0, delta: -1 },
          replayed: false,
        })
        assert.deepEqual(await storage.writeStock(adjust(1n, -11)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'insufficient_stock', found: 10, delta: -11 },
          replayed: false,
        })
        assert.deepEqual(await storage.writeStock(adjust(1n, -MAX_QUANTITY)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'insufficient_stock', found: 10, delta: -MAX_QUANTITY },
          replayed: false,
        })
        await unchanged(last, state)
      })

      test('When a delta takes the stock to exactly 2147483647, then it applies; past it answers stock_overflow and writes nothing', async () => {
        const { storage } = fixture
        await start()
        assert.deepEqual(await storage.writeStock(adjust(1n, MAX_QUANTITY - 10)), applied(null, [item(1n, MAX_QUANTITY)]))
        assert.deepEqual(await storage.writeStock(adjust(2n, MAX_QUANTITY - 6)), applied(null, [item(2n, MAX_QUANTITY - 1, 'pending')]))
        const last = await storage.lastChangeSeq()
        const state = [item(1n, MAX_QUANTITY), item(2n, MAX_QUANTITY - 1, 'pending'), START[2]!]
        assert.deepEqual(await storage.writeStock(adjust(1n, 1)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'stock_overflow', found: MAX_QUANTITY, delta: 1 },
          replayed: false,
        })
        assert.deepEqual(await storage.writeStock(adjust(2n, 2)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'stock_overflow', found: MAX_QUANTITY - 1, delta: 2 },
          replayed: false,
        })
        assert.deepEqual(await storage.writeStock(adjust(2n, MAX_QUANTITY)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'stock_overflow', found: MAX_QUANTITY - 1, delta: MAX_QUANTITY },
          replayed: false,
        })
        await unchanged(last, state)
      })

      test('When a delta names a pet without an entry, then it answers not_found at index 0 and creates nothing', async () => {
        const { storage } = fixture
        const last = await start()
        assert.deepEqual(await storage.writeStock(adjust(4n, 1)), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'not_found' },
          replayed: false,
        })
        assert.equal(await storage.getInventoryItem(4n), undefined)
        await unchanged(last)
      })
    })

    describe('a batch', () => {
      test('When a batch sets and moves several pets, one twice, then it answers every entry in order, with contiguous rows carrying its id', async () => {
        const { storage } = fixture
        const last = await start()
        const batchId = randomUUID()
        const from = now()
        const result = await storage.writeStock(
          changes(
            [
              { petId: 1n, delta: 5, reason: 'arrival', note: 'crate 7' },
              { petId: 2n, quantity: 9, expectedQuantity: 5, reason: 'count' },
              { petId: 1n, delta: -12, reason: 'damage' },
              { petId: 3n, quantity: 4 },
              { petId: 2n, delta: -9, note: 'sold at the fair' },
              { petId: 1n, quantity: 7, expectedQuantity: 3, reason: 'return', note: '' },
            ],
            { batchId },
          ),
        )
        const to = now()
        const after = [item(1n, 15), item(2n, 9, 'pending'), item(1n, 3), item(3n, 4, 'sold'), item(2n, 0, 'pending'), item(1n, 7)]
        assert.deepEqual(result, applied(batchId, after))
        assert.deepEqual(await entries(), [item(1n, 7), item(2n, 0, 'pending'), item(3n, 4, 'sold')])
        const rows = await changesAfter(storage, last)
        expectChanges(
          rows,
          [
            batchRow(batchId, 4n, 1n, 10, 15, 'arrival', who, null, 'crate 7'),
            batchRow(batchId, 5n, 2n, 5, 9, 'count', who),
            batchRow(batchId, 6n, 1n, 15, 3, 'damage', who),
            batchRow(batchId, 7n, 3n, 0, 4, 'adjustment', who),
            batchRow(batchId, 8n, 2n, 9, 0, 'adjustment', who, null, 'sold at the fair'),
            batchRow(batchId, 9n, 1n, 3, 7, 'return', who, null, ''),
          ],
          from,
          to,
        )
        assert.equal(new Set(rows.map((r) => r.at)).size, 1, 'the rows of a batch are committed together')
        assert.equal(await storage.lastChangeSeq(), 9n)
        assert.deepEqual(await violations(storage), [])
      })

      test('When a batch moves many pets (int64 extremes among them), then every entry is read and written as one pet at a time would be', async () => {
        // Past a handful of pets, SQLite reads and updates a batch's entries with one statement each
        // (src/storage/sqlite/inventory.ts): its answer, entries and rows must not tell the two apart.
        const { storage } = fixture
        const pets = [INT64_MIN, -1n, 0n, BEYOND_DOUBLE, INT64_MAX, ...Array.from({ length: 40 }, (_, i) => 1000n + BigInt(i))]
        await seed(
          storage,
          pets.map((petId, i) => item(petId, i * 3)),
        )
        const last = await storage.lastChangeSeq()
        const batchId = randomUUID()
        const list: StockChange[] = pets.flatMap((petId, i) => [
          { petId, delta: 7 },
          i % 2 === 0 ? { petId, quantity: MAX_QUANTITY - i, expectedQuantity: i * 3 + 7 } : { petId, delta: -(i * 3 + 7) },
        ])
        const final = pets.map((petId, i) => item(petId, i % 2 === 0 ? MAX_QUANTITY - i : 0))
        const answered = pets.flatMap((petId, i) => [item(petId, i * 3 + 7), final[i]!])
        assert.deepEqual(await storage.writeStock(changes(list, { batchId })), applied(batchId, answered))
        assert.deepEqual(await Promise.all(pets.map((petId) => storage.getInventoryItem(petId))), final)
        const rows = await changesAfter(storage, last)
        assert.deepEqual(
          rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.batchId]),
          pets.flatMap((petId, i) => [
            [petId, i * 3, i * 3 + 7, batchId],
            [petId, i * 3 + 7, final[i]!.quantity, batchId],
          ]),
        )
        // A refusal late in such a batch still leaves every entry as it was.
        const refused = await storage.writeStock(
          changes([...pets.map((petId) => ({ petId, quantity: 1 })), { petId: 999n, delta: 1 }], { batchId: randomUUID() }),
        )
        assert.deepEqual(refused, { outcome: 'refused', index: pets.length, refusal: { refused: 'not_found' }, replayed: false })
        assert.deepEqual(await Promise.all(pets.map((petId) => storage.getInventoryItem(petId))), final)
        assert.deepEqual(await violations(storage), [])
      })

      test('When a batch sets a quantity to what the entry holds, then it still records a row (a count that found nothing to correct)', async () => {
        const { storage } = fixture
        const last = await start()
        const batchId = randomUUID()
        const from = now()
        assert.deepEqual(
          await storage.writeStock(changes([{ petId: 1n, quantity: 10, expectedQuantity: 10, reason: 'count' }], { batchId })),
          applied(batchId, [START[0]!]),
        )
        expectChanges(await changesAfter(storage, last), [batchRow(batchId, 4n, 1n, 10, 10, 'count', who)], from, now())
      })

      // Changes 0 to 2 apply to what was there; change 3 is refused on what they left (not on what was there).
      const FIRST_THREE: StockChange[] = [
        { petId: 1n, delta: -8 },
        { petId: 2n, quantity: 1, expectedQuantity: 5 },
        { petId: 3n, delta: MAX_QUANTITY - 3 },
      ]
      const REFUSED: [string, StockChange, Record<string, unknown>][] = [
        ['a pet without an entry', { petId: 99n, delta: 1 }, { refused: 'not_found' }],
        ['a delta below zero', { petId: 1n, delta: -3 }, { refused: 'insufficient_stock', found: 2, delta: -3 }],
        ['a delta past the largest quantity', { petId: 3n, delta: 4 }, { refused: 'stock_overflow', found: MAX_QUANTITY - 3, delta: 4 }],
        [
          'a set whose expectedQuantity is what the entry held before the batch',
          { petId: 2n, quantity: 50, expectedQuantity: 5 },
          { refused: 'quantity_mismatch', found: 1, expected: 5 },
        ],
      ]
      for (const [what, refused, refusal] of REFUSED) {
        test(`When change 3 of a batch is ${what}, then it answers refused at index 3 and nothing of the batch is written`, async () => {
          const { storage } = fixture
          const last = await start()
          const batchId = randomUUID()
          const list = [...FIRST_THREE, refused, { petId: 1n, delta: 1 }]
          assert.deepEqual(await storage.writeStock(changes(list, { batchId })), {
            outcome: 'refused',
            index: 3,
            refusal,
            replayed: false,
          })
          await unchanged(last)
          // The same batch without its change 3 applies: the refusal was change 3's alone.
          const without = list.filter((_, i) => i !== 3)
          const result = await storage.writeStock(changes(without, { batchId }))
          assert.deepEqual(result, applied(batchId, [item(1n, 2), item(2n, 1, 'pending'), item(3n, MAX_QUANTITY - 3, 'sold'), item(1n, 3)]))
          assert.equal(await storage.lastChangeSeq(), last + 4n)
        })
      }

      test('When a refused batch shares a commit with other writes, then they apply around it as if it were not there', async () => {
        const { storage } = fixture
        const last = await start()
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()]
        const from = now()
        const results = await Promise.all([
          storage.writeStock(
            changes(
              [
                { petId: 1n, delta: -4 },
                { petId: 2n, delta: 1 },
              ],
              { batchId: a, by: actor(1, 'a') },
            ),
          ),
          storage.writeStock(
            changes(
              [
                { petId: 1n, delta: -1 },
                { petId: 1n, delta: -6 },
              ],
              { batchId: b, by: actor(2, 'b') },
            ),
          ),
          storage.writeStock(adjust(1n, 2, actor(3, 'c'))),
          storage.writeStock(
            changes(
              [
                { petId: 3n, quantity: 2 },
                { petId: 1n, delta: -8 },
              ],
              { batchId: c, by: actor(4, 'd') },
            ),
          ),
        ])
        assert.deepEqual(results, [
          applied(a, [item(1n, 6), item(2n, 6, 'pending')]),
          { outcome: 'refused', index: 1, refusal: { refused: 'insufficient_stock', found: 5, delta: -6 }, replayed: false },
          applied(null, [item(1n, 8)]),
          applied(c, [item(3n, 2, 'sold'), item(1n, 0)]),
        ])
        expectChanges(
          await changesAfter(storage, last),
          [
            batchRow(a, 4n, 1n, 10, 6, 'adjustment', actor(1, 'a')),
            batchRow(a, 5n, 2n, 5, 6, 'adjustment', actor(1, 'a')),
            row(6n, 1n, 6, 8, 'adjustment', actor(3, 'c')),
            batchRow(c, 7n, 3n, 0, 2, 'adjustment', actor(4, 'd')),
            batchRow(c, 8n, 1n, 8, 0, 'adjustment', actor(4, 'd')),
          ],
          from,
          now(),
        )
        assert.deepEqual(await entries(), [item(1n, 0), item(2n, 6, 'pending'), item(3n, 2, 'sold')])
      })

      test('When batches, adjustments and sets race, then each batch lands whole and contiguous, and every invariant holds', async () => {
        const { storage } = fixture
        const last = await start()
        const writes: StockWrite[] = []
        const batchIds: string[] = []
        for (let i = 0; i < 60; i++) {
          const by = actor(i, `r${i}`)
          if (i % 3 === 0) {
            const batchId = randomUUID()
            batchIds.push(batchId)
            writes.push(
              changes(
                [
                  { petId: 1n, delta: 2 },
                  { petId: 2n, delta: 1 },
                  { petId: 3n, delta: 1 },
                  { petId: 1n, delta: -1 },
                ],
                { batchId, by },
              ),
            )
          } else if (i % 3 === 1) writes.push(adjust(BigInt(1 + (i % 2)), 1, by))
          else writes.push({ kind: 'set', petId: 3n, quantity: i, actor: by })
        }
        const results = await Promise.all(writes.map((w) => storage.writeStock(w)))
        assert.ok(
          results.every((r) => typeof r === 'object' && ('outcome' in r ? r.outcome === 'applied' : 'quantity' in r)),
          'every write applied',
        )
        const rows = await changesAfter(storage, last)
        assert.equal(rows.length, 20 * 4 + 20 + 20)
        for (const batchId of batchIds) {
          const seqs = rows.filter((r) => r.batchId === batchId).map((r) => r.seq)
          assert.equal(seqs.length, 4)
          assert.deepEqual(
            seqs,
            seqs.map((_, i) => seqs[0]! + BigInt(i)),
            `batch ${batchId}: contiguous seqs`,
          )
          assert.deepEqual(
            rows.filter((r) => r.batchId === batchId).map((r) => [r.petId, r.quantity - r.previousQuantity!]),
            [
              [1n, 2],
              [2n, 1],
              [3n, 1],
              [1n, -1],
            ],
          )
        }
        // 20 batches of +1 and 10 adjustments of +1 each, on pets 1 and 2.
        assert.deepEqual((await storage.getInventoryItem(1n))?.quantity, 10 + 20 + 10)
        assert.deepEqual((await storage.getInventoryItem(2n))?.quantity, 5 + 20 + 10)
        assert.deepEqual(await violations(storage), [])
      })

      test("When a batch's rows are made not contiguous behind the service's back, then the check reports batch_contiguous for that batch", async () => {
        const { storage, database } = fixture
        await start()
        const batchId = randomUUID()
        await storage.writeStock(
          changes(
            [
              { petId: 1n, delta: 1 },
              { petId: 2n, delta: 1 },
            ],
            { batchId },
          ),
        ) // seqs 4, 5
        await storage.writeStock(adjust(1n, 1)) // seq 6
        await storage.writeStock(adjust(2n, 1)) // seq 7
        assert.deepEqual(await violations(storage), [])
        await runSql(
          database.url,
          {
            sqlite: 'UPDATE inventory_changes SET batch_id = ? WHERE seq = ?',
            postgres: 'UPDATE inventory_changes SET batch_id = $1 WHERE seq = $2',
          },
          [batchId, 7],
        )
        assert.deepEqual(await violations(storage), [
          {
            invariant: 'batch_contiguous',
            ids: { batch: batchId },
            found: 'its 3 ledger rows lie between seqs 4 and 7, with rows of others among them',
          },
        ])
      })
    })

    describe('a set with expectedQuantity', () => {
      test('When the entry holds the expectedQuantity, then the set applies as without one', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        assert.deepEqual(
          await storage.writeStock({ kind: 'set', petId: 2n, quantity: 3, expectedQuantity: 5, reason: 'count', actor: who }),
          item(2n, 3, 'pending'),
        )
        assert.deepEqual(
          await storage.writeStock({ kind: 'set', petId: 3n, quantity: 1, expectedQuantity: 0, actor: who }),
          item(3n, 1, 'sold'),
        )
        expectChanges(
          await changesAfter(storage, last),
          [row(4n, 2n, 5, 3, 'count', who), row(5n, 3n, 0, 1, 'adjustment', who)],
          from,
          now(),
        )
      })

      test('When the entry holds another quantity, then it answers quantity_mismatch with what it found, and writes nothing', async () => {
        const { storage } = fixture
        const last = await start()
        assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 2n, quantity: 3, expectedQuantity: 4, actor: who }), {
          refused: 'quantity_mismatch',
          found: 5,
          expected: 4,
        })
        assert.deepEqual(
          await storage.writeStock({ kind: 'set', petId: 1n, quantity: 10, expectedQuantity: 0, reason: 'count', actor: who }),
          {
            refused: 'quantity_mismatch',
            found: 10,
            expected: 0,
          },
        )
        assert.equal(await storage.writeStock({ kind: 'set', petId: 9n, quantity: 1, expectedQuantity: 0, actor: who }), 'not_found')
        await unchanged(last)
      })

      test('When sets with expectedQuantity share a commit, then each is judged on what the one before it left', async () => {
        const { storage } = fixture
        const last = await start()
        const results = await Promise.all([
          storage.writeStock({ kind: 'set', petId: 1n, quantity: 4, expectedQuantity: 10, actor: actor(1, 'a') }),
          storage.writeStock({ kind: 'set', petId: 1n, quantity: 5, expectedQuantity: 10, actor: actor(2, 'b') }),
          storage.writeStock({ kind: 'set', petId: 1n, quantity: 6, expectedQuantity: 4, actor: actor(3, 'c') }),
        ])
        assert.deepEqual(results, [item(1n, 4), { refused: 'quantity_mismatch', found: 4, expected: 10 }, item(1n, 6)])
        assert.deepEqual(
          (await changesAfter(storage, last)).map((r) => [r.seq, r.previousQuantity, r.quantity, r.keyId]),
          [
            [4n, 10, 4, 1],
            [5n, 4, 6, 3],
          ],
        )
      })
    })

    describe('Idempotency-Key', () => {
      const keyed = (list: StockChange[], batchId: string | null, key: string, fingerprint: string, keyId: number | null = 7) =>
        changes(list, { batchId, by: actor(keyId, `req-${key}`), idempotency: { key, fingerprint } })

      test('When the same key and fingerprint come again, then it replays the first answer, entries as they were, and applies nothing', async () => {
        const { storage } = fixture
        await start()
        const batchId = randomUUID()
        const list: StockChange[] = [
          { petId: 1n, delta: -3 },
          { petId: 2n, quantity: 8, expectedQuantity: 5 },
        ]
        const first = await storage.writeStock(keyed(list, batchId, 'k', 'f'))
        assert.deepEqual(first, applied(batchId, [item(1n, 7), item(2n, 8, 'pending')]))
        // The entries move since; the replay answers them as they were then.
        assert.deepEqual(await storage.writeStock(adjust(1n, 100)), applied(null, [item(1n, 107)]))
        const last = await storage.lastChangeSeq()
        const state = [item(1n, 107), item(2n, 8, 'pending'), START[2]!]
        // A retry gets a new batchId from the service; the stored one is answered.
        assert.deepEqual(
          await storage.writeStock(keyed(list, randomUUID(), 'k', 'f')),
          applied(batchId, [item(1n, 7), item(2n, 8, 'pending')], true),
        )
        assert.deepEqual(
          await storage.writeStock(keyed(list, batchId, 'k', 'f')),
          applied(batchId, [item(1n, 7), item(2n, 8, 'pending')], true),
        )
        await unchanged(last, state)
      })

      test('When an adjustment alone is retried with its key, then the replay answers its entry with a null batchId', async () => {
        const { storage } = fixture
        await start()
        assert.deepEqual(
          await storage.writeStock(keyed([{ petId: 2n, delta: 2 }], null, 'a', 'f')),
          applied(null, [item(2n, 7, 'pending')]),
        )
        const last = await storage.lastChangeSeq()
        const again = await storage.writeStock(keyed([{ petId: 2n, delta: 2 }], null, 'a', 'f'))
        assert.deepEqual(again, applied(null, [item(2n, 7, 'pending')], true))
        await unchanged(last, [START[0]!, item(2n, 7, 'pending'), START[2]!])
      })

      test('When the same key comes with another fingerprint, then it answers idempotency_key_reused and applies nothing', async () => {
        const { storage } = fixture
        await start()
        const batchId = randomUUID()
        const first = await storage.writeStock(keyed([{ petId: 1n, delta: 1 }], batchId, 'k', 'f'))
        assert.deepEqual(first, applied(batchId, [item(1n, 11)]))
        const last = await storage.lastChangeSeq()
        const state = [item(1n, 11), START[1]!, START[2]!]
        assert.equal(await storage.writeStock(keyed([{ petId: 1n, delta: 1 }], randomUUID(), 'k', 'g')), 'idempotency_key_reused')
        assert.equal(await storage.writeStock(keyed([{ petId: 2n, delta: -1 }], null, 'k', 'g')), 'idempotency_key_reused')
        await unchanged(last, state)
        // The first fingerprint still replays.
        assert.deepEqual(
          await storage.writeStock(keyed([{ petId: 1n, delta: 1 }], randomUUID(), 'k', 'f')),
          applied(batchId, [item(1n, 11)], true),
        )
        await unchanged(last, state)
      })

      test('When a refused batch is retried with its key, then it is refused again, even once it could apply', async () => {
        const { storage } = fixture
        const last = await start()
        const list: StockChange[] = [
          { petId: 1n, delta: 1 },
          { petId: 2n, delta: -6 },
        ]
        const refused = { outcome: 'refused', index: 1, refusal: { refused: 'insufficient_stock', found: 5, delta: -6 } } as const
        assert.deepEqual(await storage.writeStock(keyed(list, randomUUID(), 'k', 'f')), { ...refused, replayed: false })
        await unchanged(last)
        assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 2n, quantity: 50, actor: who }), item(2n, 50, 'pending'))
        const moved = await storage.lastChangeSeq()
        assert.deepEqual(await storage.writeStock(keyed(list, randomUUID(), 'k', 'f')), { ...refused, replayed: true })
        await unchanged(moved, [START[0]!, item(2n, 50, 'pending'), START[2]!])
        // A refusal for a pet without an entry is kept the same way.
        assert.deepEqual(await storage.writeStock(keyed([{ petId: 9n, delta: 1 }], null, 'n', 'f')), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'not_found' },
          replayed: false,
        })
        await seed(storage, [item(9n, 1)])
        const seeded = await storage.lastChangeSeq()
        assert.deepEqual(await storage.writeStock(keyed([{ petId: 9n, delta: 1 }], null, 'n', 'f')), {
          outcome: 'refused',
          index: 0,
          refusal: { refused: 'not_found' },
          replayed: true,
        })
        assert.deepEqual(await storage.getInventoryItem(9n), item(9n, 1))
        assert.equal(await storage.lastChangeSeq(), seeded)
      })

      test('When a key is used under another API key, or without one (the CLI), then it is not the same claim and applies again', async () => {
        const { storage } = fixture
        await start()
        const list: StockChange[] = [{ petId: 1n, delta: 1 }]
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', 1)), applied(null, [item(1n, 11)]))
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', 2)), applied(null, [item(1n, 12)]))
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', null)), applied(null, [item(1n, 13)]))
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', null)), applied(null, [item(1n, 14)]))
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', 1)), applied(null, [item(1n, 11)], true))
        assert.deepEqual(await storage.writeStock(keyed(list, null, 'k', 'f', 2)), applied(null, [item(1n, 12)], true))
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 14))
        assert.equal(await storage.lastChangeSeq(), 7n)
      })

      test('When 20 identical writes with one key are submitted at once, then exactly one applies and the others replay it', async () => {
        const { storage } = fixture
        const last = await start()
        const batchId = randomUUID()
        const list: StockChange[] = [
          { petId: 1n, delta: 3 },
          { petId: 2n, delta: -2 },
        ]
        const results = await Promise.all(Array.from({ length: 20 }, () => storage.writeStock(keyed(list, batchId, 'k', 'f'))))
        const answer = [item(1n, 13), item(2n, 3, 'pending')]
        assert.equal(results.filter((r) => typeof r === 'object' && !r.replayed).length, 1, 'one applied')
        assert.deepEqual(
          results,
          results.map((r) => applied(batchId, answer, typeof r === 'object' && r.replayed)),
        )
        assert.deepEqual(await entries(), [item(1n, 13), item(2n, 3, 'pending'), START[2]])
        assert.equal((await changesAfter(storage, last)).length, 2)
      })
    })

    describe('concurrency on one hot pet', () => {
      const PER_CLIENT = 1000

      test(`When 64 clients each adjust one pet by +1, ${PER_CLIENT} times, then it ends at exactly the start plus all of them`, async () => {
        const { storage, database } = fixture
        const last = await start()
        const answered = await hammer([storage], 64, PER_CLIENT)
        await assertHammered(storage, last, 10, 64 * PER_CLIENT, answered)
        assert.deepEqual(await violations(storage), [])
        await assertInvariants(database.url, 'after 64 clients adjusted one pet')
      })
    })

    if (backend.name === 'postgres') {
      describe('two service instances (two pools on one database)', () => {
        test('When 64 clients split over two instances each adjust one pet by +1, 1000 times, then it ends at exactly +64,000', async () => {
          const { storage } = fixture
          const last = await start()
          const other = await fixture.another()
          const answered = await hammer([storage, other], 64, 1000)
          await assertHammered(storage, last, 10, 64_000, answered)
          assert.deepEqual(await other.getInventoryItem(1n), item(1n, 64_010))
          assert.deepEqual(await violations(other), [])
        })

        test('When identical retries with one key race through two instances, then each key applies once and every other replays it', async () => {
          const { storage } = fixture
          const last = await start()
          const other = await fixture.another()
          const KEYS = 20
          const batchIds = Array.from({ length: KEYS }, () => randomUUID())
          const results = await Promise.all(
            Array.from({ length: KEYS }, (_, k) => {
              const write = changes([{ petId: 1n, delta: 1 }], {
                batchId: batchIds[k]!,
                by: actor(7, `req-${k}`),
                idempotency: { key: `key-${k}`, fingerprint: 'f' },
              })
              return Promise.all([storage.writeStock(write), other.writeStock(write), storage.writeStock(write), other.writeStock(write)])
            }),
          )
          for (const [k, tries] of results.entries()) {
            const fresh = tries.filter((r) => typeof r === 'object' && !r.replayed)
            if (fresh.length !== 1) assert.fail(`key-${k}: ${fresh.length} tries applied, not 1: ${show(tries)}`)
            const first = fresh[0] as Extract<ChangesResult, { outcome: 'applied' }>
            assert.equal(first.batchId, batchIds[k])
            assert.deepEqual(
              tries,
              tries.map((r) => ({ ...first, replayed: typeof r === 'object' && r.replayed })),
            )
          }
          // Each key moved the pet once: the answers are 11 to 30, once each.
          assert.deepEqual(
            results.map((tries) => (tries[0] as Extract<ChangesResult, { outcome: 'applied' }>).entries[0]!.quantity).sort((a, b) => a - b),
            Array.from({ length: KEYS }, (_, i) => 11 + i),
          )
          assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 10 + KEYS))
          const rows = await changesAfter(storage, last)
          assert.equal(rows.length, KEYS)
          assert.deepEqual(new Set(rows.map((r) => r.batchId)).size, KEYS)
          assert.deepEqual(await violations(storage), [])
        })
      })
    }
  })
}
