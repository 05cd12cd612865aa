// Issue 47 through petstore-client: `reservations.*` against a live service on each backend. Exact
// int64 ids and petIds both ways, typed holds; each refusal a PetstoreError with its code that changes
// nothing; a hold whose answer is lost is sent again under its generated Idempotency-Key (seen at a
// proxy of the test's own) and holds once; release and confirm are not repeated after a lost answer.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createClient, PetstoreError, PetstoreUnknownOutcomeError, type Reservation } from 'petstore-client'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { FaultProxy } from './fault-proxy.js'

const MAX = 9223372036854775807n
const BIG = 2n ** 53n + 1n
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

for (const backend of BACKENDS) {
  describe(`petstore-client holds (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: BIG, quantity: 5, status: 'available' },
        { petId: MAX, quantity: 3, status: 'sold' },
      ],
    })
    let proxy: FaultProxy
    before(async () => {
      proxy = await new FaultProxy(suite.server.baseUrl).start()
    })
    after(async () => proxy?.stop())
    const api = () => createClient({ baseUrl: `${proxy.baseUrl}/v1`, token: suite.token })
    const direct = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const quantity = async (petId: bigint) => (await direct().inventory.get(petId)).item.quantity
    const rejection = async (call: Promise<unknown>): Promise<unknown> =>
      call.then(
        (value) => assert.fail(`resolved with ${JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`),
        (e: unknown) => e,
      )
    const refused = async (call: Promise<unknown>, status: number, code: string) => {
      const error = await rejection(call)
      assert.ok(error instanceof PetstoreError, String(error))
      assert.deepEqual([error.status, error.code], [status, code], error.message)
      return error
    }

    test('When a hold names pets by bigint, then it holds exactly those, and every method answers typed holds with exact ids', async () => {
      const client = api()
      const r: Reservation = await client.reservations.hold({
        lines: [
          { petId: BIG, quantity: 2 },
          { petId: MAX, quantity: 3 },
        ],
        expiresInSeconds: 300,
        reference: 'cart-1',
      })
      assert.equal(typeof r.id, 'bigint')
      assert.deepEqual(r.lines, [
        { petId: BIG, quantity: 2, orderId: null },
        { petId: MAX, quantity: 3, orderId: null },
      ])
      assert.deepEqual([await quantity(BIG), await quantity(MAX)], [3, 0])
      assert.deepEqual(await client.reservations.get(r.id), r)
      const extended = await client.reservations.extend(r.id, 3600)
      assert.ok(Date.parse(extended.expiresAt) - Date.now() > 3_590_000)
      const confirmed = await client.reservations.confirm(r.id)
      assert.equal(confirmed.status, 'confirmed')
      for (const line of confirmed.lines) {
        assert.equal(typeof line.orderId, 'bigint')
        const order = await client.orders.get(line.orderId!)
        assert.deepEqual([order.petId, order.quantity, order.status], [line.petId, line.quantity, 'placed'])
      }
      const listed = []
      for await (const hold of client.reservations.list({ status: 'confirmed', pageSize: 1 })) listed.push(hold)
      assert.deepEqual(listed, [confirmed])
      const page = await client.reservations.page({ status: 'active' })
      assert.deepEqual(page, { items: [], next: undefined })
    })

    test('When a hold cannot be placed or an action comes too late, then a PetstoreError with its code, and nothing changed', async () => {
      const client = api()
      await refused(client.reservations.hold({ lines: [{ petId: 1n, quantity: 11 }] }), 409, 'insufficient_stock')
      await refused(client.reservations.hold({ lines: [{ petId: 424242n, quantity: 1 }] }), 404, 'not_found')
      await refused(client.reservations.hold({ lines: [] }), 400, 'invalid_request')
      assert.equal(await quantity(1n), 10)
      const r = await client.reservations.hold({ lines: [{ petId: 1n, quantity: 4 }] })
      assert.equal((await client.reservations.release(r.id)).status, 'released')
      await refused(client.reservations.release(r.id), 409, 'reservation_released')
      await refused(client.reservations.confirm(r.id), 409, 'reservation_released')
      await refused(client.reservations.extend(r.id, 60), 409, 'reservation_released')
      await refused(client.reservations.get(424242n), 404, 'not_found')
      assert.equal(await quantity(1n), 10)
    })

    test('When the answer to a hold is lost, then the client sends it again under the same generated key and it holds once', async () => {
      const client = api()
      const seen = proxy.seen.length
      proxy.inject('POST', '/v1/store/reservations', { kind: 'drop-answer' })
      const r = await client.reservations.hold({ lines: [{ petId: 1n, quantity: 3 }] })
      const keys = proxy.seen
        .slice(seen)
        .filter((s) => s.method === 'POST' && s.path === '/v1/store/reservations')
        .map((s) => s.headers['idempotency-key'])
      assert.equal(keys.length, 2, 'sent twice')
      assert.ok(typeof keys[0] === 'string' && UUID.test(keys[0]), String(keys[0]))
      assert.equal(keys[1], keys[0])
      assert.equal(await quantity(1n), 7, 'held once')
      assert.equal((await direct().reservations.page({ status: 'active' })).items.length, 1)
      // A release whose answer is lost is not sent again: the caller learns the outcome is unknown.
      proxy.inject('POST', `/v1/store/reservations/${r.id}/release`, { kind: 'drop-answer' })
      assert.ok((await rejection(client.reservations.release(r.id))) instanceof PetstoreUnknownOutcomeError)
      assert.equal((await client.reservations.get(r.id)).status, 'released')
      assert.equal(await quantity(1n), 10)
    })
  })
}
