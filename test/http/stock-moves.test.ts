// Issue 46: stock moves. POST /v1/inventory/{petId}/adjustments (a delta applied in the write lock),
// PATCH with expectedQuantity, POST /v1/inventory/batch (all or nothing, one batchId on contiguous
// ledger rows), their Idempotency-Keys and scopes, and the batchId on the change stream.
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey, parseExact, type Response } from '../support/helpers.js'
import {
  assertChangeShape,
  assertError,
  changesSince,
  getChanges,
  importInventory,
  type InventoryChange,
  keyIdOf,
  quantityOf,
} from '../support/ledger-client.js'
import { feedTexts, openStream, until } from '../changes/sse.js'

const BIG = 9007199254740993n
const INT32_MAX = 2147483647
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const JSON_HEADERS = { 'content-type': 'application/json' }
/** 500 code points of 3 bytes each in UTF-8: the longest note, nearly the heaviest. */
const HEAVY_NOTE = '日'.repeat(500)

type Change = Record<string, unknown>

/** A batch body as raw JSON, so that petIds (bigint) are written digit for digit. */
function batchBody(changes: Change[]): string {
  return JSON.stringify({ changes }, (_, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1')
}

for (const backend of BACKENDS) {
  describe(`stock moves (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let keyId: number
    let otherToken: string
    let otherKeyId: number
    before(async () => {
      keyId = await keyIdOf(suite.server, 'suite')
      otherToken = await createKey(suite.server, 'other')
      otherKeyId = await keyIdOf(suite.server, 'other')
      await importInventory(suite.server, [
        { petId: 1, quantity: 24 },
        { petId: 2, quantity: 24 },
        { petId: 3, quantity: INT32_MAX - 10 },
        { petId: BIG, quantity: 5 },
        { petId: 5, quantity: 24, status: 'pending' },
        { petId: 6, quantity: 10 },
        ...[10, 11, 12].map((petId) => ({ petId, quantity: 10 })),
        ...[20, 21].map((petId) => ({ petId, quantity: 5 })),
        { petId: 22, quantity: INT32_MAX - 1 },
        { petId: 30, quantity: 0 },
        { petId: 31, quantity: 0 },
        ...[40, 41, 42, 43, 44, 45, 46, 47].map((petId) => ({ petId, quantity: 10 })),
        ...[50, 51].map((petId) => ({ petId, quantity: 100 })),
        { petId: 52, quantity: 5 },
        { petId: 60, quantity: 10 },
      ])
    })

    const adjust = (petId: bigint | number, body: unknown, headers: Record<string, string> = {}, token = suite.token) =>
      suite.server.request('POST', `/v1/inventory/${petId}/adjustments`, { token, body, headers })
    const adjustRaw = (petId: bigint | number | string, rawBody: string, headers: Record<string, string> = {}) =>
      suite.server.request('POST', `/v1/inventory/${petId}/adjustments`, {
        token: suite.token,
        rawBody,
        headers: { ...JSON_HEADERS, ...headers },
      })
    const batchRaw = (rawBody: string, headers: Record<string, string> = {}, token = suite.token) =>
      suite.server.request('POST', '/v1/inventory/batch', { token, rawBody, headers: { ...JSON_HEADERS, ...headers } })
    const batch = (changes: Change[], headers: Record<string, string> = {}, token = suite.token) =>
      batchRaw(batchBody(changes), headers, token)
    const patch = (petId: bigint | number, body: unknown, headers: Record<string, string> = {}) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body, headers })
    const get = (petId: bigint | number) => suite.server.request('GET', `/v1/inventory/${petId}`, { token: suite.token })
    const stock = (petId: bigint | number) => quantityOf(suite.server, suite.token, petId)
    /** The newest ledger row's seq, read newest first (the ledger holds heavy notes: never read it all). */
    const seq = async (): Promise<number> => {
      const res = await getChanges(suite.server, suite.token, 'before=9223372036854775807&limit=1')
      assert.equal(res.status, 200, res.text)
      return (res.body as InventoryChange[])[0]?.seq ?? 0
    }
    /** Everything a refused request must leave as it was: each entry exactly as GET shows it (with its ETag), and the ledger's end. */
    const snapshot = async (petIds: (bigint | number)[]) => ({
      entries: await Promise.all(
        petIds.map(async (petId) => {
          const res = await get(petId)
          return [res.status, res.text, res.headers.get('etag')]
        }),
      ),
      seq: await seq(),
    })
    const since = (after: number, petId?: bigint) => changesSince(suite.server, suite.token, after, petId)

    describe('adjustments', () => {
      test('When 12 units arrive with a note, then 200 with the entry and an ETag that GET then shows, and one ledger row records reason, note, key and request id', async () => {
        const after = await seq()
        const res = await adjust(1, { delta: 12, reason: 'arrival', note: 'Delivery 2026-12-05, 12 bags' }, { 'x-request-id': 'arrive-1' })
        assert.equal(res.status, 200, res.text)
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
        assert.deepEqual(res.body, { petId: 1n, quantity: 36, status: 'available' })
        assert.equal(res.headers.get('idempotent-replayed'), null)
        const etag = res.headers.get('etag')
        assert.ok(etag, 'an ETag on the 200')
        const read = await get(1)
        assert.equal(read.status, 200)
        assert.equal(read.text, res.text, 'the same representation')
        assert.equal(read.headers.get('etag'), etag)
        const rows = await since(after)
        assert.equal(rows.length, 1, JSON.stringify(rows.map((r) => r.seq)))
        assert.deepEqual(
          { ...rows[0]!, seq: 0, at: '' },
          {
            seq: 0,
            petId: 1n,
            previousQuantity: 24,
            quantity: 36,
            reason: 'arrival',
            note: 'Delivery 2026-12-05, 12 bags',
            orderId: null,
            batchId: null,
            keyId,
            requestId: 'arrive-1',
            at: '',
          },
        )
        const feed = await getChanges(suite.server, suite.token, `after=${after}&limit=10&petId=1`)
        assert.ok(feed.text.includes('"batchId":null'), feed.text)
      })

      test('When an adjustment gives no reason, then the row says adjustment with note null; each delta reason is recorded', async () => {
        const after = await seq()
        assert.equal((await adjust(2, { delta: -1 })).status, 200)
        for (const reason of ['adjustment', 'arrival', 'return', 'damage', 'loss']) {
          const res = await adjust(2, { delta: 1, reason })
          assert.equal(res.status, 200, `${reason}: ${res.text}`)
        }
        const rows = await since(after)
        assert.deepEqual(
          rows.map((r) => [r.reason, r.note, r.previousQuantity, r.quantity]),
          [
            ['adjustment', null, 24, 23],
            ['adjustment', null, 23, 24],
            ['arrival', null, 24, 25],
            ['return', null, 25, 26],
            ['damage', null, 26, 27],
            ['loss', null, 27, 28],
          ],
        )
      })

      test('When a negative delta takes the stock to exactly 0, then 200 with 0 and the status kept; one more unit is 409 insufficient_stock naming the quantity, and nothing changes', async () => {
        const res = await adjust(5, { delta: -24, reason: 'damage', note: 'all gone' })
        assert.equal(res.status, 200, res.text)
        assert.deepEqual(res.body, { petId: 5n, quantity: 0, status: 'pending' })
        const before = await snapshot([5])
        const refused = await adjust(5, { delta: -1 })
        assertError(refused, 409, 'insufficient_stock')
        assert.equal(refused.body.message, 'Pet 5 has 0 in stock; removing 1 would take it below zero')
        assert.deepEqual(await snapshot([5]), before)
      })

      test('When a delta would take the stock below 0, then 409 insufficient_stock naming the quantity found, and neither the entry nor the feed changes', async () => {
        const before = await snapshot([6])
        const res = await adjust(6, { delta: -100, reason: 'loss', note: 'n' })
        assertError(res, 409, 'insufficient_stock')
        assert.equal(res.body.message, 'Pet 6 has 10 in stock; removing 100 would take it below zero')
        const lowest = await adjust(6, { delta: -2147483648 })
        assertError(lowest, 409, 'insufficient_stock')
        assert.equal(lowest.body.message, 'Pet 6 has 10 in stock; removing 2147483648 would take it below zero')
        assert.deepEqual(await snapshot([6]), before)
      })

      test('When a delta takes the stock to exactly 2147483647, then 200; past it is 409 stock_overflow naming the quantity found, and nothing changes', async () => {
        const res = await adjust(3, { delta: 10 })
        assert.equal(res.status, 200, res.text)
        assert.equal(res.body.quantity, INT32_MAX)
        assert.ok(res.text.includes(`"quantity":${INT32_MAX}`), res.text)
        const before = await snapshot([3, 22])
        const over = await adjust(3, { delta: 1 })
        assertError(over, 409, 'stock_overflow')
        assert.equal(over.body.message, `Pet 3 has ${INT32_MAX} in stock; adding 1 would take it past ${INT32_MAX}`)
        const far = await adjust(22, { delta: INT32_MAX })
        assertError(far, 409, 'stock_overflow')
        assert.equal(far.body.message, `Pet 22 has ${INT32_MAX - 1} in stock; adding ${INT32_MAX} would take it past ${INT32_MAX}`)
        assert.deepEqual(await snapshot([3, 22]), before)
      })

      test('When the pet is above 2^53, then the adjustment applies to exactly that pet and its row names it digit for digit', async () => {
        const after = await seq()
        const before = await snapshot([BIG - 1n, BIG + 1n])
        const res = await adjust(BIG, { delta: 2, reason: 'return' })
        assert.equal(res.status, 200, res.text)
        assert.ok(res.text.includes('"petId":9007199254740993,'), res.text)
        assert.deepEqual(res.body, { petId: BIG, quantity: 7, status: 'available' })
        const rows = await since(after)
        assert.deepEqual(
          rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.reason]),
          [[BIG, 5, 7, 'return']],
        )
        assert.deepEqual(await snapshot([BIG - 1n, BIG + 1n]), { ...before, seq: rows[0]!.seq })
        // Back to where it was, for the batch tests.
        assert.equal((await adjust(BIG, { delta: -2 })).body.quantity, 5)
      })

      test('When the pet has no entry, then 404 not_found and nothing changes', async () => {
        const before = await snapshot([4242, BIG - 1n])
        for (const petId of [4242n, BIG - 1n, 9223372036854775807n, -9223372036854775808n]) {
          const res = await adjust(petId, { delta: 1 })
          assertError(res, 404, 'not_found', String(petId))
          assert.equal(res.body.message, `No inventory entry for pet ${petId}`)
        }
        assert.deepEqual(await snapshot([4242, BIG - 1n]), before)
      })

      const badBodies: [string, string, RegExp][] = [
        ['delta 0', '{"delta":0}', /^body\.delta must not be 0$/],
        ['delta 0 with a reason and note', '{"delta":0,"reason":"arrival","note":"n"}', /^body\.delta must not be 0$/],
        ['a string delta', '{"delta":"1"}', /delta/],
        ['a fractional delta', '{"delta":1.5}', /delta/],
        ['a delta above int32', '{"delta":2147483648}', /delta/],
        ['a delta below int32', '{"delta":-2147483649}', /delta/],
        ['a null delta', '{"delta":null}', /delta/],
        ['no delta', '{"reason":"arrival","note":"n"}', /delta/],
        [
          'reason count, which goes with a set',
          '{"delta":1,"reason":"count"}',
          /reason must be one of: adjustment, arrival, return, damage, loss$/,
        ],
        ['an unknown reason', '{"delta":1,"reason":"gift"}', /reason must be one of: adjustment, arrival, return, damage, loss$/],
        ['reason order, the store’s own', '{"delta":1,"reason":"order"}', /reason/],
        ['reason import', '{"delta":1,"reason":"import"}', /reason/],
        ['an unknown field', '{"delta":1,"why":"x"}', /why/],
        ['a quantity instead of a delta', '{"quantity":1}', /quantity|delta/],
        ['a note of 501 characters', `{"delta":1,"note":"${'n'.repeat(501)}"}`, /note must NOT have more than 500 characters/],
        ['a null note', '{"delta":1,"note":null}', /note/],
        ['an empty object', '{}', /delta/],
        ['an array', '[{"delta":1}]', /body/],
        ['malformed JSON', '{"delta":', /./],
        ['text that is not JSON', 'delta=1', /./],
      ]
      for (const [what, raw, message] of badBodies) {
        test(`When an adjustment has ${what}, then 400 invalid_request with a clear message, and nothing changes`, async () => {
          const before = await snapshot([10])
          const res = await adjustRaw(10, raw)
          assertError(res, 400, 'invalid_request', what)
          assert.match(res.body.message, message, res.text)
          assert.deepEqual(await snapshot([10]), before)
        })
      }

      test('When the path names no valid pet id or the Idempotency-Key is malformed, then 400 and nothing changes', async () => {
        const before = await snapshot([10])
        for (const petId of ['abc', '1.5', '1e3', '9223372036854775808', '010']) {
          assertError(await adjustRaw(petId, '{"delta":1}'), 400, 'invalid_request', petId)
        }
        for (const key of ['', 'k'.repeat(256), 'caf\u00e9']) {
          assertError(await adjustRaw(10, '{"delta":1}', { 'idempotency-key': key }), 400, 'invalid_request', key.slice(0, 10))
        }
        assert.deepEqual(await snapshot([10]), before)
      })

      test('When the body is not JSON by its content type, then 415 and nothing changes', async () => {
        const before = await snapshot([10])
        const res = await suite.server.request('POST', '/v1/inventory/10/adjustments', {
          token: suite.token,
          rawBody: 'delta=1',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
        assertError(res, 415, 'unsupported_media_type')
        assert.deepEqual(await snapshot([10]), before)
      })

      test('When adjustments to one pet race, then every one counts; when removals race past the stock, exactly as many apply as there were units', async () => {
        const after = await seq()
        const moves = [...Array.from({ length: 20 }, () => 1), ...Array.from({ length: 10 }, () => -2)]
        const answers = await Promise.all(moves.map((delta) => adjust(50, { delta })))
        for (const res of answers) assert.equal(res.status, 200, res.text)
        assert.equal(await stock(50), 100)
        const rows = await since(after, 50n)
        assert.equal(rows.length, moves.length)
        const steps = rows.map((r) => r.quantity - r.previousQuantity!)
        assert.deepEqual(
          steps.sort((a, b) => a - b),
          [...moves].sort((a, b) => a - b),
          'one row per adjustment, each moving by its delta',
        )
        for (let i = 1; i < rows.length; i++) assert.equal(rows[i]!.previousQuantity, rows[i - 1]!.quantity, `seq ${rows[i]!.seq}`)

        const removals = await Promise.all(Array.from({ length: 12 }, () => adjust(52, { delta: -1 })))
        assert.deepEqual(removals.map((r) => r.status).sort(), [
          ...Array.from({ length: 5 }, () => 200),
          ...Array.from({ length: 7 }, () => 409),
        ])
        for (const res of removals.filter((r) => r.status === 409)) {
          assertError(res, 409, 'insufficient_stock')
          assert.equal(res.body.message, 'Pet 52 has 0 in stock; removing 1 would take it below zero')
        }
        assert.equal(await stock(52), 0)
        assert.deepEqual(
          (await since(after, 52n)).map((r) => r.quantity),
          [4, 3, 2, 1, 0],
        )
      })
    })

    describe('PATCH with expectedQuantity', () => {
      test('When expectedQuantity matches, then 200 and the row records the set', async () => {
        const after = await seq()
        const res = await patch(40, { quantity: 8, expectedQuantity: 10, reason: 'count', note: 'shelf count' })
        assert.equal(res.status, 200, res.text)
        assert.deepEqual(res.body, { petId: 40n, quantity: 8, status: 'available' })
        const rows = await since(after)
        assert.deepEqual(
          rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.reason, r.note, r.batchId]),
          [[40n, 10, 8, 'count', 'shelf count', null]],
        )
      })

      test('When expectedQuantity differs, then 409 quantity_mismatch naming the quantity found, and nothing changes', async () => {
        const before = await snapshot([41])
        const res = await patch(41, { quantity: 3, expectedQuantity: 3 })
        assertError(res, 409, 'quantity_mismatch')
        assert.equal(res.body.message, 'Pet 41 has 10 in stock, not the expectedQuantity 3; nothing was changed')
        const zero = await patch(41, { quantity: 10, expectedQuantity: 0 })
        assertError(zero, 409, 'quantity_mismatch')
        assert.match(zero.body.message, /has 10 in stock, not the expectedQuantity 0/)
        assert.deepEqual(await snapshot([41]), before)
      })

      test('When expectedQuantity comes with If-Match, then both are checked: each failing alone refuses, both holding applies', async () => {
        const etag = (await get(42)).headers.get('etag')!
        const before = await snapshot([42])
        const mismatch = await patch(42, { quantity: 3, expectedQuantity: 9 }, { 'if-match': etag })
        assertError(mismatch, 409, 'quantity_mismatch', 'a fresh If-Match, a wrong expectedQuantity')
        assert.equal(mismatch.body.message, 'Pet 42 has 10 in stock, not the expectedQuantity 9; nothing was changed')
        assert.deepEqual(await snapshot([42]), before)
        // The status changes (the quantity does not): the tag goes stale while expectedQuantity still holds.
        await importInventory(suite.server, [{ petId: 42, quantity: 10, status: 'pending' }])
        const middle = await snapshot([42])
        assert.notEqual(middle.entries[0]![2], etag)
        const stale = await patch(42, { quantity: 3, expectedQuantity: 10 }, { 'if-match': etag })
        assertError(stale, 412, 'precondition_failed', 'a stale If-Match, a right expectedQuantity')
        const both = await patch(42, { quantity: 3, expectedQuantity: 9 }, { 'if-match': etag })
        assert.ok([409, 412].includes(both.status), both.text)
        assert.deepEqual(await snapshot([42]), middle)
        const fresh = middle.entries[0]![2] as string
        const applied = await patch(42, { quantity: 3, expectedQuantity: 10 }, { 'if-match': fresh })
        assert.equal(applied.status, 200, applied.text)
        assert.deepEqual(applied.body, { petId: 42n, quantity: 3, status: 'pending' })
      })

      for (const [what, body] of [
        ['a negative expectedQuantity', { quantity: 1, expectedQuantity: -1 }],
        ['a string expectedQuantity', { quantity: 1, expectedQuantity: '10' }],
        ['expectedQuantity without quantity', { expectedQuantity: 10 }],
      ] as const) {
        test(`When a PATCH has ${what}, then 400 and nothing changes`, async () => {
          const before = await snapshot([43])
          const res = await patch(43, body)
          assertError(res, 400, 'invalid_request', what)
          assert.match(res.body.message, /quantity/i, res.text)
          assert.deepEqual(await snapshot([43]), before)
        })
      }
    })

    describe('batches', () => {
      test('When a batch of 3 changes applies, then 200 with a v4 batchId and each entry in order, and the feed shows 3 contiguous rows carrying that batchId', async () => {
        await importInventory(suite.server, [
          { petId: 101, quantity: 10 },
          { petId: BIG, quantity: 5 },
        ])
        const after = await seq()
        const res = await batch(
          [
            { petId: 101, delta: -2, reason: 'damage', note: 'torn bags' },
            { petId: BIG, quantity: 3, expectedQuantity: 5, reason: 'count', note: 'shelf count' },
            { petId: 101, delta: -1, reason: 'loss', note: 'missing' },
          ],
          { 'x-request-id': 'batch-3' },
        )
        assert.equal(res.status, 200, res.text)
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
        assert.deepEqual(Object.keys(res.body), ['batchId', 'entries'])
        const { batchId } = res.body
        assert.match(batchId, UUID_V4)
        assert.deepEqual(res.body.entries, [
          { petId: 101n, quantity: 8, status: 'available' },
          { petId: BIG, quantity: 3, status: 'available' },
          { petId: 101n, quantity: 7, status: 'available' },
        ])
        assert.ok(res.text.includes('"petId":9007199254740993,'), res.text)
        assert.equal(res.headers.get('idempotent-replayed'), null)
        assert.equal(await stock(101), 7)
        assert.equal(await stock(BIG), 3)
        const rows = await since(after)
        assert.equal(rows.length, 3)
        assert.deepEqual(
          rows.map((r) => r.seq),
          [rows[0]!.seq, rows[0]!.seq + 1, rows[0]!.seq + 2],
          'contiguous seqs',
        )
        assert.deepEqual(
          rows.map((r) => ({ ...r, seq: 0, at: '' })),
          [
            [101n, 10, 8, 'damage', 'torn bags'],
            [BIG, 5, 3, 'count', 'shelf count'],
            [101n, 8, 7, 'loss', 'missing'],
          ].map(([petId, previousQuantity, quantity, reason, note]) => ({
            seq: 0,
            petId,
            previousQuantity,
            quantity,
            reason,
            note,
            orderId: null,
            batchId,
            keyId,
            requestId: 'batch-3',
            at: '',
          })),
        )
        assert.equal(new Set(rows.map((r) => r.at)).size, 1, 'one transaction, one time')
        // Another batch gets another id.
        const next = await batch([{ petId: 101, delta: 1 }])
        assert.equal(next.status, 200, next.text)
        assert.match(next.body.batchId, UUID_V4)
        assert.notEqual(next.body.batchId, batchId)
        assert.deepEqual(next.body.entries, [{ petId: 101n, quantity: 8, status: 'available' }])
      })

      // Pets 20 and 21 hold 5; changes 0 and 1 apply before change 2 is looked at.
      const failing: [string, Change, number, string, string][] = [
        [
          'removes more than is left',
          { petId: 20, delta: -100 },
          409,
          'insufficient_stock',
          'changes[2]: pet 20 has 6 in stock; removing 100 would take it below zero',
        ],
        [
          'expects another quantity',
          { petId: 21, quantity: 1, expectedQuantity: 5 },
          409,
          'quantity_mismatch',
          'changes[2]: pet 21 has 4 in stock, not the expectedQuantity 5; nothing was changed',
        ],
        [
          'adds past int32',
          { petId: 20, delta: INT32_MAX },
          409,
          'stock_overflow',
          `changes[2]: pet 20 has 6 in stock; adding ${INT32_MAX} would take it past ${INT32_MAX}`,
        ],
        ['names an unknown pet', { petId: 77777, delta: 1 }, 404, 'not_found', 'changes[2]: no inventory entry for pet 77777'],
        [
          'names an unknown pet above 2^53',
          { petId: BIG + 2n, delta: 1 },
          404,
          'not_found',
          `changes[2]: no inventory entry for pet ${BIG + 2n}`,
        ],
      ]
      for (const [what, change, status, code, message] of failing) {
        test(`When the change at index 2 ${what}, then ${status} ${code} naming changes[2], and nothing of the batch is written`, async () => {
          const before = await snapshot([20, 21, 77777])
          const res = await batch([{ petId: 20, delta: 1, reason: 'arrival' }, { petId: 21, delta: -1 }, change, { petId: 21, delta: 1 }])
          assertError(res, status, code, what)
          assert.equal(res.body.message, message)
          assert.ok(res.body.message.startsWith('changes[2]: '))
          assert.deepEqual(await snapshot([20, 21, 77777]), before)
        })
      }

      const badBatches: [string, Change, RegExp][] = [
        ['both quantity and delta', { petId: 30, quantity: 3, delta: 1 }, /^body\.changes\[2\] must have quantity or delta, not both$/],
        ['neither quantity nor delta', { petId: 30, reason: 'count' }, /^body\.changes\[2\] must have quantity or delta$/],
        ['delta 0', { petId: 30, delta: 0 }, /^body\.changes\[2\]\.delta must not be 0$/],
        [
          'expectedQuantity with a delta',
          { petId: 30, delta: 1, expectedQuantity: 0 },
          /^body\.changes\[2\]\.expectedQuantity goes only with quantity, not delta$/,
        ],
        [
          'reason count with a delta',
          { petId: 30, delta: 1, reason: 'count' },
          /^body\.changes\[2\]\.reason count goes only with quantity, not delta$/,
        ],
        ['a petId as a string', { petId: '30', delta: 1 }, /^body\.changes\[2\]\.petId/],
        ['a fractional petId', { petId: 30.5, delta: 1 }, /^body\.changes\[2\]\.petId/],
        ['no petId', { delta: 1 }, /^body\.changes\[2\].*petId/],
        ['a petId above int64', { petId: 9223372036854775808n, delta: 1 }, /^body\.changes\[2\]\.petId/],
        ['a delta above int32', { petId: 30, delta: 2147483648 }, /^body\.changes\[2\]\.delta/],
        ['a string delta', { petId: 30, delta: '1' }, /^body\.changes\[2\]\.delta/],
        ['a negative quantity', { petId: 30, quantity: -1 }, /^body\.changes\[2\]\.quantity/],
        ['an unknown reason', { petId: 30, delta: 1, reason: 'gift' }, /^body\.changes\[2\]\.reason/],
        [
          'a note of 501 characters',
          { petId: 30, delta: 1, note: 'n'.repeat(501) },
          /^body\.changes\[2\]\.note must NOT have more than 500 characters/,
        ],
        ['an unknown field', { petId: 30, delta: 1, why: 'x' }, /^body\.changes\[2\].*why/],
        ['a change that is not an object', 5 as unknown as Change, /^body\.changes\[2\]/],
      ]
      for (const [what, change, message] of badBatches) {
        test(`When the change at index 2 has ${what}, then 400 naming body.changes[2], and nothing changes`, async () => {
          const before = await snapshot([30, 31])
          const res = await batch([{ petId: 30, delta: 1 }, { petId: 30, quantity: 7 }, change])
          assertError(res, 400, 'invalid_request', what)
          assert.match(res.body.message, message, res.text)
          assert.deepEqual(await snapshot([30, 31]), before)
        })
      }

      const badShapes: [string, string, RegExp][] = [
        ['no changes', '{"changes":[]}', /^body\.changes must NOT have fewer than 1 items$/],
        [
          '1001 changes',
          batchBody(Array.from({ length: 1001 }, () => ({ petId: 30, delta: 1 }))),
          /^body\.changes must NOT have more than 1000 items$/,
        ],
        ['no changes field', '{}', /changes/],
        ['changes that are not an array', '{"changes":{"petId":30,"delta":1}}', /body\.changes/],
        ['an unknown field beside changes', '{"changes":[{"petId":30,"delta":1}],"atomic":true}', /atomic/],
        ['a bare array', '[{"petId":30,"delta":1}]', /body/],
        ['malformed JSON', '{"changes":[{"petId":30,', /./],
      ]
      for (const [what, raw, message] of badShapes) {
        test(`When a batch has ${what}, then 400 with a clear message, and nothing changes`, async () => {
          const before = await snapshot([30])
          const res = await batchRaw(raw)
          assertError(res, 400, 'invalid_request', what)
          assert.match(res.body.message, message, res.text)
          assert.deepEqual(await snapshot([30]), before)
        })
      }

      test('When a batch holds 1000 changes with the heaviest notes (over 1.5 MB), then 200 with 1000 entries in order and 1000 contiguous rows of its batchId', async () => {
        const raw = batchBody(
          Array.from({ length: 1000 }, (_, i) => ({ petId: 31 + (i % 2) * 29, delta: 1, reason: 'arrival', note: HEAVY_NOTE })),
        )
        assert.ok(Buffer.byteLength(raw) > 1_500_000 && Buffer.byteLength(raw) < 2 * 1024 * 1024, String(Buffer.byteLength(raw)))
        const start = await seq()
        const res = await batchRaw(raw)
        assert.equal(res.status, 200, res.text.slice(0, 500))
        assert.match(res.body.batchId, UUID_V4)
        assert.equal(res.body.entries.length, 1000)
        res.body.entries.forEach((entry: { petId: bigint; quantity: number }, i: number) => {
          assert.deepEqual(
            entry,
            i % 2 === 0
              ? { petId: 31n, quantity: i / 2 + 1, status: 'available' }
              : { petId: 60n, quantity: 10 + (i + 1) / 2, status: 'available' },
          )
        })
        assert.equal(await stock(31), 500)
        assert.equal(await stock(60), 510)
        const rows = await since(start)
        assert.equal(rows.length, 1000)
        rows.forEach((row, i) => {
          assert.equal(row.seq, start + 1 + i)
          assert.equal(row.batchId, res.body.batchId)
          assert.equal(row.note, HEAVY_NOTE)
        })
      })

      test('When a batch body is over 2 MiB, then 413 with the Error shape and nothing changes; exactly 2 MiB is read (and refused for its note)', async () => {
        const before = await snapshot([30])
        const head = '{"changes":[{"petId":30,"delta":1,"note":"'
        const tail = '"}]}'
        const sized = (bytes: number) => `${head}${'x'.repeat(bytes - head.length - tail.length)}${tail}`
        const over = await batchRaw(sized(2 * 1024 * 1024 + 1))
        assertError(over, 413, 'payload_too_large')
        const limit = await batchRaw(sized(2 * 1024 * 1024))
        assertError(limit, 400, 'invalid_request')
        // (How the validator writes the change's place is asserted with the other 400s of a batch.)
        assert.match(limit.body.message, /note must NOT have more than 500 characters$/)
        assert.deepEqual(await snapshot([30]), before)
      })
    })

    describe('Idempotency-Key', () => {
      test('When an adjustment is replayed with its key, then the same 200, body and ETag come back marked replayed, and it is applied once', async () => {
        const headers = { 'idempotency-key': 'adjust-44' }
        const first = await adjust(44, { delta: 3, reason: 'arrival', note: 'n' }, headers)
        assert.equal(first.status, 200, first.text)
        assert.equal(first.headers.get('idempotent-replayed'), null)
        assert.equal(first.body.quantity, 13)
        const before = await snapshot([44])
        for (const raw of ['{"delta":3,"reason":"arrival","note":"n"}', '{ "note": "n", "reason": "arrival", "delta": 3 }']) {
          const again = await adjustRaw(44, raw, headers)
          assert.equal(again.status, 200)
          assert.equal(again.text, first.text)
          assert.equal(again.headers.get('etag'), first.headers.get('etag'))
          assert.equal(again.headers.get('idempotent-replayed'), 'true')
        }
        assert.deepEqual(await snapshot([44]), before, 'the replays applied nothing and wrote no row')
      })

      test('When the key comes again with another body or another pet, then 409 idempotency_key_reused and nothing changes', async () => {
        const headers = { 'idempotency-key': 'adjust-45' }
        const first = await adjust(45, { delta: 2 }, headers)
        assert.equal(first.status, 200, first.text)
        const before = await snapshot([45, 46])
        for (const [petId, body] of [
          [45, { delta: 3 }],
          [45, { delta: 2, reason: 'return' }],
          [45, { delta: 2, note: 'n' }],
          [46, { delta: 2 }],
        ] as const) {
          assertError(await adjust(petId, body, headers), 409, 'idempotency_key_reused', `${petId} ${JSON.stringify(body)}`)
        }
        // The same key on the other route, even for the same change.
        assertError(await batch([{ petId: 45, delta: 2 }], headers), 409, 'idempotency_key_reused', 'as a batch')
        assert.deepEqual(await snapshot([45, 46]), before)
        const again = await adjust(45, { delta: 2 }, headers)
        assert.equal(again.text, first.text, 'the original still replays')
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
      })

      test('When a refused adjustment is replayed after the stock changed, then it is refused the same way, marked replayed, and nothing applies', async () => {
        const headers = { 'idempotency-key': 'too-many-46' }
        const first = await adjust(46, { delta: -50 }, headers)
        assertError(first, 409, 'insufficient_stock')
        assert.equal((await patch(46, { quantity: 100 })).status, 200)
        const before = await snapshot([46])
        const again = await adjust(46, { delta: -50 }, headers)
        assert.equal(again.status, 409)
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
        assert.deepEqual(await snapshot([46]), before)
        // Without the key, the same change applies now.
        assert.equal((await adjust(46, { delta: -50 })).body.quantity, 50)

        const missing = { 'idempotency-key': 'not-yet-4646' }
        const absent = await adjust(4646, { delta: 1 }, missing)
        assertError(absent, 404, 'not_found')
        await importInventory(suite.server, [{ petId: 4646, quantity: 1 }])
        const after = await snapshot([4646])
        const replayed = await adjust(4646, { delta: 1 }, missing)
        assert.equal(replayed.status, 404)
        assert.equal(replayed.text, absent.text)
        assert.equal(replayed.headers.get('idempotent-replayed'), 'true')
        assert.deepEqual(await snapshot([4646]), after)
      })

      test('When another API key sends the same Idempotency-Key, then its adjustment and batch are its own, and each key replays its own', async () => {
        const headers = { 'idempotency-key': 'shared-name' }
        const after = await seq()
        const mine = await adjust(47, { delta: 1 }, headers)
        const theirs = await adjust(47, { delta: 1 }, headers, otherToken)
        assert.equal(mine.status, 200, mine.text)
        assert.equal(theirs.status, 200, theirs.text)
        assert.equal(theirs.headers.get('idempotent-replayed'), null)
        assert.deepEqual([mine.body.quantity, theirs.body.quantity], [11, 12])
        const batchHeaders = { 'idempotency-key': 'shared-batch' }
        const myBatch = await batch([{ petId: 47, delta: 1 }], batchHeaders)
        const theirBatch = await batch([{ petId: 47, delta: 1 }], batchHeaders, otherToken)
        assert.equal(myBatch.status, 200, myBatch.text)
        assert.equal(theirBatch.status, 200, theirBatch.text)
        assert.notEqual(theirBatch.body.batchId, myBatch.body.batchId)
        assert.equal(await stock(47), 14)
        const before = await snapshot([47])
        for (const [res, again] of [
          [mine, await adjust(47, { delta: 1 }, headers)],
          [theirs, await adjust(47, { delta: 1 }, headers, otherToken)],
          [myBatch, await batch([{ petId: 47, delta: 1 }], batchHeaders)],
          [theirBatch, await batch([{ petId: 47, delta: 1 }], batchHeaders, otherToken)],
        ] as [Response, Response][]) {
          assert.equal(again.text, res.text)
          assert.equal(again.headers.get('idempotent-replayed'), 'true')
        }
        assert.deepEqual(await snapshot([47]), before)
        assert.deepEqual(
          (await since(after, 47n)).map((r) => r.keyId),
          [keyId, otherKeyId, keyId, otherKeyId],
        )
        // Another body under the other key's use of the name is refused for that key.
        assertError(await adjust(47, { delta: 5 }, headers, otherToken), 409, 'idempotency_key_reused')
      })

      test('When a batch is replayed with its key, then the same 200 and batchId come back marked replayed, applied once; another body is 409 idempotency_key_reused', async () => {
        const headers = { 'idempotency-key': 'batch-11' }
        const changes = [
          { petId: 11, delta: 5, reason: 'arrival', note: 'a' },
          { petId: 12, quantity: 1, expectedQuantity: 10, reason: 'count' },
        ]
        const after = await seq()
        const first = await batch(changes, headers)
        assert.equal(first.status, 200, first.text)
        assert.equal(first.headers.get('idempotent-replayed'), null)
        const before = await snapshot([11, 12])
        assert.deepEqual(
          before.entries.map((e) => JSON.parse(e[1] as string).quantity),
          [15, 1],
        )
        const again = await batchRaw(JSON.stringify({ changes }, null, 2), headers)
        assert.equal(again.status, 200)
        assert.equal(again.text, first.text, 'the same batchId and entries')
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
        for (const other of [
          [changes[0]],
          [changes[1], changes[0]],
          [{ ...changes[0], note: 'b' }, changes[1]],
          [changes[0], { ...changes[1], expectedQuantity: 11 }],
        ] as Change[][]) {
          assertError(await batch(other, headers), 409, 'idempotency_key_reused', JSON.stringify(other))
        }
        assert.deepEqual(await snapshot([11, 12]), before)
        const rows = await since(after)
        assert.equal(rows.length, 2)
        assert.ok(rows.every((r) => r.batchId === first.body.batchId))
      })

      test('When a refused batch is replayed after the stock changed, then it is refused the same way, marked replayed, and nothing of it applies', async () => {
        const headers = { 'idempotency-key': 'batch-refused' }
        const changes = [
          { petId: 10, delta: 1 },
          { petId: 10, delta: 1 },
          { petId: 10, delta: -1000, reason: 'loss' },
        ]
        const first = await batch(changes, headers)
        assertError(first, 409, 'insufficient_stock')
        assert.match(first.body.message, /^changes\[2\]: pet 10 has 12 in stock; removing 1000 would take it below zero$/)
        assert.equal((await patch(10, { quantity: 5000 })).status, 200)
        const before = await snapshot([10])
        const again = await batch(changes, headers)
        assert.equal(again.status, 409)
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
        assert.deepEqual(await snapshot([10]), before)
        const fresh = await batch(changes)
        assert.equal(fresh.status, 200, fresh.text)
        assert.equal(fresh.body.entries[2].quantity, 4002)
        assert.equal((await patch(10, { quantity: 10 })).status, 200)
      })
    })

    describe('scopes', () => {
      test('When a key with only inventory:read adjusts or sends a batch, then 403 insufficient_scope and nothing changes; a key with only inventory:write may', async () => {
        const reader = await createKey(suite.server, 'reader', ['inventory:read'])
        const writer = await createKey(suite.server, 'writer', ['inventory:write'])
        const before = await snapshot([51])
        const calls = (token: string) => [
          () => adjust(51, { delta: 1 }, {}, token),
          () => adjust(51, { delta: 1 }, { 'idempotency-key': 'scoped' }, token),
          () => batch([{ petId: 51, delta: 1 }], {}, token),
        ]
        for (const call of calls(reader)) {
          const res = await call()
          assertError(res, 403, 'insufficient_scope')
          assert.match(res.body.message, /inventory:write/)
          assert.equal(res.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="inventory:write"')
        }
        assert.deepEqual(await snapshot([51]), before)
        for (const call of calls(writer)) {
          const res = await call()
          assert.equal(res.status, 200, res.text)
        }
        assert.equal(await stock(51), 103)
      })
    })

    test('When a batch is applied while the change stream is open, then each of its events carries the batchId, byte for byte the feed’s rows; an adjustment’s carries null', async () => {
      await suite.server.app.listen({ port: 0, host: '127.0.0.1' })
      const baseUrl = `http://127.0.0.1:${(suite.server.app.server.address() as AddressInfo).port}`
      const client = await openStream(baseUrl, { token: suite.token })
      try {
        assert.equal(client.status, 200)
        await until(() => client.blocks.length > 0, 5000, 'the preamble')
        const first = client.blocks[0]
        assert.ok(first?.kind === 'retry')
        const start = Number(first.id)
        assert.equal((await adjust(1, { delta: 1, reason: 'return' })).status, 200)
        const res = await batch([
          { petId: 1, delta: 1, reason: 'arrival' },
          { petId: BIG, delta: 2, note: 'big' },
          { petId: 1, quantity: 30, reason: 'count' },
        ])
        assert.equal(res.status, 200, res.text)
        const feed = await feedTexts(baseUrl, suite.token, start)
        assert.equal(feed.length, 4)
        await until(() => client.events.length >= 4, 5000, '4 events')
        assert.deepEqual(
          client.events.map((e) => e.data),
          feed,
        )
        const rows = client.events.map((e) => {
          const row = parseExact(e.data)
          assertChangeShape(row)
          return row
        })
        assert.deepEqual(
          rows.map((r) => [r.petId, r.batchId]),
          [
            [1n, null],
            [1n, res.body.batchId],
            [BIG, res.body.batchId],
            [1n, res.body.batchId],
          ],
        )
        assert.ok(client.events[2]!.data.includes('"petId":9007199254740993,'))
        assert.ok(client.events[1]!.data.includes(`"orderId":null,"batchId":"${res.body.batchId}"`), client.events[1]!.data)
        assert.deepEqual(
          client.events.slice(1).map((e) => Number(e.id)),
          [rows[1]!.seq, rows[1]!.seq + 1, rows[1]!.seq + 2],
        )
      } finally {
        await client.close()
      }
    })

    test('When the suite is done, then petstore check finds every invariant holding, batches contiguous included', async () => {
      const result = await suite.server.cli(['check'])
      assert.equal(result.code, 0, `${result.stdout}${result.stderr}`)
      assert.match(result.stdout + result.stderr, /every invariant holds/)
    })
  })
}
