// LedgerReads, on every backend: seq ranges read exactly, by pet, either way, with int64 values as bigints.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { InventoryChange } from '../../src/domain.js'
import { BACKENDS, useStorage } from './backends.js'
import { INT64_MAX, INT64_MIN, actor, item, seed } from './fixtures.js'

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
  })
}
