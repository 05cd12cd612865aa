import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey } from '../support/helpers.js'
import {
  assertError,
  assertOrderShape,
  assertTimeWithin,
  changesSince,
  clockPast,
  importInventory,
  keyIdOf,
  lastSeq,
  placeOrder,
  quantityOf,
  readAllOrders,
  setOrderStatus,
  type Order,
} from '../support/ledger-client.js'

const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const ABOVE_DOUBLE = 9007199254740993n
const STATUSES = ['placed', 'approved', 'delivered', 'cancelled'] as const
const ALLOWED = new Set(['placed>approved', 'approved>delivered', 'placed>cancelled', 'approved>cancelled'])

for (const backend of BACKENDS) {
  describe(`store orders (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let keyId: number
    let otherToken: string
    let otherKeyId: number
    before(async () => {
      keyId = await keyIdOf(suite.server, 'suite')
      otherToken = await createKey(suite.server, 'other')
      otherKeyId = await keyIdOf(suite.server, 'other')
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 5 },
        { petId: 3, quantity: 0, status: 'sold' },
        { petId: ABOVE_DOUBLE, quantity: 3 },
        { petId: INT64_MIN, quantity: 4 },
        { petId: 4, quantity: 2 },
        { petId: 5, quantity: 1000 },
        ...[10, 11, 12, 13, 14, 15, 16].map((petId) => ({ petId, quantity: 20 })),
        { petId: 20, quantity: 1000 },
      ])
    })
    const place = (body: unknown, headers: Record<string, string> = {}, token = suite.token) =>
      placeOrder(suite.server, token, body, headers)
    const placeRaw = (rawBody: string, headers: Record<string, string> = {}) =>
      suite.server.request('POST', '/v1/store/orders', {
        token: suite.token,
        rawBody,
        headers: { 'content-type': 'application/json', ...headers },
      })
    const stock = (petId: bigint | number) => quantityOf(suite.server, suite.token, petId)
    const seq = () => lastSeq(suite.server, suite.token)
    const getOrder = (id: number | string, token = suite.token) => suite.server.request('GET', `/v1/store/orders/${id}`, { token })
    /** Places an order that must succeed, and returns it. */
    const placed = async (petId: number | bigint, quantity: number): Promise<Order> => {
      const res = await placeRaw(`{"petId":${petId},"quantity":${quantity}}`)
      assert.equal(res.status, 201, res.text)
      return res.body
    }
    /** Everything a refused request must leave as it was. */
    const snapshot = async (petIds: (number | bigint)[]) => ({
      stock: await Promise.all(petIds.map(stock)),
      seq: await seq(),
      orders: await readAllOrders(suite.server, suite.token),
    })

    test('When an order is placed, then 201 with the Order and its Location, the stock drops, and one ledger row records it', async () => {
      const after = await seq()
      const started = Date.now()
      const res = await place({ petId: 1, quantity: 3 })
      const ended = Date.now()
      assert.equal(res.status, 201, res.text)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assertOrderShape(res.body)
      const order = res.body
      assert.deepEqual(order, {
        id: order.id,
        petId: 1n,
        quantity: 3,
        status: 'placed',
        placedAt: order.placedAt,
        updatedAt: order.updatedAt,
      })
      assertTimeWithin(order.placedAt, started, ended, 'placedAt')
      assertTimeWithin(order.updatedAt, started, ended, 'updatedAt')
      assert.ok(order.updatedAt >= order.placedAt)
      assert.equal(res.headers.get('location'), `/v1/store/orders/${order.id}`)
      assert.ok(res.text.includes(`"id":${order.id},`), 'the id is a JSON number')
      assert.equal(await stock(1), 7)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 1)
      assert.deepEqual(rows[0], {
        seq: rows[0]!.seq,
        petId: 1n,
        previousQuantity: 10,
        quantity: 7,
        reason: 'order',
        orderId: order.id,
        batchId: null,
        keyId,
        requestId: res.headers.get('x-request-id'),
        note: null,
        at: rows[0]!.at,
      })
      assertTimeWithin(rows[0]!.at, started, ended, 'at')
      const fetched = await getOrder(order.id)
      assert.equal(fetched.status, 200)
      assert.deepEqual(fetched.body, order)
      assert.equal(fetched.text, res.text, 'the same representation')
    })

    test('When orders are placed for extreme petIds, then the petId round-trips digit for digit', async () => {
      for (const [petId, left] of [
        [ABOVE_DOUBLE, 2],
        [INT64_MIN, 3],
      ] as const) {
        const res = await placeRaw(`{"petId":${petId},"quantity":1}`)
        assert.equal(res.status, 201, res.text)
        assert.equal(res.body.petId, petId)
        assert.ok(res.text.includes(`"petId":${petId},`), res.text)
        assert.equal((await getOrder(res.body.id)).body.petId, petId)
        assert.equal(await stock(petId), left)
      }
      assert.equal(await stock(ABOVE_DOUBLE - 1n), undefined)
    })

    test('When an order takes the whole stock, then 201 and the stock is 0; one more unit is 409 insufficient_stock and nothing changes', async () => {
      const order = await placed(4, 2)
      assert.equal(order.quantity, 2)
      assert.equal(await stock(4), 0)
      const before = await snapshot([4])
      assertError(await place({ petId: 4, quantity: 1 }), 409, 'insufficient_stock')
      assert.deepEqual(await snapshot([4]), before)
    })

    test('When the quantity exceeds the stock, then 409 insufficient_stock, no order, no ledger row, the stock untouched', async () => {
      const before = await snapshot([2, 3])
      assertError(await place({ petId: 2, quantity: 6 }), 409, 'insufficient_stock')
      assertError(await place({ petId: 2, quantity: 2147483647 }), 409, 'insufficient_stock')
      assertError(await place({ petId: 3, quantity: 1 }), 409, 'insufficient_stock')
      assert.deepEqual(await snapshot([2, 3]), before)
    })

    test('When the pet has no inventory entry, then 404 not_found and nothing changes', async () => {
      const before = await snapshot([1])
      for (const petId of ['4242', String(INT64_MAX), String(ABOVE_DOUBLE - 1n)]) {
        assertError(await placeRaw(`{"petId":${petId},"quantity":1}`), 404, 'not_found', petId)
      }
      assert.deepEqual(await snapshot([1]), before)
    })

    const badBodies: [string, string, string][] = [
      ['quantity 0', '{"petId":2,"quantity":0}', 'quantity'],
      ['a negative quantity', '{"petId":2,"quantity":-1}', 'quantity'],
      ['no quantity', '{"petId":2}', 'quantity'],
      ['a fractional quantity', '{"petId":2,"quantity":1.5}', 'quantity'],
      ['a string quantity', '{"petId":2,"quantity":"1"}', 'quantity'],
      ['a null quantity', '{"petId":2,"quantity":null}', 'quantity'],
      ['a quantity above int32', '{"petId":2,"quantity":2147483648}', 'quantity'],
      ['no petId', '{"quantity":1}', 'petId'],
      ['a non-numeric petId', '{"petId":"abc","quantity":1}', 'petId'],
      ['a fractional petId', '{"petId":1.5,"quantity":1}', 'petId'],
      ['a null petId', '{"petId":null,"quantity":1}', 'petId'],
      ['a boolean petId', '{"petId":true,"quantity":1}', 'petId'],
      ['a petId above int64', '{"petId":9223372036854775808,"quantity":1}', 'petId'],
      ['a petId below int64', '{"petId":-9223372036854775809,"quantity":1}', 'petId'],
      ['an extra field', '{"petId":2,"quantity":1,"status":"placed"}', 'status'],
      ['an id', '{"id":1,"petId":2,"quantity":1}', 'id'],
      ['an empty object', '{}', ''],
      ['an array', '[{"petId":2,"quantity":1}]', ''],
      ['null', 'null', ''],
      ['malformed JSON', '{"petId":2,', ''],
    ]
    for (const [label, raw, mentions] of badBodies) {
      test(`When the order body has ${label}, then 400 invalid_request and nothing changes`, async () => {
        const before = await snapshot([2])
        const res = await placeRaw(raw)
        assertError(res, 400, 'invalid_request', label)
        assert.ok(res.body.message.includes(mentions), res.body.message)
        assert.deepEqual(await snapshot([2]), before)
      })
    }

    test('When an order is sent without a valid key, then 401 and nothing changes', async () => {
      const before = await snapshot([2])
      for (const headers of [{}, { authorization: 'Bearer psk_nope' }] as Record<string, string>[]) {
        const res = await suite.server.request('POST', '/v1/store/orders', { body: { petId: 2, quantity: 1 }, headers })
        assertError(res, 401, 'unauthorized')
      }
      for (const [method, path] of [
        ['GET', '/v1/store/orders'],
        ['GET', '/v1/store/orders/1'],
        ['PATCH', '/v1/store/orders/1'],
      ] as const) {
        assertError(
          await suite.server.request(method, path, method === 'PATCH' ? { body: { status: 'cancelled' } } : {}),
          401,
          'unauthorized',
          path,
        )
      }
      assert.deepEqual(await snapshot([2]), before)
    })

    test('When the OpenAPI document is read, then placing an order is marked experimental', async () => {
      const doc = JSON.parse((await suite.server.request('GET', '/v1/openapi.json')).text)
      assert.equal(doc.paths['/store/orders'].post['x-stability'], 'experimental')
    })

    describe('Idempotency-Key', () => {
      test('When a placement is replayed with its key, then the same 201, body and Location come back marked replayed, and nothing new is placed', async () => {
        const headers = { 'idempotency-key': 'order-10-a' }
        const first = await place({ petId: 10, quantity: 2 }, headers)
        assert.equal(first.status, 201, first.text)
        assert.equal(first.headers.get('idempotent-replayed'), null, 'the original is not a replay')
        const before = await snapshot([10])
        assert.equal(before.stock[0], 18)
        for (const body of [JSON.stringify({ petId: 10, quantity: 2 }), '{ "quantity": 2, "petId": 10 }']) {
          const again = await placeRaw(body, headers)
          assert.equal(again.status, 201)
          assert.equal(again.text, first.text)
          assert.equal(again.headers.get('location'), first.headers.get('location'))
          assert.equal(again.headers.get('idempotent-replayed'), 'true')
        }
        assert.deepEqual(await snapshot([10]), before, 'the replay placed nothing and wrote no ledger row')
      })

      test('When another API key sends the same Idempotency-Key, then it is a separate placement', async () => {
        const headers = { 'idempotency-key': 'shared-key-name' }
        const mine = await place({ petId: 11, quantity: 1 }, headers)
        assert.equal(mine.status, 201)
        const theirs = await place({ petId: 11, quantity: 1 }, headers, otherToken)
        assert.equal(theirs.status, 201, theirs.text)
        assert.equal(theirs.headers.get('idempotent-replayed'), null)
        assert.notEqual(theirs.body.id, mine.body.id)
        assert.equal(await stock(11), 18)
        const replayMine = await place({ petId: 11, quantity: 1 }, headers)
        assert.equal(replayMine.text, mine.text)
        assert.equal(replayMine.headers.get('idempotent-replayed'), 'true')
        const replayTheirs = await place({ petId: 11, quantity: 1 }, headers, otherToken)
        assert.equal(replayTheirs.text, theirs.text)
        assert.equal(replayTheirs.headers.get('idempotent-replayed'), 'true')
        assert.equal(await stock(11), 18)
        // A different body under the other key's use of the name is still refused for that key only.
        assertError(await place({ petId: 11, quantity: 2 }, headers, otherToken), 409, 'idempotency_key_reused')
      })

      test('When the same key comes with another body, then 409 idempotency_key_reused and nothing changes', async () => {
        const headers = { 'idempotency-key': 'order-12' }
        const first = await place({ petId: 12, quantity: 2 }, headers)
        assert.equal(first.status, 201)
        const before = await snapshot([12, 13])
        for (const body of [
          { petId: 12, quantity: 3 },
          { petId: 13, quantity: 2 },
        ]) {
          const res = await place(body, headers)
          assertError(res, 409, 'idempotency_key_reused', JSON.stringify(body))
        }
        assert.deepEqual(await snapshot([12, 13]), before)
        // The original body still replays.
        assert.equal((await place({ petId: 12, quantity: 2 }, headers)).text, first.text)
      })

      test('When a 409 insufficient_stock is replayed after stock arrived, then it is still the original 409, and nothing is placed', async () => {
        const headers = { 'idempotency-key': 'too-many-for-14' }
        const first = await place({ petId: 14, quantity: 25 }, headers)
        assertError(first, 409, 'insufficient_stock')
        assert.equal((await suite.server.request('PATCH', '/v1/inventory/14', { token: suite.token, body: { quantity: 100 } })).status, 200)
        const before = await snapshot([14])
        const again = await place({ petId: 14, quantity: 25 }, headers)
        assert.equal(again.status, 409)
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
        assert.deepEqual(await snapshot([14]), before)
        // Without the key, the same body is placed now.
        assert.equal((await place({ petId: 14, quantity: 25 })).status, 201)
        assert.equal(await stock(14), 75)
      })

      test('When a 404 is replayed after the entry was created, then it is still the original 404', async () => {
        const headers = { 'idempotency-key': 'not-yet-4343' }
        const first = await place({ petId: 4343, quantity: 1 }, headers)
        assertError(first, 404, 'not_found')
        await importInventory(suite.server, [{ petId: 4343, quantity: 5 }])
        const before = await snapshot([4343])
        const again = await place({ petId: 4343, quantity: 1 }, headers)
        assert.equal(again.status, 404)
        assert.equal(again.text, first.text)
        assert.equal(again.headers.get('idempotent-replayed'), 'true')
        assert.deepEqual(await snapshot([4343]), before)
      })

      test('When keys are at the bounds of the allowed form, then they are accepted and replay', async () => {
        for (const key of ['x'.repeat(255), 'a !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~z', '1']) {
          const first = await place({ petId: 15, quantity: 1 }, { 'idempotency-key': key })
          assert.equal(first.status, 201, `${key.slice(0, 20)}: ${first.text}`)
          const again = await place({ petId: 15, quantity: 1 }, { 'idempotency-key': key })
          assert.equal(again.text, first.text)
          assert.equal(again.headers.get('idempotent-replayed'), 'true')
        }
        assert.equal(await stock(15), 17)
      })

      for (const [label, key] of [
        ['empty', ''],
        ['256 characters long', 'k'.repeat(256)],
        ['holding a tab', 'a\tb'],
        ['holding a control character', 'a\u0001b'],
        ['holding DEL', 'a\u007fb'],
        ['holding a non-ASCII character', 'caf\u00e9'],
      ] as const) {
        test(`When the Idempotency-Key is ${label}, then 400 and nothing is placed`, async () => {
          const before = await snapshot([16])
          // Injected: fetch() refuses to send some of these values at all.
          const res = await suite.server.request('POST', '/v1/store/orders', {
            token: suite.token,
            body: { petId: 16, quantity: 1 },
            headers: { 'idempotency-key': key },
          })
          assert.equal(res.status, 400, res.text)
          assert.equal((JSON.parse(res.text) as { code: string }).code, 'invalid_request', res.text)
          assert.deepEqual(await snapshot([16]), before)
        })
      }
    })

    describe('reading orders', () => {
      test('When an order is fetched, by its own key or another, then 200 with it; unknown is 404; malformed is 400', async () => {
        const order = await placed(5, 1)
        for (const token of [suite.token, otherToken]) {
          const res = await getOrder(order.id, token)
          assert.equal(res.status, 200)
          assert.deepEqual(res.body, order)
        }
        assertError(await getOrder(order.id + 100000), 404, 'not_found')
        assertError(await getOrder(String(INT64_MAX)), 404, 'not_found')
        for (const id of ['abc', '1.5', '1e3', '0x10', '9223372036854775808', '%20']) {
          const res = await getOrder(id)
          assertError(res, 400, 'invalid_request', id)
        }
        const list = await readAllOrders(suite.server, otherToken)
        assert.ok(
          list.some((o) => o.id === order.id),
          'every key sees every order',
        )
      })
    })

    describe('status transitions', () => {
      /** Places an order on pet 20 and walks it through `path` (allowed steps), returning it. */
      const orderIn = async (status: Order['status']): Promise<Order> => {
        const order = await placed(20, 1)
        const path = { placed: [], approved: ['approved'], delivered: ['approved', 'delivered'], cancelled: ['cancelled'] }[status]
        let current = order
        for (const step of path) {
          const res = await setOrderStatus(suite.server, suite.token, order.id, step)
          assert.equal(res.status, 200, res.text)
          current = res.body
        }
        return current
      }

      test('When an order goes placed → approved → delivered, then each step is 200 with updatedAt moved, and the stock and ledger are untouched', async () => {
        const order = await placed(1, 1)
        const stockBefore = await stock(1)
        const after = await seq()
        let previous = order
        for (const status of ['approved', 'delivered'] as const) {
          await clockPast(previous.updatedAt)
          const res = await setOrderStatus(suite.server, suite.token, order.id, status)
          assert.equal(res.status, 200, res.text)
          assertOrderShape(res.body)
          assert.deepEqual(res.body, { ...order, status, updatedAt: res.body.updatedAt })
          assert.ok(res.body.updatedAt > previous.updatedAt, `updatedAt ${res.body.updatedAt} after ${previous.updatedAt}`)
          assert.deepEqual((await getOrder(order.id)).body, res.body)
          previous = res.body
        }
        assert.equal(await stock(1), stockBefore)
        assert.deepEqual(await changesSince(suite.server, suite.token, after), [])
      })

      for (const path of [['cancelled'], ['approved', 'cancelled']] as const) {
        test(`When an order is cancelled from ${path.length === 1 ? 'placed' : 'approved'}, then its quantity returns to stock with a cancellation row`, async () => {
          const order = await placed(20, 7)
          for (const status of path.slice(0, -1))
            assert.equal((await setOrderStatus(suite.server, suite.token, order.id, status)).status, 200)
          // The stock moved since the order: the cancellation adds back to the current value.
          assert.equal(
            (await suite.server.request('PATCH', '/v1/inventory/20', { token: suite.token, body: { quantity: 500 } })).status,
            200,
          )
          const after = await seq()
          await clockPast(order.updatedAt)
          const res = await setOrderStatus(suite.server, otherToken, order.id, 'cancelled', { 'x-request-id': `cancel-${order.id}` })
          assert.equal(res.status, 200, res.text)
          assert.deepEqual(res.body, { ...order, status: 'cancelled', updatedAt: res.body.updatedAt })
          assert.ok(res.body.updatedAt > order.updatedAt)
          assert.equal(await stock(20), 507)
          const rows = await changesSince(suite.server, suite.token, after)
          assert.deepEqual(rows, [
            {
              seq: rows[0]?.seq,
              petId: 20n,
              previousQuantity: 500,
              quantity: 507,
              reason: 'cancellation',
              orderId: order.id,
              batchId: null,
              keyId: otherKeyId,
              requestId: `cancel-${order.id}`,
              note: null,
              at: rows[0]?.at,
            },
          ])
          assert.equal(
            (await suite.server.request('PATCH', '/v1/inventory/20', { token: suite.token, body: { quantity: 1000 } })).status,
            200,
          )
        })
      }

      for (const from of STATUSES) {
        for (const to of STATUSES) {
          if (ALLOWED.has(`${from}>${to}`)) continue
          test(`When an order goes ${from} → ${to}, then 409 invalid_transition and nothing changes`, async () => {
            const order = await orderIn(from)
            const before = await snapshot([20])
            const res = await setOrderStatus(suite.server, suite.token, order.id, to)
            assertError(res, 409, 'invalid_transition')
            assert.deepEqual((await getOrder(order.id)).body, order)
            assert.deepEqual(await snapshot([20]), before)
          })
        }
      }

      test('When a delivered order is cancelled, then 409 and no stock returns', async () => {
        const order = await placed(2, 1)
        const left = await stock(2)
        for (const status of ['approved', 'delivered'])
          assert.equal((await setOrderStatus(suite.server, suite.token, order.id, status)).status, 200)
        assertError(await setOrderStatus(suite.server, suite.token, order.id, 'cancelled'), 409, 'invalid_transition')
        assert.equal(await stock(2), left)
      })

      test('When a PATCH body or id is bad, then 400; an unknown order is 404; nothing changes', async () => {
        const order = await orderIn('placed')
        const before = await snapshot([20])
        for (const raw of [
          '{"status":"shipped"}',
          '{"status":"PLACED"}',
          '{}',
          '{"status":null}',
          '{"status":"approved","quantity":1}',
          '[]',
          '{"status":',
        ]) {
          const res = await suite.server.request('PATCH', `/v1/store/orders/${order.id}`, {
            token: suite.token,
            rawBody: raw,
            headers: { 'content-type': 'application/json' },
          })
          assertError(res, 400, 'invalid_request', raw)
        }
        for (const id of ['abc', '1.5', '9223372036854775808']) {
          assertError(await setOrderStatus(suite.server, suite.token, id, 'approved'), 400, 'invalid_request', id)
        }
        assertError(await setOrderStatus(suite.server, suite.token, order.id + 100000, 'approved'), 404, 'not_found')
        assert.deepEqual((await getOrder(order.id)).body, order)
        assert.deepEqual(await snapshot([20]), before)
      })
    })
  })

  describe(`listing orders (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let all: Order[]
    before(async () => {
      await importInventory(suite.server, [{ petId: 1, quantity: 1000 }])
      const ids: number[] = []
      for (let i = 0; i < 7; i++) {
        const res = await placeOrder(suite.server, suite.token, { petId: 1, quantity: i + 1 })
        assert.equal(res.status, 201, res.text)
        ids.push(res.body.id)
      }
      // #2 approved, #3 cancelled, #4 delivered; the rest placed.
      for (const [index, steps] of [
        [1, ['approved']],
        [2, ['cancelled']],
        [3, ['approved', 'delivered']],
      ] as const) {
        for (const status of steps) assert.equal((await setOrderStatus(suite.server, suite.token, ids[index]!, status)).status, 200)
      }
      all = (await suite.server.request('GET', '/v1/store/orders', { token: suite.token })).body
    })
    const list = (query: string) => suite.server.request('GET', `/v1/store/orders${query ? `?${query}` : ''}`, { token: suite.token })

    test('When orders are listed, then all come back sorted by id with their statuses, and no Link', async () => {
      const res = await list('')
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('link'), null)
      assert.equal(all.length, 7)
      all.forEach(assertOrderShape)
      assert.deepEqual(
        all.map((o) => o.id),
        [...all.map((o) => o.id)].sort((a, b) => a - b),
      )
      assert.deepEqual(
        all.map((o) => o.status),
        ['placed', 'approved', 'cancelled', 'delivered', 'placed', 'placed', 'placed'],
      )
      assert.deepEqual(
        all.map((o) => o.quantity),
        [1, 2, 3, 4, 5, 6, 7],
      )
    })

    test('When filtered by status, then only those orders come back, for each status', async () => {
      for (const status of STATUSES) {
        const res = await list(`status=${status}`)
        assert.equal(res.status, 200)
        assert.deepEqual(
          res.body,
          all.filter((o) => o.status === status),
          status,
        )
        assert.equal(res.headers.get('link'), null)
      }
    })

    test('When paged with limit and after, then Links have the exact form, visit every order once, and the last page has none', async () => {
      for (const limit of [1, 2, 3, 6, 7, 100]) {
        assert.deepEqual(await readAllOrders(suite.server, suite.token, { limit }), all, `limit ${limit}`)
      }
      const first = await list('limit=3')
      assert.deepEqual(first.body, all.slice(0, 3))
      assert.equal(first.headers.get('link'), `</v1/store/orders?after=${all[2]!.id}&limit=3>; rel="next"`)
      const second = await list(`after=${all[2]!.id}&limit=3`)
      assert.deepEqual(second.body, all.slice(3, 6))
      assert.equal(second.headers.get('link'), `</v1/store/orders?after=${all[5]!.id}&limit=3>; rel="next"`)
      const third = await list(`after=${all[5]!.id}&limit=3`)
      assert.deepEqual(third.body, all.slice(6))
      assert.equal(third.headers.get('link'), null)
      const exact = await list(`after=${all[0]!.id}&limit=6`)
      assert.deepEqual(exact.body, all.slice(1))
      assert.equal(exact.headers.get('link'), null, 'a page that holds exactly the last orders carries no Link')
      const placedOnly = all.filter((o) => o.status === 'placed')
      const filtered = await list('status=placed&limit=2')
      assert.deepEqual(filtered.body, placedOnly.slice(0, 2))
      assert.equal(filtered.headers.get('link'), `</v1/store/orders?after=${placedOnly[1]!.id}&limit=2&status=placed>; rel="next"`)
      const filteredLast = await list(`after=${placedOnly[1]!.id}&limit=2&status=placed`)
      assert.deepEqual(filteredLast.body, placedOnly.slice(2))
      assert.equal(filteredLast.headers.get('link'), null)
      assert.deepEqual(await readAllOrders(suite.server, suite.token, { status: 'placed', limit: 1 }), placedOnly)
      for (const after of [String(all.at(-1)!.id), String(INT64_MAX)]) {
        const end = await list(`after=${after}`)
        assert.equal(end.status, 200)
        assert.deepEqual(end.body, [])
        assert.equal(end.headers.get('link'), null)
      }
    })

    test('When more than 100 orders exist, then the default page is 100 with a Link to the rest', async () => {
      const results = await Promise.all(Array.from({ length: 101 }, () => placeOrder(suite.server, suite.token, { petId: 1, quantity: 1 })))
      assert.deepEqual(
        results.filter((r) => r.status !== 201).map((r) => r.text),
        [],
      )
      const everything = await readAllOrders(suite.server, suite.token)
      assert.equal(everything.length, 108)
      const res = await list('')
      assert.deepEqual(res.body, everything.slice(0, 100))
      assert.equal(res.headers.get('link'), `</v1/store/orders?after=${everything[99]!.id}&limit=100>; rel="next"`)
      const rest = await list(`after=${everything[99]!.id}&limit=100`)
      assert.deepEqual(rest.body, everything.slice(100))
      assert.equal(rest.headers.get('link'), null)
      assert.deepEqual((await list('limit=1000')).body, everything)
    })

    test('When after is negative, then 400 invalid_request naming its bound, as on the changes feed, and the orders are as they were', async () => {
      const before = await readAllOrders(suite.server, suite.token)
      for (const after of ['-1', '-9223372036854775808']) {
        const res = await list(`after=${after}`)
        assertError(res, 400, 'invalid_request', after)
        assert.equal(res.body.message, 'query parameter after must be a decimal int64 integer of at least 0, given once')
      }
      assert.deepEqual(await readAllOrders(suite.server, suite.token), before)
    })

    for (const query of [
      'status=bogus',
      'status=',
      'status=PLACED',
      'limit=0',
      'limit=1001',
      'limit=x',
      'limit=1.5',
      'after=x',
      'after=1.5',
      'after=9223372036854775808',
      'foo=1',
      'petId=1',
    ]) {
      test(`When the list query is '${query}', then 400 invalid_request`, async () => {
        assertError(await list(query), 400, 'invalid_request', query)
      })
    }
  })
}
