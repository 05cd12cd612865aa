import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { DeprecatedCalls } from '../../src/domain.js'
import { DeprecatedCallCounter } from '../../src/pets/deprecated-calls.js'

/** A storage stand-in that records each flush, and fails while `failing` is set. */
function fakeStorage() {
  const flushes: DeprecatedCalls[][] = []
  const storage = {
    failing: false,
    flushes,
    async addDeprecatedCalls(calls: DeprecatedCalls[]) {
      if (storage.failing) throw new Error('database down')
      flushes.push(calls)
    },
  }
  return storage
}

const at = (ms: number) => new Date(ms).toISOString()
// Long enough that the timer never fires during a test: flushes are called by hand.
const options = { flushMs: 3_600_000 }

describe('DeprecatedCallCounter', () => {
  test('When calls are recorded, then one flush writes per key the count and the first and last call, in key order', async () => {
    const storage = fakeStorage()
    const counter = new DeprecatedCallCounter(storage, options)
    counter.record(9, 1000)
    counter.record(2, 1500)
    counter.record(9, 3000)
    counter.record(9, 2000)
    await counter.flush()
    assert.deepEqual(storage.flushes, [
      [
        { keyId: 2, calls: 1, firstCall: at(1500), lastCall: at(1500) },
        { keyId: 9, calls: 3, firstCall: at(1000), lastCall: at(3000) },
      ],
    ])
    await counter.flush()
    assert.equal(storage.flushes.length, 1, 'nothing new: no write')
    await counter.close()
  })

  test('When a flush fails, then its counts are kept and merged into the next one, and the failure is reported', async () => {
    const storage = fakeStorage()
    const failures: number[] = []
    const counter = new DeprecatedCallCounter(storage, { ...options, onFlushError: (_error, keys) => failures.push(keys) })
    counter.record(1, 1000)
    storage.failing = true
    await counter.flush()
    assert.deepEqual(failures, [1])
    counter.record(1, 500)
    counter.record(1, 4000)
    storage.failing = false
    await counter.close()
    assert.deepEqual(storage.flushes, [[{ keyId: 1, calls: 3, firstCall: at(500), lastCall: at(4000) }]])
  })

  test('When flushes overlap, then they write one after the other, and calls made meanwhile go with the second', async () => {
    // Each write waits until the test lets it finish.
    const writes: (() => void)[] = []
    const written: number[] = []
    const slow = {
      addDeprecatedCalls: (calls: DeprecatedCalls[]) =>
        new Promise<void>((resolve) =>
          writes.push(() => {
            written.push(calls[0]!.calls)
            resolve()
          }),
        ),
    }
    const started = async (n: number) => {
      while (writes.length < n) await new Promise((resolve) => setImmediate(resolve))
    }
    const counter = new DeprecatedCallCounter(slow, options)
    counter.record(1, 1000)
    const first = counter.flush()
    await started(1)
    counter.record(1, 2000)
    counter.record(1, 3000)
    const second = counter.flush()
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(writes.length, 1, 'the second flush waits for the first')
    writes[0]!()
    await first
    await started(2)
    writes[1]!()
    await second
    assert.deepEqual(written, [1, 2])
  })

  test('When the interval passes, then the counts are written without being asked', async () => {
    const storage = fakeStorage()
    const counter = new DeprecatedCallCounter(storage, { flushMs: 20 })
    counter.record(3)
    const deadline = Date.now() + 5000
    while (storage.flushes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    assert.equal(storage.flushes[0]?.[0]?.keyId, 3)
    await counter.close()
  })
})
