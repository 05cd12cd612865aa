import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { GroupCommit } from '../../src/storage/group-commit.js'

/** A GroupCommit whose batches are recorded; `failNext` makes the next batch throw. */
function recorder() {
  const batches: number[][] = []
  let failNext: Error | undefined
  const commit = new GroupCommit<number, string>((batch) => {
    batches.push([...batch])
    if (failNext) {
      const error = failNext
      failNext = undefined
      throw error
    }
    return batch.map((n) => `done ${n}`)
  })
  return { commit, batches, failOnce: (error: Error) => (failNext = error) }
}

/** Settles without throwing, so a rejected promise can be inspected later. */
const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  )

describe('GroupCommit', () => {
  test('When writes are submitted in the same tick, then one batch commits them in submission order', async () => {
    const { commit, batches } = recorder()
    const inputs = [5, 3, 9, 1, 7, 2]
    const promises = inputs.map((n) => commit.submit(n))
    assert.deepEqual(batches, [], 'nothing is committed synchronously')
    const results = await Promise.all(promises)
    assert.deepEqual(batches, [inputs])
    assert.deepEqual(
      results,
      inputs.map((n) => `done ${n}`),
      'each caller gets its own result',
    )
  })

  test('When writes weigh more than maxWeight together, then each batch stops before the bound, in order, and one heavier write goes alone', async () => {
    const batches: number[][] = []
    const commit = new GroupCommit<number, number>(
      (batch) => {
        batches.push([...batch])
        return batch
      },
      { weight: (n) => n, maxWeight: 10 },
    )
    const inputs = [4, 4, 4, 1, 30, 2, 9, 1]
    assert.deepEqual(await Promise.all(inputs.map((n) => commit.submit(n))), inputs)
    // 4+4 (a third 4 would pass 10), then 4+1 (30 would), 30 alone, 2 (9 would pass), 9+1.
    assert.deepEqual(batches, [[4, 4], [4, 1], [30], [2], [9, 1]])
  })

  test('When the same value is submitted twice, then each submission gets its own slot and result', async () => {
    const commit = new GroupCommit<number, number>((batch) => batch.map((_, i) => i))
    assert.deepEqual(await Promise.all([commit.submit(4), commit.submit(4), commit.submit(4)]), [0, 1, 2])
  })

  test('When writes are submitted in different ticks, then they go to different batches', async () => {
    const { commit, batches } = recorder()
    const first = [commit.submit(1), commit.submit(2)]
    await nextTurn()
    const second = [commit.submit(3)]
    assert.deepEqual(await Promise.all([...first, ...second]), ['done 1', 'done 2', 'done 3'])
    assert.deepEqual(batches, [[1, 2], [3]])
  })

  test('When a write is submitted from a callback of the same turn, then it joins the pending batch', async () => {
    const { commit, batches } = recorder()
    const a = commit.submit(1)
    const b = new Promise<string>((resolve, reject) => process.nextTick(() => commit.submit(2).then(resolve, reject)))
    const c = Promise.resolve().then(() => commit.submit(3))
    assert.deepEqual(await Promise.all([a, b, c]), ['done 1', 'done 2', 'done 3'])
    assert.equal(batches.length, 1)
    assert.deepEqual([...batches[0]!].sort(), [1, 2, 3])
  })

  test('When a batch throws, then every promise of that batch rejects with the error and the next batch works', async () => {
    const { commit, batches, failOnce } = recorder()
    const boom = new Error('disk full')
    failOnce(boom)
    const failed = await Promise.all([commit.submit(1), commit.submit(2), commit.submit(3)].map(settle))
    assert.deepEqual(failed, [
      { ok: false, error: boom },
      { ok: false, error: boom },
      { ok: false, error: boom },
    ])
    assert.deepEqual(await Promise.all([commit.submit(4), commit.submit(5)]), ['done 4', 'done 5'])
    assert.deepEqual(batches, [
      [1, 2, 3],
      [4, 5],
    ])
  })

  test('When a batch throws, then writes of the following tick are not in it and succeed', async () => {
    const { commit, batches, failOnce } = recorder()
    failOnce(new Error('locked'))
    const failing = settle(commit.submit(1))
    await nextTurn()
    const later = commit.submit(2)
    assert.equal((await failing).ok, false)
    assert.equal(await later, 'done 2')
    assert.deepEqual(batches, [[1], [2]])
  })

  test('When nothing is pending, then drain() resolves at once without committing', async () => {
    const { commit, batches } = recorder()
    await commit.drain()
    assert.deepEqual(batches, [])
  })

  test('When a batch is pending, then drain() resolves only after it is committed and answered', async () => {
    const { commit, batches } = recorder()
    const answered: string[] = []
    const promises = [1, 2].map((n) =>
      commit.submit(n).then((r) => {
        answered.push(r)
        return r
      }),
    )
    const drained = commit.drain()
    assert.deepEqual(batches, [])
    await drained
    assert.deepEqual(batches, [[1, 2]])
    assert.deepEqual(answered, ['done 1', 'done 2'])
    await Promise.all(promises)
  })

  test('When the pending batch fails, then drain() still resolves', async () => {
    const { commit, failOnce } = recorder()
    failOnce(new Error('boom'))
    const result = settle(commit.submit(1))
    await commit.drain()
    assert.equal((await result).ok, false)
  })

  test('When drain() is called after several batches, then it waits for the latest one', async () => {
    const { commit, batches } = recorder()
    const first = commit.submit(1)
    await first
    const second = commit.submit(2)
    await commit.drain()
    assert.deepEqual(batches, [[1], [2]])
    assert.equal(await second, 'done 2')
  })

  test('When an asynchronous batch is in flight, then later writes wait and are committed together in the next batch', async () => {
    const batches: number[][] = []
    const gates: (() => void)[] = []
    const commit = new GroupCommit<number, number>(async (batch) => {
      batches.push([...batch])
      await new Promise<void>((open) => gates.push(open))
      return batch.map((n) => n * 10)
    })
    const first = [commit.submit(1), commit.submit(2)]
    await nextTurn()
    assert.deepEqual(batches, [[1, 2]], 'the first batch has started')
    const second = [commit.submit(3)]
    await nextTurn()
    second.push(commit.submit(4))
    await nextTurn()
    assert.deepEqual(batches, [[1, 2]], 'nothing starts while a batch is in flight')
    const drained = commit.drain()
    gates.shift()!()
    assert.deepEqual(await Promise.all(first), [10, 20])
    while (gates.length === 0) await nextTurn()
    assert.deepEqual(batches, [
      [1, 2],
      [3, 4],
    ])
    gates.shift()!()
    await drained
    assert.deepEqual(await Promise.all(second), [30, 40], 'drain() waited for the batch gathered behind the first')
  })

  test('When an asynchronous batch rejects, then its writes reject and the next batch works', async () => {
    let calls = 0
    const commit = new GroupCommit<number, number>(async (batch) => {
      await nextTurn()
      if (++calls === 1) throw new Error('connection lost')
      return batch
    })
    const failed = await Promise.all([commit.submit(1), commit.submit(2)].map(settle))
    assert.deepEqual(
      failed.map((r) => r.ok),
      [false, false],
    )
    assert.equal(await commit.submit(3), 3)
  })

  test('When many writes arrive in one tick, then one batch holds them all, in order', async () => {
    const { commit, batches } = recorder()
    const inputs = Array.from({ length: 1000 }, (_, i) => i)
    const results = await Promise.all(inputs.map((n) => commit.submit(n)))
    assert.equal(batches.length, 1)
    assert.deepEqual(batches[0], inputs)
    assert.deepEqual(
      results,
      inputs.map((n) => `done ${n}`),
    )
  })

  test('When a write waits for a batch past its deadline, then it is refused unapplied and its neighbours still commit', async () => {
    const batches: number[][] = []
    let open!: () => void
    const commit = new GroupCommit<number, number>(
      async (batch) => {
        batches.push([...batch])
        if (batch.includes(1)) await new Promise<void>((resolve) => (open = resolve))
        return batch
      },
      { maxWaitMs: 50, expired: () => new Error('expired') },
    )
    const first = commit.submit(1)
    await nextTurn()
    const late = settle(commit.submit(2))
    await new Promise((r) => setTimeout(r, 80))
    const fresh = commit.submit(3)
    open()
    assert.equal(await first, 1)
    assert.deepEqual(await late, { ok: false, error: new Error('expired') })
    assert.equal(await fresh, 3)
    assert.deepEqual(batches, [[1], [3]], 'the expired write never reached a batch')
  })

  test("When a batch starts, then it is given its earliest member's deadline", async () => {
    const deadlines: number[] = []
    const commit = new GroupCommit<number, number>(
      (batch, deadline) => {
        deadlines.push(deadline)
        return batch
      },
      { maxWaitMs: 1000 },
    )
    const before = Date.now()
    await Promise.all([commit.submit(1), commit.submit(2)])
    assert.equal(deadlines.length, 1)
    assert.ok(deadlines[0]! >= before + 1000 && deadlines[0]! <= Date.now() + 1000, String(deadlines[0]! - before))
  })

  test("When batches commit or fail, then onBatch is told each one's size and duration", async () => {
    const told: [number, number][] = []
    let fail = false
    const commit = new GroupCommit<number, number>(
      async (batch) => {
        await new Promise((resolve) => setTimeout(resolve, 20))
        if (fail) throw new Error('broken')
        return batch
      },
      { onBatch: (writes, seconds) => told.push([writes, seconds]) },
    )
    await Promise.all([commit.submit(1), commit.submit(2), commit.submit(3)])
    fail = true
    await settle(commit.submit(4))
    assert.deepEqual(
      told.map(([writes]) => writes),
      [3, 1],
    )
    for (const [, seconds] of told) assert.ok(seconds >= 0.015 && seconds < 1, String(seconds))
  })

  describe('with touches (batches in flight together touch nothing in common)', () => {
    /** Inputs are [key, n]; every batch waits for its gate; two batches may be in flight at once. */
    function gated() {
      const batches: string[][] = []
      const gates: (() => void)[] = []
      const commit = new GroupCommit<[string, number], string>(
        async (batch) => {
          batches.push(batch.map(([key, n]) => `${key}${n}`))
          await new Promise<void>((open) => gates.push(open))
          return batch.map(([key, n]) => `${key}${n}`)
        },
        { maxInFlight: 2, touches: ([key]) => key },
      )
      const openNext = async () => {
        while (gates.length === 0) await nextTurn()
        gates.shift()!()
      }
      return { commit, batches, gates, openNext }
    }

    test('When writes touch what a batch in flight touches, then they wait for it and commit together in the next batch, in order', async () => {
      const { commit, batches, gates, openNext } = gated()
      const first = commit.submit(['a', 1])
      await nextTurn()
      const later = [commit.submit(['a', 2])]
      await nextTurn()
      later.push(commit.submit(['a', 3]))
      await nextTurn()
      assert.deepEqual(batches, [['a1']], 'no second batch over a while the first holds it, though one more could be in flight')
      assert.equal(gates.length, 1)
      await openNext()
      assert.equal(await first, 'a1')
      await openNext()
      assert.deepEqual(await Promise.all(later), ['a2', 'a3'])
      assert.deepEqual(batches, [['a1'], ['a2', 'a3']])
    })

    test('When writes touch other things than the batch in flight, then they commit beside it at once', async () => {
      const { commit, batches, openNext } = gated()
      const first = commit.submit(['a', 1])
      await nextTurn()
      const held = commit.submit(['a', 2])
      const other = commit.submit(['b', 1])
      while (batches.length < 2) await nextTurn()
      assert.deepEqual(batches, [['a1'], ['b1']], 'b goes ahead in a batch of its own; a waits')
      await openNext()
      await openNext()
      assert.deepEqual(await Promise.all([first, other]), ['a1', 'b1'])
      await openNext()
      assert.equal(await held, 'a2')
      assert.deepEqual(batches, [['a1'], ['b1'], ['a2']])
      await commit.drain()
    })

    test('When a waiting write passes its deadline, then it is refused unapplied and the next batch still commits', async () => {
      const batches: string[][] = []
      let open!: () => void
      const commit = new GroupCommit<[string, number], string>(
        async (batch) => {
          batches.push(batch.map(([key, n]) => `${key}${n}`))
          if (batch.some(([, n]) => n === 1)) await new Promise<void>((resolve) => (open = resolve))
          return batch.map(([key, n]) => `${key}${n}`)
        },
        { maxInFlight: 2, maxWaitMs: 50, expired: () => new Error('expired'), touches: ([key]) => key },
      )
      const first = commit.submit(['a', 1])
      await nextTurn()
      const late = settle(commit.submit(['a', 2]))
      await new Promise((r) => setTimeout(r, 80))
      const fresh = commit.submit(['a', 3])
      open()
      assert.equal(await first, 'a1')
      assert.deepEqual(await late, { ok: false, error: new Error('expired') })
      assert.equal(await fresh, 'a3')
      assert.deepEqual(batches, [['a1'], ['a3']])
    })
  })
})
