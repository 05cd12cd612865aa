// Issue 50 through petstore-client: locations.* and inventory.locations/transfer against a live
// service on each backend. Location ids are bigints as every id of the client; a transfer answers both
// locations, is sent with a generated Idempotency-Key and repeated under it when the answer is lost
// (it moves once); refusals are PetstoreErrors with their codes that change nothing.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createClient, PetstoreError, type StockLevel } from 'petstore-client'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { FaultProxy } from './fault-proxy.js'

const BIG = 2n ** 53n + 1n
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

for (const backend of BACKENDS) {
  describe(`petstore-client locations (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 20, status: 'available' },
        { petId: BIG, quantity: 9, status: 'pending' },
        ...Array.from({ length: 5 }, (_, i) => ({ petId: 100 + i, quantity: 3, status: 'available' })),
      ],
    })
    let proxy: FaultProxy
    before(async () => {
      proxy = await new FaultProxy(suite.server.baseUrl).start()
    })
    after(async () => proxy?.stop())
    const api = () => createClient({ baseUrl: `${proxy.baseUrl}/v1`, token: suite.token })
    const rejection = async (call: Promise<unknown>): Promise<PetstoreError> => {
      const error = await call.then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      )
      assert.ok(error instanceof PetstoreError, String(error))
      return error
    }
    const levels = async (petId: bigint) =>
      Object.fromEntries((await api().inventory.locations(petId)).map((l: StockLevel) => [String(l.locationId), l.quantity]))

    test('When locations are made and stock moved through the client, then ids are bigints, both ends are answered, and a lost answer moves once', async () => {
      const shop = await api().locations.create({ name: 'Client Shop' })
      assert.equal(typeof shop.id, 'bigint')
      assert.equal(shop.active, true)
      assert.deepEqual(
        (await api().locations.list()).map((l) => [l.id, l.name]),
        [
          [1n, 'Default'],
          [shop.id, 'Client Shop'],
        ],
      )
      assert.deepEqual(await api().locations.get(shop.id), shop)
      const moved = await api().inventory.transfer(BIG, { fromLocationId: 1n, toLocationId: shop.id, quantity: 4 })
      assert.equal(moved.petId, BIG)
      assert.deepEqual([moved.locationId, moved.quantity, moved.from], [shop.id, 4, { locationId: 1n, quantity: 5 }])
      assert.match(moved.transferId, UUID)
      // The answer lost once: the client sends again under the same key, and the units move once.
      proxy.inject('POST', '/v1/inventory/1/transfers', { kind: 'drop-answer' })
      const again = await api().inventory.transfer(1n, { fromLocationId: 1n, toLocationId: shop.id, quantity: 6 })
      assert.equal(again.quantity, 6)
      assert.deepEqual(await levels(1n), { 1: 14, [String(shop.id)]: 6 })
      const stock: StockLevel[] = []
      for await (const level of api().locations.stock(shop.id, { pageSize: 1 })) stock.push(level)
      assert.deepEqual(
        stock.map((l) => [l.petId, l.quantity, l.status]),
        [
          [1n, 6, 'available'],
          [BIG, 4, 'pending'],
        ],
      )
      const page = await api().locations.stockPage(1n, { pageSize: 2 })
      assert.deepEqual([page.items.map((l) => l.petId), page.next], [[1n, 100n], 100n])
      const adjusted = await api().inventory.adjust(100n, { delta: 2, locationId: shop.id })
      assert.deepEqual(adjusted.item, { petId: 100n, locationId: shop.id, quantity: 2, status: 'available' })
      const closedLater = await api().locations.create({ name: 'Pop-up' })
      const renamed = await api().locations.update(closedLater.id, { name: 'Pop-up (closed)', active: false })
      assert.deepEqual([renamed.name, renamed.active], ['Pop-up (closed)', false])
    })

    test('When the client asks what cannot be done, then PetstoreErrors with their codes, and nothing changes', async () => {
      const before = await levels(1n)
      const [shop] = (await api().locations.list()).filter((l) => l.name === 'Client Shop')
      assert.ok(shop)
      const short = await rejection(api().inventory.transfer(1n, { fromLocationId: shop.id, toLocationId: 1n, quantity: 99 }))
      assert.deepEqual([short.status, short.code], [409, 'insufficient_stock'])
      const unknown = await rejection(api().inventory.transfer(1n, { fromLocationId: 1n, toLocationId: 777n, quantity: 1 }))
      assert.deepEqual([unknown.status, unknown.code], [404, 'not_found'])
      const taken = await rejection(api().locations.create({ name: 'client shop' }))
      assert.deepEqual([taken.status, taken.code], [409, 'location_name_taken'])
      const full = await rejection(api().locations.update(shop.id, { active: false }))
      assert.deepEqual([full.status, full.code], [409, 'location_not_empty'])
      const inactive = (await api().locations.list()).find((l) => !l.active)!
      const closed = await rejection(api().inventory.adjust(1n, { delta: 1, locationId: inactive.id }))
      assert.deepEqual([closed.status, closed.code], [400, 'location_inactive'])
      assert.deepEqual(await levels(1n), before)
    })
  })
}
