// What petstore-client repeats and what it does not, with a live service behind a proxy of the
// test's own that loses answers, hangs, or answers 429/503 the way a load balancer or the service
// itself would (test/client/fault-proxy.ts). What was applied is read from the service afterwards.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createClient, type InventoryChange, PetstoreConnectionError, PetstoreError, PetstoreUnknownOutcomeError } from 'petstore-client'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { FaultProxy } from './fault-proxy.js'

const BIG = 2n ** 53n + 1n

for (const backend of BACKENDS) {
  describe(`petstore-client retries (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 100, status: 'available' },
        { petId: BIG, quantity: 100, status: 'available' },
      ],
    })
    let proxy: FaultProxy
    before(async () => {
      proxy = await new FaultProxy(suite.server.baseUrl).start()
    })
    after(async () => proxy?.stop())
    const api = (options: { timeoutMs?: number; maxRetries?: number } = {}) =>
      createClient({ baseUrl: `${proxy.baseUrl}/v1`, token: suite.token, ...options })
    // Straight to the service, to see what really happened.
    const direct = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const ledger = async (petId: bigint) => {
      const rows: InventoryChange[] = []
      for await (const row of direct().changes.list({ petId })) rows.push(row)
      return rows
    }
    const orders = async () => {
      const all = []
      for await (const order of direct().orders.list()) all.push(order)
      return all
    }

    test('When an order placement’s answer is lost, then the client sends it again under the same Idempotency-Key and exactly one order is placed', async () => {
      const before = await orders()
      const rows = (await ledger(BIG)).length
      proxy.inject('POST', '/v1/store/orders', { kind: 'drop-answer' })
      const order = await api().orders.place({ petId: BIG, quantity: 3 })
      assert.equal(order.petId, BIG)
      const sent = proxy.count('POST', '/v1/store/orders').slice(-2)
      assert.equal(sent.length, 2)
      assert.ok(sent[0]!.headers['idempotency-key'], 'the placement carries an Idempotency-Key')
      assert.equal(sent[1]!.headers['idempotency-key'], sent[0]!.headers['idempotency-key'])
      const after = await orders()
      assert.deepEqual(
        after.slice(before.length).map((o) => o.id),
        [order.id],
      )
      assert.equal((await direct().inventory.get(BIG)).item.quantity, 97)
      assert.equal((await ledger(BIG)).length, rows + 1)
    })

    test('When a PATCH’s answer is lost, then it is not sent again: PetstoreUnknownOutcomeError, and the service applied it exactly once', async () => {
      const rows = (await ledger(1n)).length
      const sentBefore = proxy.count('PATCH', '/v1/inventory/1').length
      proxy.inject('PATCH', '/v1/inventory/1', { kind: 'drop-answer' })
      const error = await api()
        .inventory.set(1n, { quantity: 41 })
        .catch((e: unknown) => e)
      assert.ok(error instanceof PetstoreUnknownOutcomeError, String(error))
      // Not a connection error: code that repeats a call on those must not repeat this one.
      assert.ok(!(error instanceof PetstoreConnectionError))
      assert.match(error.message, /read it again before repeating it/)
      assert.equal(proxy.count('PATCH', '/v1/inventory/1').length, sentBefore + 1)
      const after = await ledger(1n)
      assert.equal(after.length, rows + 1)
      assert.equal(after.at(-1)!.quantity, 41)
    })

    test('When the service answers 503 or 429 with Retry-After, then every operation, a PATCH included, is sent again after that wait and succeeds once', async () => {
      const rows = (await ledger(1n)).length
      const error = JSON.stringify({ code: 'service_unavailable', message: 'busy', status: 503 })
      proxy.inject('PATCH', '/v1/inventory/1', { kind: 'reply', status: 503, headers: { 'retry-after': '1' }, body: error })
      const started = performance.now()
      const { item } = await api().inventory.set(1n, { quantity: 42 })
      assert.ok(performance.now() - started >= 950, 'waited out Retry-After: 1')
      assert.equal(item.quantity, 42)
      assert.equal((await ledger(1n)).length, rows + 1)

      const limited = JSON.stringify({ code: 'rate_limited', message: 'slow down', status: 429 })
      proxy.inject('GET', '/v1/inventory', { kind: 'reply', status: 429, headers: { 'retry-after': '0' }, body: limited })
      proxy.inject('GET', '/v1/inventory', { kind: 'reply', status: 429, headers: { 'retry-after': '0' }, body: limited })
      assert.equal((await api().inventory.list()).length, 2)
    })

    test('When Retry-After is longer than the client waits, or the retries run out, then the 429 is thrown with its code and retryAfter', async () => {
      const limited = JSON.stringify({ code: 'rate_limited', message: 'slow down', status: 429 })
      proxy.inject('GET', '/v1/inventory', { kind: 'reply', status: 429, headers: { 'retry-after': '3600' }, body: limited })
      const started = performance.now()
      const error = await api()
        .inventory.list()
        .catch((e: unknown) => e)
      assert.ok(performance.now() - started < 5000, 'thrown at once, not after an hour')
      assert.ok(error instanceof PetstoreError)
      assert.deepEqual([error.status, error.code, error.retryAfter], [429, 'rate_limited', 3600])

      for (let i = 0; i < 2; i++)
        proxy.inject('GET', '/v1/inventory', { kind: 'reply', status: 429, headers: { 'retry-after': '0' }, body: limited })
      const exhausted = await api({ maxRetries: 1 })
        .inventory.list()
        .catch((e: unknown) => e)
      assert.ok(exhausted instanceof PetstoreError && exhausted.code === 'rate_limited')
    })

    test('When a GET hangs, then each attempt times out and is tried again, and the last timeout is a PetstoreConnectionError', async () => {
      const sent = proxy.count('GET', '/v1/inventory/1').length
      proxy.inject('GET', '/v1/inventory/1', { kind: 'hang' })
      const { item } = await api({ timeoutMs: 300 }).inventory.get(1n)
      assert.equal(item.petId, 1n)
      assert.equal(proxy.count('GET', '/v1/inventory/1').length, sent + 2)

      for (let i = 0; i < 2; i++) proxy.inject('GET', '/v1/inventory/1', { kind: 'hang' })
      const error = await api({ timeoutMs: 200, maxRetries: 1 })
        .inventory.get(1n)
        .catch((e: unknown) => e)
      assert.ok(error instanceof PetstoreConnectionError && !(error instanceof PetstoreUnknownOutcomeError), String(error))
      assert.match(error.message, /timed out after 200 ms/)
    })

    test('When the caller aborts, during an attempt or during the wait before the next, then the call rejects with the signal’s reason at once and sends nothing more', async () => {
      const sent = proxy.count('GET', '/v1/inventory/1').length
      proxy.inject('GET', '/v1/inventory/1', { kind: 'hang' })
      const controller = new AbortController()
      const call = api().inventory.get(1n, { signal: controller.signal })
      setTimeout(() => controller.abort(new Error('user left')), 100)
      let started = performance.now()
      await assert.rejects(call, /user left/)
      assert.ok(performance.now() - started < 2000, 'rejected at the abort, not at a timeout')
      assert.equal(proxy.count('GET', '/v1/inventory/1').length, sent + 1)

      // A 503 asking for 5 s: the abort comes during that wait.
      const busy = JSON.stringify({ code: 'service_unavailable', message: 'busy', status: 503 })
      proxy.inject('GET', '/v1/inventory/1', { kind: 'reply', status: 503, headers: { 'retry-after': '5' }, body: busy })
      const waiting = new AbortController()
      const retrying = api().inventory.get(1n, { signal: waiting.signal })
      setTimeout(() => waiting.abort(new Error('gave up waiting')), 300)
      started = performance.now()
      await assert.rejects(retrying, /gave up waiting/)
      assert.ok(performance.now() - started < 2000, 'rejected during the wait')
      await new Promise((resolve) => setTimeout(resolve, 200))
      assert.equal(proxy.count('GET', '/v1/inventory/1').length, sent + 2)
    })

    test('When a PATCH times out, then it is not sent again: PetstoreUnknownOutcomeError', async () => {
      const sent = proxy.count('PATCH', '/v1/inventory/1').length
      proxy.inject('PATCH', '/v1/inventory/1', { kind: 'hang' })
      const error = await api({ timeoutMs: 300 })
        .inventory.set(1n, { quantity: 3 })
        .catch((e: unknown) => e)
      assert.ok(error instanceof PetstoreUnknownOutcomeError, String(error))
      assert.match(error.message, /timed out after 300 ms/)
      assert.equal(proxy.count('PATCH', '/v1/inventory/1').length, sent + 1)
    })

    test('When Retry-After is an HTTP date, then the client waits until it and sends again', async () => {
      const sent = proxy.count('GET', '/v1/inventory/2').length
      const busy = JSON.stringify({ code: 'service_unavailable', message: 'busy', status: 503 })
      proxy.inject('GET', '/v1/inventory/2', {
        kind: 'reply',
        status: 503,
        headers: { 'retry-after': new Date(Date.now() + 1000).toUTCString() },
        body: busy,
      })
      const error = await api()
        .inventory.get(2n)
        .catch((e: unknown) => e)
      assert.ok(error instanceof PetstoreError && error.code === 'not_found', String(error))
      assert.equal(proxy.count('GET', '/v1/inventory/2').length, sent + 2)
    })

    test('When the API sits under a path prefix (a proxy’s /petstore/v1), then paging follows the Links under that prefix', async () => {
      const prefixed = createClient({ baseUrl: `${proxy.baseUrl}/petstore/v1`, token: suite.token })
      const ids: bigint[] = []
      for await (const item of prefixed.inventory.iterate({ pageSize: 1 })) ids.push(item.petId)
      assert.deepEqual(ids, [1n, BIG])
      assert.ok(proxy.count('GET', '/petstore/v1/inventory?').length >= 2, 'the next pages went under the prefix too')
    })

    test('When the stream is answered with something other than text/event-stream, then it throws invalid_response rather than reconnect forever', async () => {
      proxy.inject('GET', '/v1/inventory/changes/stream', {
        kind: 'reply',
        status: 200,
        headers: { 'content-type': 'text/html' },
        body: '<!doctype html><p>Sign in to the Wi-Fi',
      })
      const iterate = async () => {
        for await (const _ of api().changes.stream()) break
      }
      await assert.rejects(
        iterate(),
        (e: unknown) => e instanceof PetstoreError && e.code === 'invalid_response' && /text\/html/.test(e.message),
      )
    })
  })
}
