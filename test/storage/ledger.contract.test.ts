// LedgerReads, on every backend: seq ranges read exactly, by pet, either way, with int64 values as bigints;
// newest-first pages (the feed's `before`) are the rows reversed, unmoved by rows written meanwhile.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { InventoryChange } from '../../src/domain.js'
import { BACKENDS, useStorage } from './backends.js'
import { BEYOND_DOUBLE, INT64_MAX, INT64_MIN, actor, item, seed } from './fixtures.js'

for (const backend of BACKENDS) {
  describe(`Storage contract: ledger reads (${backend.name})`, () => {
    describe('empty ledger', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      test('When nothing has changed, then lastChangeSeq is 0 and listChanges finds nothing', async () => {
        const { storage } = fixture
        assert.equal(await storage.lastChangeSeq(), 0n)
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 10 }), [])
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 10, newestFirst: true }), [])
      })
    })

    describe('ten rows', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      /** Seqs 1..10: pets INT64_MIN, INT64_MAX and 3 in turn, an import then sets, an order and a cancellation. */
      let all: InventoryChange[] = []
      const seqs = (changes: InventoryChange[]) => changes.map((c) => c.seq)
      const range = (from: number, to: number) =>
        Array.from({ length: Math.abs(to - from) + 1 }, (_, i) => BigInt(from < to ? from + i : from - i))

      test('When ten changes were made, then listChanges reads them all, oldest first, with seq, ids and orders as bigints', async () => {
        const { storage } = fixture
        await seed(storage, [item(INT64_MIN, 1), item(INT64_MAX, 2), item(3n, 3)]) // 1..3
        for (const [i, petId] of [INT64_MIN, INT64_MAX, 3n, INT64_MIN, INT64_MAX].entries()) {
          await storage.writeStock({ kind: 'set', petId, quantity: 10 + i, actor: actor(i, `r${i}`) }) // 4..8
        }
        const placed = await storage.writeStock({ kind: 'place', petId: INT64_MAX, quantity: 4, actor: actor(9, 'p') }) // 9
        assert.ok(typeof placed === 'object' && placed.outcome === 'placed')
        await storage.writeStock({ kind: 'transition', orderId: placed.order.id, status: 'cancelled', actor: actor(9, 'c') }) // 10
        all = await storage.listChanges({ after: 0n, limit: 100 })
        assert.deepEqual(seqs(all), range(1, 10))
        assert.deepEqual(
          all.map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.orderId, c.keyId, c.requestId]),
          [
            [INT64_MIN, null, 1, 'import', null, null, null],
            [INT64_MAX, null, 2, 'import', null, null, null],
            [3n, null, 3, 'import', null, null, null],
            [INT64_MIN, 1, 10, 'adjustment', null, 0, 'r0'],
            [INT64_MAX, 2, 11, 'adjustment', null, 1, 'r1'],
            [3n, 3, 12, 'adjustment', null, 2, 'r2'],
            [INT64_MIN, 10, 13, 'adjustment', null, 3, 'r3'],
            [INT64_MAX, 11, 14, 'adjustment', null, 4, 'r4'],
            [INT64_MAX, 14, 10, 'order', placed.order.id, 9, 'p'],
            [INT64_MAX, 10, 14, 'cancellation', placed.order.id, 9, 'c'],
          ],
        )
        for (const c of all) {
          assert.equal(typeof c.seq, 'bigint')
          assert.equal(typeof c.petId, 'bigint')
          assert.ok(c.orderId === null || typeof c.orderId === 'bigint')
          assert.ok(c.keyId === null || typeof c.keyId === 'number')
          assert.match(c.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        }
        assert.equal(await storage.lastChangeSeq(), 10n)
      })

      test('When a range (after, through] is read, then it holds exactly those seqs, cut by limit from the oldest', async () => {
        const { storage } = fixture
        assert.deepEqual(await storage.listChanges({ after: 3n, through: 7n, limit: 100 }), all.slice(3, 7))
        assert.deepEqual(await storage.listChanges({ after: 3n, through: 7n, limit: 2 }), all.slice(3, 5))
        assert.deepEqual(await storage.listChanges({ after: 3n, limit: 3 }), all.slice(3, 6))
        assert.deepEqual(await storage.listChanges({ after: 0n, through: 1n, limit: 100 }), all.slice(0, 1))
        assert.deepEqual(await storage.listChanges({ after: 9n, limit: 100 }), all.slice(9))
        assert.deepEqual(await storage.listChanges({ after: 10n, limit: 100 }), [])
        assert.deepEqual(await storage.listChanges({ after: 7n, through: 7n, limit: 100 }), [])
        assert.deepEqual(await storage.listChanges({ after: 7n, through: 3n, limit: 100 }), [])
        assert.deepEqual(await storage.listChanges({ after: 0n, through: 100n, limit: 100 }), all)
      })

      test('When newest first is asked, then the same range comes in reverse, cut by limit from the newest', async () => {
        const { storage } = fixture
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, newestFirst: true }), [...all].reverse())
        assert.deepEqual(seqs(await storage.listChanges({ after: 0n, limit: 3, newestFirst: true })), range(10, 8))
        assert.deepEqual(seqs(await storage.listChanges({ after: 2n, through: 6n, limit: 100, newestFirst: true })), range(6, 3))
        assert.deepEqual(seqs(await storage.listChanges({ after: 2n, through: 6n, limit: 2, newestFirst: true })), range(6, 5))
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, newestFirst: false }), all)
      })

      test('When one pet is asked for, then only its rows come, exact at the int64 bounds, within the range and limit', async () => {
        const { storage } = fixture
        const ofPet = (petId: bigint) => all.filter((c) => c.petId === petId)
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, petId: INT64_MAX }), ofPet(INT64_MAX))
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, petId: INT64_MIN }), ofPet(INT64_MIN))
        assert.deepEqual(seqs(await storage.listChanges({ after: 0n, limit: 100, petId: INT64_MIN })), [1n, 4n, 7n])
        assert.deepEqual(seqs(await storage.listChanges({ after: 2n, through: 9n, limit: 100, petId: INT64_MAX })), [5n, 8n, 9n])
        assert.deepEqual(seqs(await storage.listChanges({ after: 2n, through: 9n, limit: 2, petId: INT64_MAX })), [5n, 8n])
        assert.deepEqual(seqs(await storage.listChanges({ after: 0n, limit: 2, petId: INT64_MAX, newestFirst: true })), [10n, 9n])
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, petId: INT64_MAX - 1n }), [])
        assert.deepEqual(await storage.listChanges({ after: 0n, limit: 100, petId: 4n }), [])
      })
    })

    describe('newest-first pages', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      const PETS = [INT64_MAX, BEYOND_DOUBLE, 1n]
      /** Seqs 1..15: the three pets imported, then four sets of each in turn. */
      let all: InventoryChange[] = []

      /**
       * Walks newest first as the feed's `before` does: pages of `limit` rows through the seq below
       * `before`, each continuing below the oldest row of the one before it; `between` runs after each page.
       */
      const walk = async (limit: number, petId?: bigint, between?: () => Promise<void>) => {
        const pages: InventoryChange[][] = []
        let through = INT64_MAX - 1n
        for (;;) {
          const page = await fixture.storage.listChanges({ after: 0n, through, limit, petId, newestFirst: true })
          if (page.length > 0) pages.push(page)
          if (page.length < limit) return pages
          through = page.at(-1)!.seq - 1n
          await between?.()
        }
      }

      test('When the ledger is read newest first a page at a time, then the pages are the rows oldest first reversed, for the store and for each pet', async () => {
        const { storage } = fixture
        await seed(
          storage,
          PETS.map((petId, i) => item(petId, i)),
        )
        for (let i = 0; i < 12; i++) await storage.writeStock({ kind: 'set', petId: PETS[i % 3]!, quantity: 100 + i, actor: actor(i) })
        all = await storage.listChanges({ after: 0n, limit: 100 })
        assert.equal(all.length, 15)
        for (const limit of [1, 4, 5, 15, 100]) {
          const pages = await walk(limit)
          assert.deepEqual(pages.flat(), [...all].reverse(), `limit ${limit}`)
          assert.ok(
            pages.slice(0, -1).every((p) => p.length === limit),
            `limit ${limit}: full pages but the last`,
          )
          for (const petId of PETS) {
            assert.deepEqual(
              (await walk(limit, petId)).flat(),
              all.filter((c) => c.petId === petId).reverse(),
              `limit ${limit}, pet ${petId}`,
            )
          }
        }
        // The pet ids come back exact (2^53 + 1 and the int64 maximum), as bigints.
        const [newest] = await storage.listChanges({
          after: 0n,
          through: INT64_MAX - 1n,
          limit: 1,
          petId: BEYOND_DOUBLE,
          newestFirst: true,
        })
        assert.deepEqual([newest?.petId, newest?.quantity], [BEYOND_DOUBLE, 110])
        assert.deepEqual(await storage.listChanges({ after: 0n, through: 0n, limit: 10, newestFirst: true }), [])
      })

      test('When rows are written between the pages of a newest-first walk, then the pages below the cursor are the same, and a walk from the newest starts with them', async () => {
        const { storage } = fixture
        let written = 0
        const pages = await walk(4, undefined, async () => {
          for (const petId of PETS) await storage.writeStock({ kind: 'set', petId, quantity: 200 + written++, actor: actor() })
        })
        assert.deepEqual(pages.flat(), [...all].reverse())
        assert.equal(written, 9)
        const now = await storage.listChanges({ after: 0n, limit: 100 })
        assert.deepEqual(now.slice(0, 15), all)
        assert.deepEqual((await walk(7)).flat(), [...now].reverse())
      })
    })

    describe('trace contexts', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      const TRACED = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
      test('When a write’s actor carries a trace context (tracing on), then its ledger rows keep it, in a plain batch and a planned one alike, and rows without one have none', async () => {
        const { storage } = fixture
        await seed(storage, [item(1n, 10), item(2n, 10)])
        const traced = { ...actor(1, 'traced'), traceContext: TRACED }
        // One batch of plain PATCHes (one traced), then a planned one: an order and a PATCH with a precondition.
        await Promise.all([
          storage.writeStock({ kind: 'set', petId: 1n, quantity: 9, actor: traced }),
          storage.writeStock({ kind: 'set', petId: 2n, quantity: 9, actor: actor(2, 'plain') }),
        ])
        await Promise.all([
          storage.writeStock({ kind: 'place', petId: 1n, quantity: 2, actor: traced }),
          storage.writeStock({ kind: 'set', petId: 2n, quantity: 8, actor: traced, precondition: () => true }),
          storage.writeStock({ kind: 'set', petId: 2n, quantity: 7, actor: actor(2, 'plain') }),
        ])
        const rows = await storage.listChanges({ after: 2n, limit: 10, traceContexts: true })
        assert.deepEqual(
          rows.map((c) => [c.requestId, c.reason, c.traceContext]),
          [
            ['traced', 'adjustment', TRACED],
            ['plain', 'adjustment', undefined],
            ['traced', 'order', TRACED],
            ['traced', 'adjustment', TRACED],
            ['plain', 'adjustment', undefined],
          ],
        )
        assert.ok(!('traceContext' in rows[1]!), 'a row without one has no such field')
        // Read only when asked: the feed's reads are as they were.
        const plain = await storage.listChanges({ after: 2n, limit: 10 })
        assert.deepEqual(
          plain.map((c) => c.traceContext),
          [undefined, undefined, undefined, undefined, undefined],
        )
        assert.deepEqual(
          plain,
          rows.map(({ traceContext: _, ...rest }) => rest),
        )
      })
    })
  })
}
