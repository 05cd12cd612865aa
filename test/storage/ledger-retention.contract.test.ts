// LedgerRetention, on every backend: the oldest rows go a prefix at a time, up to a count, while their
// time is before the cutoff; a row not before it stops the prefix; the newest row always stays (so seqs
// are never given out twice, even on SQLite, which numbers after the largest present); prunedThrough
// says how far rows are gone, and only grows; two instances pruning at once remove each row once; a
// newest-first read ends at the oldest row kept.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Storage } from '../../src/storage/ports.js'
import { BACKENDS, useStorage } from './backends.js'
import { INT64_MAX, actor, changesAfter, item, seed } from './fixtures.js'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Five import rows (seq 1-5), then `cut`, then three PATCH rows (6-8): each side of `cut` by a few ms. */
async function ledgerAroundCut(storage: Storage): Promise<string> {
  await seed(
    storage,
    [1n, 2n, 3n, 4n, 5n].map((petId) => item(petId, 10)),
  )
  await pause(5)
  const cut = new Date().toISOString()
  await pause(5)
  for (const quantity of [11, 12, 13]) await storage.writeStock({ kind: 'set', petId: 1n, quantity, actor: actor() })
  return cut
}

const seqs = async (storage: Storage) => (await changesAfter(storage)).map((c) => c.seq)

for (const backend of BACKENDS) {
  describe(`Storage contract: ledger retention (${backend.name})`, () => {
    const fixture = useStorage(backend)

    test('When rows are pruned before a time, then the oldest go a batch at a time, up to the first row not before it, and prunedThrough follows', async () => {
      const { storage } = fixture
      const cut = await ledgerAroundCut(storage)
      assert.equal(await storage.prunedThrough(), 0n)
      assert.equal(await storage.pruneLedger(cut, 2), 2)
      assert.deepEqual(await seqs(storage), [3n, 4n, 5n, 6n, 7n, 8n])
      assert.equal(await storage.prunedThrough(), 2n)
      // The rest of the rows before the cut, and not one after it, whatever the batch allows.
      assert.equal(await storage.pruneLedger(cut, 100), 3)
      assert.deepEqual(await seqs(storage), [6n, 7n, 8n])
      assert.equal(await storage.prunedThrough(), 5n)
      assert.equal(await storage.pruneLedger(cut, 100), 0)
      assert.equal(await storage.prunedThrough(), 5n)
      // Reads after the cursor still see every row that stays.
      assert.deepEqual(
        (await storage.listChanges({ after: 5n, limit: 10, petId: 1n })).map((c) => c.seq),
        [6n, 7n, 8n],
      )
    })

    test('When rows are pruned during a newest-first walk, then it ends at the oldest row kept: no row below it, none kept skipped', async () => {
      const { storage } = fixture
      const cut = await ledgerAroundCut(storage)
      const page = (before: bigint, limit: number) =>
        storage.listChanges({ after: 0n, through: before - 1n, limit, newestFirst: true }).then((rows) => rows.map((c) => c.seq))
      assert.deepEqual(await page(8n, 3), [7n, 6n, 5n])
      assert.equal(await storage.pruneLedger(cut, 100), 5)
      // The next page, below 5, had rows when the one before it was read: now they are gone, and the walk ends.
      assert.deepEqual(await page(5n, 3), [])
      assert.deepEqual(await page(INT64_MAX, 100), [8n, 7n, 6n])
      assert.deepEqual(await page(7n, 3), [6n])
      assert.deepEqual(
        await storage
          .listChanges({ after: 0n, through: 7n, limit: 10, petId: 1n, newestFirst: true })
          .then((rows) => rows.map((c) => c.seq)),
        [7n, 6n],
      )
    })

    test('When everything is older than the cutoff, then all but the newest row go, and the next write takes the next seq', async () => {
      const { storage } = fixture
      await ledgerAroundCut(storage)
      const later = new Date(Date.now() + 60_000).toISOString()
      assert.equal(await storage.pruneLedger(later, 1000), 7)
      assert.deepEqual(await seqs(storage), [8n])
      assert.equal(await storage.prunedThrough(), 7n)
      assert.equal(await storage.pruneLedger(later, 1000), 0)
      await storage.writeStock({ kind: 'set', petId: 2n, quantity: 3, actor: actor() })
      assert.deepEqual(await seqs(storage), [8n, 9n])
      assert.equal(await storage.lastChangeSeq(), 9n)
      assert.equal(await storage.pruneLedger(later, 1000), 1)
      assert.deepEqual(await seqs(storage), [9n])
      assert.equal(await storage.prunedThrough(), 8n)
    })

    test('When the ledger is empty, or two storages prune the same rows at once, then nothing breaks and each row is removed once', async () => {
      const { storage } = fixture
      const later = new Date(Date.now() + 60_000).toISOString()
      assert.equal(await storage.pruneLedger(later, 10), 0)
      assert.equal(await storage.prunedThrough(), 0n)
      await seed(
        storage,
        Array.from({ length: 300 }, (_, i) => item(BigInt(i + 1), 1)),
      )
      const other = await fixture.another()
      let removed = 0
      for (let round = 0; round < 20; round++) {
        const [a, b] = await Promise.all([storage.pruneLedger(later, 50), other.pruneLedger(later, 50)])
        removed += a + b
      }
      assert.equal(removed, 299)
      assert.deepEqual(await seqs(storage), [300n])
      assert.equal(await other.prunedThrough(), 299n)
    })
  })
}
