import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { RestartBackoff } from '../../src/cluster.js'

describe('worker restart backoff', () => {
  test('When workers keep dying young, then each delay doubles from 100 ms up to 30 s', () => {
    const backoff = new RestartBackoff()
    const delays = Array.from({ length: 12 }, () => backoff.next(50))
    assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30_000, 30_000, 30_000])
  })

  test('When the first death comes at any age, then it waits the first delay', () => {
    assert.equal(new RestartBackoff().next(0), 100)
    assert.equal(new RestartBackoff().next(3_600_000), 100)
  })

  test('When a worker had stayed up 10 s before dying, then the delay starts again from 100 ms', () => {
    const backoff = new RestartBackoff()
    for (let i = 0; i < 5; i++) backoff.next(10)
    assert.equal(backoff.next(9_999), 3200)
    assert.equal(backoff.next(10_000), 100)
    assert.equal(backoff.next(10), 200)
  })

  test('When given other limits, then it keeps to them', () => {
    const backoff = new RestartBackoff(10, 35, 1000)
    assert.deepEqual([backoff.next(0), backoff.next(0), backoff.next(0), backoff.next(0), backoff.next(1000)], [10, 20, 35, 35, 10])
  })
})
