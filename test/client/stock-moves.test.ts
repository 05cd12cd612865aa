// Issue 46 through petstore-client: `inventory.adjust` and `inventory.batch` against a live service on
// each backend. Exact int64 petIds (the extremes and 2^53+1) both ways and typed results; each refusal
// a PetstoreError with its code (a batch's naming the change, `changes[i]: `) that changes nothing;
// the generated Idempotency-Key, seen at a proxy of the test's own (test/client/fault-proxy.ts), which
// lets a lost answer make the client send again under the same key, and the change counts once; an
// explicit key reused with another body is refused.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  createClient,
  type InventoryBatchChange,
  type InventoryBatchResult,
  type InventoryChange,
  type InventoryItem,
  PetstoreError,
  type Tagged,
} from 'petstore-client'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { FaultProxy } from './fault-proxy.js'

const MAX = 9223372036854775807n
const MIN = -9223372036854775808n
const BIG = 2n ** 53n + 1n // 9007199254740993: JSON.parse would read 9007199254740992
const INT32_MAX = 2147483647
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** The pets of the batches of 100. */
const HUNDRED = Array.from({ length: 100 }, (_, i) => 1000n + BigInt(i))
const LOST = Array.from({ length: 100 }, (_, i) => 2000n + BigInt(i))

for (const backend of BACKENDS) {
  describe(`petstore-client stock moves (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: MIN, quantity: 10, status: 'sold' },
        { petId: 1, quantity: 24, status: 'available' },
        { petId: 2, quantity: 0, status: 'available' },
        { petId: 3, quantity: 24, status: 'pending' },
        { petId: 4, quantity: 24, status: 'available' },
        { petId: 5, quantity: 24, status: 'available' },
        { petId: 6, quantity: 24, status: 'available' },
        { petId: 10, quantity: 10, status: 'available' },
        { petId: BIG, quantity: 5, status: 'available' },
        { petId: MAX, quantity: INT32_MAX - 10, status: 'available' },
        ...HUNDRED.map((petId) => ({ petId, quantity: 50, status: 'available' })),
        ...LOST.map((petId) => ({ petId, quantity: 7, status: 'available' })),
      ],
    })
    let proxy: FaultProxy
    before(async () => {
      proxy = await new FaultProxy(suite.server.baseUrl).start()
    })
    after(async () => proxy?.stop())
    /** Through the proxy, which can lose answers and records what the client sent. */
    const api = () => createClient({ baseUrl: `${proxy.baseUrl}/v1`, token: suite.token })
    /** Straight to the service, to see what really happened. */
    const direct = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const quantity = async (petId: bigint) => (await direct().inventory.get(petId)).item.quantity
    /** The newest ledger row's seq. */
    const lastSeq = async () => (await direct().changes.page({ before: MAX, pageSize: 1 })).items[0]!.seq
    /** Every ledger row after `seq`, oldest first. */
    const rowsAfter = async (seq: bigint) => {
      const rows: InventoryChange[] = []
      for await (const row of direct().changes.list({ after: seq, pageSize: 1000 })) rows.push(row)
      return rows
    }
    const rejection = async (call: Promise<unknown>): Promise<PetstoreError> => {
      const error = await call.then(
        (value) => assert.fail(`resolved with ${JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`),
        (e: unknown) => e,
      )
      assert.ok(error instanceof PetstoreError, String(error))
      return error
    }
    /** The keys of the requests the proxy saw since `from` (an index into proxy.seen). */
    const keysSince = (from: number, method: string, path: string) =>
      proxy.seen
        .slice(from)
        .filter((s) => s.method === method && s.path === path)
        .map((s) => s.headers['idempotency-key'])

    test('When adjust and batch name pets by bigint, the int64 extremes and 2^53+1 included, then each change lands on exactly that pet, the results are typed with exact petIds, and the batch’s ledger rows are contiguous under its batchId', async () => {
      const client = api()
      const from = await lastSeq()
      const adjusted: Tagged<InventoryItem> = await client.inventory.adjust(BIG, { delta: 3, reason: 'arrival', note: 'crate 7' })
      assert.deepEqual(adjusted.item, { petId: BIG, quantity: 8, status: 'available' })
      assert.equal(typeof adjusted.item.petId, 'bigint')
      assert.match(adjusted.etag, /^"[^"]+"$/)
      assert.equal(adjusted.etag, (await direct().inventory.get(BIG)).etag, 'the ETag of the entry as the adjustment left it')
      assert.deepEqual((await client.inventory.adjust(MIN, { delta: -4, reason: 'damage' })).item, {
        petId: MIN,
        quantity: 6,
        status: 'sold',
      })
      assert.deepEqual((await client.inventory.adjust(MAX, { delta: 10 })).item, { petId: MAX, quantity: INT32_MAX, status: 'available' })

      const changes: InventoryBatchChange[] = [
        { petId: MAX, delta: -5, reason: 'loss' },
        { petId: MIN, quantity: 1, expectedQuantity: 6, reason: 'count', note: 'shelf B' },
        { petId: BIG, delta: -1 },
        { petId: MAX, delta: -5 },
        { petId: 1n, quantity: 30 },
      ]
      const result: InventoryBatchResult = await client.inventory.batch(changes)
      assert.match(result.batchId, UUID)
      assert.deepEqual(result.entries, [
        { petId: MAX, quantity: INT32_MAX - 5, status: 'available' },
        { petId: MIN, quantity: 1, status: 'sold' },
        { petId: BIG, quantity: 7, status: 'available' },
        { petId: MAX, quantity: INT32_MAX - 10, status: 'available' },
        { petId: 1n, quantity: 30, status: 'available' },
      ])
      assert.ok(result.entries.every((e) => typeof e.petId === 'bigint'))
      assert.equal(await quantity(MAX), INT32_MAX - 10)
      assert.equal(await quantity(MIN), 1)
      assert.equal(await quantity(BIG), 7)

      const rows = await rowsAfter(from)
      assert.deepEqual(
        rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.reason, r.note, r.batchId]),
        [
          [BIG, 5, 8, 'arrival', 'crate 7', null],
          [MIN, 10, 6, 'damage', null, null],
          [MAX, INT32_MAX - 10, INT32_MAX, 'adjustment', null, null],
          [MAX, INT32_MAX, INT32_MAX - 5, 'loss', null, result.batchId],
          [MIN, 6, 1, 'count', 'shelf B', result.batchId],
          [BIG, 8, 7, 'adjustment', null, result.batchId],
          [MAX, INT32_MAX - 5, INT32_MAX - 10, 'adjustment', null, result.batchId],
          [1n, 24, 30, 'adjustment', null, result.batchId],
        ],
      )
      const seqs = rows.slice(3).map((r) => r.seq)
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => seqs[0]! + BigInt(i)),
        'the batch’s rows are contiguous',
      )
      assert.ok(rows.every((r) => typeof r.seq === 'bigint' && typeof r.petId === 'bigint'))
    })

    test('When a move cannot apply, then it is a PetstoreError with its code (insufficient_stock, stock_overflow, quantity_mismatch, not_found; in a batch, naming the change), sent once, and nothing changed', async () => {
      const client = api()
      const stateBefore = await direct().inventory.list()
      const from = await lastSeq()
      const sentBefore = proxy.seen.length

      const short = await rejection(client.inventory.adjust(2n, { delta: -1 }))
      assert.deepEqual(
        [short.status, short.code, short.message],
        [409, 'insufficient_stock', 'Pet 2 has 0 in stock; removing 1 would take it below zero'],
      )
      assert.match(short.requestId ?? '', /^[0-9a-f-]{36}$/)
      const over = await rejection(client.inventory.adjust(MAX, { delta: 11 }))
      assert.deepEqual(
        [over.status, over.code, over.message],
        [409, 'stock_overflow', `Pet ${MAX} has ${INT32_MAX - 10} in stock; adding 11 would take it past ${INT32_MAX}`],
      )
      const mismatch = await rejection(client.inventory.set(3n, { quantity: 5, expectedQuantity: 3 }))
      assert.deepEqual(
        [mismatch.status, mismatch.code, mismatch.message],
        [409, 'quantity_mismatch', 'Pet 3 has 24 in stock, not the expectedQuantity 3; nothing was changed'],
      )
      const missing = await rejection(client.inventory.adjust(777777n, { delta: 1 }))
      assert.deepEqual([missing.status, missing.code, missing.message], [404, 'not_found', 'No inventory entry for pet 777777'])

      // In a batch, the change that cannot apply is named, and the ones before it are not kept.
      const batches: [InventoryBatchChange[], number, string, string][] = [
        [
          [
            { petId: 3n, delta: 1 },
            { petId: 2n, delta: -1000 },
          ],
          409,
          'insufficient_stock',
          'changes[1]: pet 2 has 0 in stock; removing 1000 would take it below zero',
        ],
        [
          [
            { petId: MAX, delta: 10 },
            { petId: MAX, delta: 1 },
          ],
          409,
          'stock_overflow',
          `changes[1]: pet ${MAX} has ${INT32_MAX} in stock; adding 1 would take it past ${INT32_MAX}`,
        ],
        [
          [
            { petId: BIG, delta: -7 },
            { petId: 3n, quantity: 0 },
            { petId: MIN, quantity: 9, expectedQuantity: 2 },
          ],
          409,
          'quantity_mismatch',
          `changes[2]: pet ${MIN} has 1 in stock, not the expectedQuantity 2; nothing was changed`,
        ],
        [
          [
            { petId: 1n, delta: 1 },
            { petId: BIG, delta: 1 },
            { petId: 777777n, quantity: 1 },
          ],
          404,
          'not_found',
          'changes[2]: no inventory entry for pet 777777',
        ],
      ]
      for (const [changes, status, code, message] of batches) {
        const error = await rejection(client.inventory.batch(changes))
        assert.deepEqual([error.status, error.code, error.message], [status, code, message])
      }

      // Each refusal was sent once: a 409 or a 404 is an answer, not a reason to send again.
      assert.equal(proxy.seen.length - sentBefore, 4 + batches.length)
      assert.deepEqual(await direct().inventory.list(), stateBefore)
      assert.deepEqual(await rowsAfter(from), [], 'no ledger row')
    })

    test('When adjust and batch are called, then each call carries an Idempotency-Key of its own; when the answer is lost after the service committed, the client sends again under the same key and the change counts once', async () => {
      const client = api()
      // Every call its own generated key.
      let seen = proxy.seen.length
      await client.inventory.adjust(6n, { delta: 1 })
      await client.inventory.adjust(6n, { delta: 1 })
      const generated = keysSince(seen, 'POST', '/v1/inventory/6/adjustments')
      assert.equal(generated.length, 2)
      assert.ok(
        generated.every((k) => typeof k === 'string' && UUID.test(k)),
        String(generated),
      )
      assert.notEqual(generated[0], generated[1])
      assert.equal(await quantity(6n), 26, 'two calls, two adjustments')

      // An adjustment whose answer is lost: sent again under its key, applied once.
      let from = await lastSeq()
      seen = proxy.seen.length
      proxy.inject('POST', `/v1/inventory/${BIG}/adjustments`, { kind: 'drop-answer' })
      const adjusted = await client.inventory.adjust(BIG, { delta: 4, reason: 'return', note: 'lost answer' })
      assert.deepEqual(adjusted.item, { petId: BIG, quantity: 11, status: 'available' })
      const sentKeys = keysSince(seen, 'POST', `/v1/inventory/${BIG}/adjustments`)
      assert.equal(sentKeys.length, 2, 'sent twice')
      assert.ok(typeof sentKeys[0] === 'string' && UUID.test(sentKeys[0]), String(sentKeys[0]))
      assert.equal(sentKeys[1], sentKeys[0], 'under the same key')
      assert.equal(await quantity(BIG), 11, 'moved by 4, once')
      assert.deepEqual(
        (await rowsAfter(from)).map((r) => [r.petId, r.previousQuantity, r.quantity, r.reason, r.note, r.batchId]),
        [[BIG, 7, 11, 'return', 'lost answer', null]],
      )

      // Lost twice (the client's two retries): still once.
      from = await lastSeq()
      seen = proxy.seen.length
      proxy.inject('POST', '/v1/inventory/10/adjustments', { kind: 'drop-answer' })
      proxy.inject('POST', '/v1/inventory/10/adjustments', { kind: 'drop-answer' })
      assert.equal((await client.inventory.adjust(10n, { delta: -3 })).item.quantity, 7)
      assert.equal(new Set(keysSince(seen, 'POST', '/v1/inventory/10/adjustments')).size, 1)
      assert.equal(keysSince(seen, 'POST', '/v1/inventory/10/adjustments').length, 3)
      assert.equal(await quantity(10n), 7)
      assert.equal((await rowsAfter(from)).length, 1)

      // A batch of 100 whose answer is lost: sent again under its key, its 100 rows written once.
      from = await lastSeq()
      seen = proxy.seen.length
      proxy.inject('POST', '/v1/inventory/batch', { kind: 'drop-answer' })
      const changes: InventoryBatchChange[] = HUNDRED.map((petId, i) =>
        i % 3 === 0 ? { petId, quantity: 60 + i, reason: 'count' } : { petId, delta: i, reason: 'arrival', note: `box ${i}` },
      )
      const result = await client.inventory.batch(changes)
      const expected = HUNDRED.map((_, i) => (i % 3 === 0 ? 60 + i : 50 + i))
      assert.deepEqual(
        result.entries,
        HUNDRED.map((petId, i) => ({ petId, quantity: expected[i]!, status: 'available' })),
      )
      const batchKeys = keysSince(seen, 'POST', '/v1/inventory/batch')
      assert.equal(batchKeys.length, 2, 'sent twice')
      assert.ok(typeof batchKeys[0] === 'string' && UUID.test(batchKeys[0]), String(batchKeys[0]))
      assert.equal(batchKeys[1], batchKeys[0], 'under the same key')
      const rows = await rowsAfter(from)
      assert.equal(rows.length, 100, 'one batch of rows, not two')
      assert.deepEqual(new Set(rows.map((r) => r.batchId)), new Set([result.batchId]))
      assert.deepEqual(
        rows.map((r) => [r.seq - rows[0]!.seq, r.petId, r.previousQuantity, r.quantity]),
        HUNDRED.map((petId, i) => [BigInt(i), petId, 50, expected[i]]),
      )
      const inventory = await direct().inventory.list()
      assert.deepEqual(
        inventory.filter((e) => e.petId >= 1000n && e.petId < 1100n).map((e) => e.quantity),
        expected,
      )
    })

    test('When a batch of 100 deltas has its answer lost twice, then the third attempt, under the same key, gets the first answer and every pet moved by exactly its delta', async () => {
      const client = api()
      const from = await lastSeq()
      const seen = proxy.seen.length
      proxy.inject('POST', '/v1/inventory/batch', { kind: 'drop-answer' })
      proxy.inject('POST', '/v1/inventory/batch', { kind: 'drop-answer' })
      const result = await client.inventory.batch(LOST.map((petId) => ({ petId, delta: 1 })))
      assert.equal(keysSince(seen, 'POST', '/v1/inventory/batch').length, 3)
      assert.equal(new Set(keysSince(seen, 'POST', '/v1/inventory/batch')).size, 1)
      assert.deepEqual(
        result.entries.map((e) => [e.petId, e.quantity]),
        LOST.map((petId) => [petId, 8]),
      )
      const rows = await rowsAfter(from)
      assert.equal(rows.length, 100)
      assert.ok(rows.every((r) => r.batchId === result.batchId && r.previousQuantity === 7 && r.quantity === 8))
      for (const petId of [LOST[0]!, LOST[99]!]) assert.equal(await quantity(petId), 8)
    })

    test('When a refused batch’s answer is lost, then the client sends it again and gets the same refusal, and nothing changed', async () => {
      const client = api()
      const from = await lastSeq()
      const seen = proxy.seen.length
      proxy.inject('POST', '/v1/inventory/batch', { kind: 'drop-answer' })
      const error = await rejection(
        client.inventory.batch([
          { petId: 5n, delta: 1 },
          { petId: 2n, delta: -1 },
        ]),
      )
      assert.deepEqual(
        [error.status, error.code, error.message],
        [409, 'insufficient_stock', 'changes[1]: pet 2 has 0 in stock; removing 1 would take it below zero'],
      )
      assert.equal(keysSince(seen, 'POST', '/v1/inventory/batch').length, 2)
      assert.equal(await quantity(5n), 24)
      assert.deepEqual(await rowsAfter(from), [])
    })

    test('When an explicit idempotencyKey is sent again, then with the same body the first answer comes back and nothing more is applied, and with another body it is PetstoreError idempotency_key_reused and nothing changes', async () => {
      const client = api()
      const from = await lastSeq()
      const seen = proxy.seen.length
      const key = `adjust-${backend.name}-${Date.now()}`
      const first = await client.inventory.adjust(4n, { delta: 2, note: 'once' }, { idempotencyKey: key })
      assert.equal(first.item.quantity, 26)
      const again = await client.inventory.adjust(4n, { delta: 2, note: 'once' }, { idempotencyKey: key })
      assert.deepEqual(again, first)
      assert.deepEqual(keysSince(seen, 'POST', '/v1/inventory/4/adjustments'), [key, key], 'the explicit key is the one sent')
      for (const [petId, body] of [
        [4n, { delta: 3, note: 'once' }],
        [4n, { delta: 2 }],
        [5n, { delta: 2, note: 'once' }],
      ] as const) {
        const reused = await rejection(client.inventory.adjust(petId, body, { idempotencyKey: key }))
        assert.deepEqual([reused.status, reused.code], [409, 'idempotency_key_reused'])
      }

      const batchKey = `batch-${backend.name}-${Date.now()}`
      const changes: InventoryBatchChange[] = [
        { petId: 5n, delta: -4 },
        { petId: MIN, delta: 1 },
      ]
      const applied = await client.inventory.batch(changes, { idempotencyKey: batchKey })
      assert.deepEqual(
        applied.entries.map((e) => [e.petId, e.quantity]),
        [
          [5n, 20],
          [MIN, 2],
        ],
      )
      assert.deepEqual(await client.inventory.batch(changes, { idempotencyKey: batchKey }), applied, 'the same batchId and entries')
      for (const other of [
        [{ petId: 5n, delta: -4 }],
        [
          { petId: 5n, delta: -4 },
          { petId: MIN, delta: 2 },
        ],
      ]) {
        const reused = await rejection(client.inventory.batch(other, { idempotencyKey: batchKey }))
        assert.deepEqual([reused.status, reused.code], [409, 'idempotency_key_reused'])
      }
      // An adjustment's key is not a batch's.
      const crossed = await rejection(client.inventory.batch([{ petId: 4n, delta: 2, note: 'once' }], { idempotencyKey: key }))
      assert.deepEqual([crossed.status, crossed.code], [409, 'idempotency_key_reused'])

      assert.equal(await quantity(4n), 26)
      assert.equal(await quantity(5n), 20)
      assert.equal(await quantity(MIN), 2)
      const rows = await rowsAfter(from)
      assert.deepEqual(
        rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.batchId]),
        [
          [4n, 24, 26, null],
          [5n, 24, 20, applied.batchId],
          [MIN, 1, 2, applied.batchId],
        ],
      )
    })
  })
}
