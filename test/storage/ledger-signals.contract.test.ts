// LedgerSignals, on every backend, and the LedgerTail built on them: a commit by this storage, by
// another one on the same database (another instance, a worker, the CLI), or an import wakes a
// watcher within a second; the tail hands every row over once, in seq order, while two writers commit.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { LedgerTail, type TailBatch } from '../../src/changes/ledger-tail.js'
import type { Storage } from '../../src/storage/ports.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, chunksOf, item, seed } from './fixtures.js'

/** Resolves with the time it took for `watch` to be called after `act`, or rejects after `ms`. */
async function wokenWithin(storage: Storage, act: () => Promise<unknown>, ms = 1000): Promise<number> {
  let wake!: () => void
  const woken = new Promise<void>((resolve) => {
    wake = resolve
  })
  // The watcher may be called at its start (a (re)connection wakes it once): only calls after `act` count.
  let armed = false
  const stop = storage.watchLedger(() => {
    if (armed) wake()
  })
  try {
    await new Promise((resolve) => setTimeout(resolve, 200)) // the PostgreSQL listener connects
    armed = true
    const started = performance.now()
    await act()
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no wake-up within ${ms} ms`)), ms)
    })
    await Promise.race([woken, timeout]).finally(() => clearTimeout(timer))
    return performance.now() - started
  } finally {
    stop()
  }
}

for (const backend of BACKENDS) {
  describe(`Storage contract: ledger signals (${backend.name})`, () => {
    const fixture = useStorage(backend)

    test('When this storage commits a stock write, then a watcher is woken within a second', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 5)])
      await wokenWithin(storage, () => storage.writeStock({ kind: 'set', petId: 1n, quantity: 6, actor: actor() }))
    })

    test('When another storage on the same database commits (another instance, the CLI), then a watcher here is woken within a second', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      await seed(other, [item(1n, 5)])
      await wokenWithin(storage, () => other.writeStock({ kind: 'set', petId: 1n, quantity: 7, actor: actor() }))
      await wokenWithin(storage, () => other.importInventory(chunksOf([item(2n, 1), item(3n, 2)])))
    })

    test('When the watcher has stopped, then it is not called again', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 5)])
      let calls = 0
      const stop = storage.watchLedger(() => calls++)
      await new Promise((resolve) => setTimeout(resolve, 200))
      stop()
      const before = calls
      await storage.writeStock({ kind: 'set', petId: 1n, quantity: 9, actor: actor() })
      await new Promise((resolve) => setTimeout(resolve, 400))
      assert.equal(calls, before)
    })

    test('When two storages commit concurrently, then a tail hands every row to its follower once, in seq order, without a gap', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      await seed(storage, [item(1n, 0), item(2n, 0)])
      const tail = new LedgerTail(storage)
      await tail.start()
      const start = tail.position
      const seen: bigint[] = []
      tail.follow({ onBatch: (batch: TailBatch) => seen.push(...batch.seqs) })
      try {
        const writer = async (s: Storage, petId: bigint) => {
          for (let q = 1; q <= 60; q++) await s.writeStock({ kind: 'set', petId, quantity: q, actor: actor() })
        }
        await Promise.all([writer(storage, 1n), writer(other, 2n), writer(storage, 1n), writer(other, 2n)])
        const end = await storage.lastChangeSeq()
        assert.equal(end, start + 240n)
        const deadline = Date.now() + 5000
        while (tail.position < end && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.deepEqual(
          seen,
          Array.from({ length: 240 }, (_, i) => start + BigInt(i + 1)),
        )
        // beyond() resolves at once for a passed seq, and for a later one once the tail passes it.
        await tail.beyond(end - 1n)
        const later = tail.beyond(end)
        await other.writeStock({ kind: 'set', petId: 2n, quantity: 0, actor: actor() })
        // The SQLite check's timer is unref'd (it must not keep a server alive): this one keeps the test's loop running.
        let timer: NodeJS.Timeout | undefined
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('beyond() did not resolve within 5 s')), 5000)
        })
        await Promise.race([later, timeout]).finally(() => clearTimeout(timer))
        assert.equal(tail.position, end + 1n)
      } finally {
        tail.stop()
      }
    })
  })
}
