// Issue 47: holds over HTTP. POST /v1/store/reservations (all lines or none, the units out of the
// inventory at once, 201 with Location), GET one and the paged list, extend, release and confirm
// (orders, no new stock check, at most once), the 409s of a hold that ended, Idempotency-Key, scopes,
// and bad input that holds nothing.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey } from '../support/helpers.js'
import { assertChangeShape, assertError, changesSince, importInventory, lastSeq, nextLink, quantityOf } from '../support/ledger-client.js'

const BIG = 9007199254740993n
const JSON_HEADERS = { 'content-type': 'application/json' }
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A body as raw JSON, petIds (bigint) written digit for digit. */
const raw = (body: unknown) => JSON.stringify(body, (_, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1')

for (const backend of BACKENDS) {
  describe(`holds (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let readOnly: string
    let inventoryOnly: string
    before(async () => {
      readOnly = await createKey(suite.server, 'orders-reader', ['orders:read'])
      inventoryOnly = await createKey(suite.server, 'stock-clerk', ['inventory:read', 'inventory:write'])
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 5 },
        { petId: BIG, quantity: 3 },
        ...Array.from({ length: 101 }, (_, i) => ({ petId: 100 + i, quantity: 1 })),
        { petId: 300, quantity: 10 },
        { petId: 301, quantity: 10 },
      ])
    })

    const hold = (body: unknown, headers: Record<string, string> = {}, token = suite.token) =>
      suite.server.request('POST', '/v1/store/reservations', { token, rawBody: raw(body), headers: { ...JSON_HEADERS, ...headers } })
    const act = (id: number | string, action: string, body?: unknown, token = suite.token) =>
      suite.server.request('POST', `/v1/store/reservations/${id}/${action}`, body === undefined ? { token } : { token, body })
    const get = (id: number | string, token = suite.token) => suite.server.request('GET', `/v1/store/reservations/${id}`, { token })
    const stock = (petId: bigint | number) => quantityOf(suite.server, suite.token, petId)
    const stocks = (...petIds: (bigint | number)[]) => Promise.all(petIds.map(stock))

    test('When a hold is placed, then 201 with the hold and its Location, its units leave the inventory at once, a reservation row a line', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const from = Date.now()
      const res = await hold({
        lines: [
          { petId: 1, quantity: 4 },
          { petId: BIG, quantity: 3 },
        ],
        expiresInSeconds: 600,
        reference: 'cart-8f14e45f',
      })
      assert.equal(res.status, 201, res.text)
      const r = res.body
      assert.equal(res.headers.get('location'), `/v1/store/reservations/${r.id}`)
      assert.deepEqual(Object.keys(r).sort(), ['createdAt', 'expiresAt', 'id', 'lines', 'reference', 'status', 'updatedAt'])
      assert.deepEqual(
        [r.status, r.reference, r.lines],
        [
          'active',
          'cart-8f14e45f',
          [
            { petId: 1n, quantity: 4, orderId: null },
            { petId: BIG, quantity: 3, orderId: null },
          ],
        ],
      )
      assert.match(r.createdAt, TIME)
      assert.equal(r.updatedAt, r.createdAt)
      const lifetime = Date.parse(r.expiresAt) - Date.parse(r.createdAt)
      assert.ok(lifetime >= 599_000 && lifetime <= 601_000, `expires ${lifetime} ms after it was placed`)
      assert.ok(Date.parse(r.createdAt) >= from - 1000)
      assert.deepEqual(await stocks(1, BIG), [6, 0])
      const read = await get(r.id)
      assert.equal(read.status, 200)
      assert.equal(read.text, res.text, 'GET shows the hold as placed')
      const rows = await changesSince(suite.server, suite.token, after)
      for (const row of rows) assertChangeShape(row)
      assert.deepEqual(
        rows.map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.reservationId]),
        [
          [1n, 10, 6, 'reservation', r.id],
          [BIG, 3, 0, 'reservation', r.id],
        ],
      )
      // Released, for the tests after this one.
      assert.equal((await act(r.id, 'release')).status, 200)
    })

    test('When lines ask for more than their entries hold, then 409 insufficient_stock names each short line and nothing is held', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const res = await hold({
        lines: [
          { petId: 1, quantity: 10 },
          { petId: 2, quantity: 6 },
          { petId: BIG, quantity: 4 },
        ],
      })
      assertError(res, 409, 'insufficient_stock')
      assert.equal(
        res.body.message,
        `Not enough stock for lines[1] (pet 2: 5 in stock, 6 asked), lines[2] (pet ${BIG}: 3 in stock, 4 asked); nothing was held`,
      )
      const unknown = await hold({
        lines: [
          { petId: 1, quantity: 1 },
          { petId: 999, quantity: 1 },
        ],
      })
      assertError(unknown, 404, 'not_found')
      assert.equal(unknown.body.message, 'lines[1]: no inventory entry for pet 999')
      assert.deepEqual(await stocks(1, 2, BIG), [10, 5, 3])
      assert.equal(await lastSeq(suite.server, suite.token), after)
    })

    test('When the input is bad, then 400 naming the field (413 past the size limit), and nothing is held', async () => {
      const after = await lastSeq(suite.server, suite.token)
      // A string is sent as it is (numbers a JavaScript value cannot write), anything else as JSON.
      const cases: [unknown, RegExp][] = [
        [{ lines: [] }, /body\.lines must NOT have fewer than 1 items/],
        [
          { lines: Array.from({ length: 101 }, (_, i) => ({ petId: 100 + i, quantity: 1 })) },
          /body\.lines must NOT have more than 100 items/,
        ],
        [{ lines: [{ petId: 1, quantity: 0 }] }, /body\.lines\[0\]\.quantity must be >= 1/],
        [
          {
            lines: [
              { petId: 1, quantity: 1 },
              { petId: 2, quantity: 1 },
              { petId: 1, quantity: 2 },
            ],
          },
          /body\.lines\[2\]\.petId: pet 1 is on lines\[0\] already/,
        ],
        [{ lines: [{ petId: 1, quantity: 1 }], expiresInSeconds: 9 }, /body\.expiresInSeconds must be >= 10/],
        [{ lines: [{ petId: 1, quantity: 1 }], expiresInSeconds: 14_401 }, /body\.expiresInSeconds must be <= 14400/],
        [{ lines: [{ petId: 1, quantity: 1 }], reference: 'x'.repeat(256) }, /body\.reference must NOT have more than 255 characters/],
        [{ lines: [{ petId: 1, quantity: 1 }], cart: 'c' }, /body has unknown field "cart"/],
        [{ lines: [{ petId: 1, quantity: 1, note: 'n' }] }, /body\.lines\[0\] has unknown field "note"/],
        ['{"lines":[{"petId":1.0,"quantity":1}]}', /body\.lines\[0\]\.petId must be a decimal int64 integer/],
        ['{"lines":[{"petId":-0,"quantity":1}]}', /body\.lines\[0\]\.petId must be a decimal int64 integer/],
        [{ lines: [{ quantity: 1 }] }, /body\.lines\[0\] is missing required field 'petId'/],
      ]
      for (const [body, message] of cases) {
        const res = await (typeof body === 'string'
          ? suite.server.request('POST', '/v1/store/reservations', { token: suite.token, rawBody: body, headers: JSON_HEADERS })
          : hold(body))
        assertError(res, 400, 'invalid_request', JSON.stringify(body).slice(0, 80))
        assert.match(res.body.message, message)
      }
      const huge = await hold({ lines: [{ petId: 1, quantity: 1 }], reference: 'x'.repeat(70_000) })
      assertError(huge, 413, 'payload_too_large')
      assert.deepEqual(await stocks(1, 2, 100), [10, 5, 1])
      assert.equal(await lastSeq(suite.server, suite.token), after)
      assert.equal((await suite.server.request('GET', '/v1/store/reservations?status=active', { token: suite.token })).text, '[]')
    })

    test('When a hold is confirmed, then each line is a placed order (no units move), the lines name them, and a second confirm is 409', async () => {
      const placed = await hold({
        lines: [
          { petId: 300, quantity: 2 },
          { petId: 301, quantity: 3 },
        ],
      })
      assert.equal(placed.status, 201, placed.text)
      const after = await lastSeq(suite.server, suite.token)
      const res = await act(placed.body.id, 'confirm')
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.status, 'confirmed')
      const orderIds = res.body.lines.map((l: { orderId: number }) => l.orderId)
      for (const [i, orderId] of orderIds.entries()) {
        const order = await suite.server.request('GET', `/v1/store/orders/${orderId}`, { token: suite.token })
        assert.equal(order.status, 200, order.text)
        assert.deepEqual([order.body.petId, order.body.quantity, order.body.status], [[300n, 301n][i], [2, 3][i], 'placed'])
      }
      assert.deepEqual(await stocks(300, 301), [8, 7])
      const rows = await changesSince(suite.server, suite.token, after)
      assert.deepEqual(
        rows.map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.orderId, c.reservationId]),
        [
          [300n, 8, 8, 'order', orderIds[0], placed.body.id],
          [301n, 7, 7, 'order', orderIds[1], placed.body.id],
        ],
      )
      for (const action of ['confirm', 'release']) assertError(await act(placed.body.id, action), 409, 'reservation_confirmed', action)
      assertError(await act(placed.body.id, 'extend', { expiresInSeconds: 60 }), 409, 'reservation_confirmed')
      assert.equal((await get(placed.body.id)).text, res.text)
    })

    test('When a hold is released, then its units come back now; a second release, a confirm or an extend is 409 reservation_released', async () => {
      const placed = await hold({ lines: [{ petId: 2, quantity: 5 }] })
      assert.equal(await stock(2), 0)
      const res = await act(placed.body.id, 'release')
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.status, 'released')
      assert.equal(await stock(2), 5)
      const after = await lastSeq(suite.server, suite.token)
      for (const action of ['release', 'confirm']) assertError(await act(placed.body.id, action), 409, 'reservation_released', action)
      assertError(await act(placed.body.id, 'extend', { expiresInSeconds: 60 }), 409, 'reservation_released')
      assert.equal(await lastSeq(suite.server, suite.token), after)
    })

    test('When a hold is extended, then its expiry is counted anew from now; out of bounds is 400 and changes nothing', async () => {
      const placed = await hold({ lines: [{ petId: 1, quantity: 1 }], expiresInSeconds: 30 })
      const res = await act(placed.body.id, 'extend', { expiresInSeconds: 3600 })
      assert.equal(res.status, 200, res.text)
      const lifetime = Date.parse(res.body.expiresAt) - Date.now()
      assert.ok(lifetime > 3_590_000 && lifetime <= 3_600_000, `${lifetime} ms left`)
      assert.equal(res.body.status, 'active')
      for (const body of [{ expiresInSeconds: 9 }, { expiresInSeconds: 14_401 }, {}, { expiresInSeconds: 60, x: 1 }])
        assertError(await act(placed.body.id, 'extend', body), 400, 'invalid_request', JSON.stringify(body))
      assert.equal((await get(placed.body.id)).text, res.text)
      assert.equal((await act(placed.body.id, 'release')).status, 200)
    })

    test('When a hold or an action names no hold, then 404; a non-canonical id is 400', async () => {
      assertError(await get(987654), 404, 'not_found')
      for (const action of ['release', 'confirm']) assertError(await act(987654, action), 404, 'not_found', action)
      assertError(await act(987654, 'extend', { expiresInSeconds: 60 }), 404, 'not_found')
      assertError(await get('01'), 400, 'invalid_request')
    })

    test('When a hold is retried with its Idempotency-Key, then the first answer comes again with Idempotent-Replayed and nothing more is held', async () => {
      const body = { lines: [{ petId: 1, quantity: 2 }], reference: 'cart-retry' }
      const first = await hold(body, { 'idempotency-key': 'hold-retry-1' })
      assert.equal(first.status, 201, first.text)
      assert.equal(await stock(1), 8)
      const again = await hold(body, { 'idempotency-key': 'hold-retry-1' })
      assert.equal(again.status, 201)
      assert.equal(again.text, first.text)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal(again.headers.get('location'), first.headers.get('location'))
      assert.equal(await stock(1), 8)
      assertError(await hold({ ...body, reference: 'another' }, { 'idempotency-key': 'hold-retry-1' }), 409, 'idempotency_key_reused')
      const short = { lines: [{ petId: 1, quantity: 99 }] }
      const refused = await hold(short, { 'idempotency-key': 'hold-retry-2' })
      assertError(refused, 409, 'insufficient_stock')
      const replayed = await hold(short, { 'idempotency-key': 'hold-retry-2' })
      assert.equal(replayed.text, refused.text)
      assert.equal(replayed.headers.get('idempotent-replayed'), 'true')
      assert.equal((await act(first.body.id, 'release')).status, 200)
    })

    test('When keys of other scopes try, then orders:read may read holds but not place or end one, and inventory keys may do neither', async () => {
      const placed = await hold({ lines: [{ petId: 1, quantity: 1 }] })
      assert.equal((await get(placed.body.id, readOnly)).status, 200)
      assertError(await hold({ lines: [{ petId: 1, quantity: 1 }] }, {}, readOnly), 403, 'insufficient_scope')
      for (const action of ['release', 'confirm'])
        assertError(await act(placed.body.id, action, undefined, readOnly), 403, 'insufficient_scope')
      assertError(await get(placed.body.id, inventoryOnly), 403, 'insufficient_scope')
      assertError(await hold({ lines: [{ petId: 1, quantity: 1 }] }, {}, inventoryOnly), 403, 'insufficient_scope')
      assert.equal(await stock(1), 9)
      assert.equal((await act(placed.body.id, 'release')).status, 200)
    })

    test('When holds are listed, then by id a page at a time with a next link, filtered by status', async () => {
      const all = await suite.server.request('GET', '/v1/store/reservations?limit=1000', { token: suite.token })
      assert.equal(all.status, 200)
      const ids = all.body.map((r: { id: number }) => r.id)
      assert.deepEqual(
        ids,
        [...ids].sort((a: number, b: number) => a - b),
      )
      assert.ok(ids.length >= 6, `${ids.length} holds`)
      const page = await suite.server.request('GET', '/v1/store/reservations?limit=2', { token: suite.token })
      assert.deepEqual(
        page.body.map((r: { id: number }) => r.id),
        ids.slice(0, 2),
      )
      assert.deepEqual(nextLink(page, '/v1/store/reservations'), { after: String(ids[1]), limit: '2' })
      const released = await suite.server.request('GET', '/v1/store/reservations?status=released&limit=1000', { token: suite.token })
      assert.ok(released.body.length >= 4)
      assert.ok(released.body.every((r: { status: string }) => r.status === 'released'))
      assertError(await suite.server.request('GET', '/v1/store/reservations?status=gone', { token: suite.token }), 400, 'invalid_request')
    })
  })
}
