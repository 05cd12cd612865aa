// Idempotency-Key claims, on every backend: a claim answers as it first did, per API key, and places once.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { PlaceResult, StockWrite } from '../../src/stock/writes.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, allOrders, changesAfter, item, seed } from './fixtures.js'

const place = (
  petId: bigint,
  quantity: number,
  keyId: number | null,
  key: string,
  fingerprint: string,
): StockWrite & { kind: 'place' } => ({
  kind: 'place',
  petId,
  quantity,
  actor: actor(keyId, `req-${key}`),
  idempotency: { key, fingerprint },
})

const orderOf = (r: PlaceResult) => {
  assert.ok(typeof r === 'object' && r.outcome === 'placed', `placed: ${String(r)}`)
  return r.order
}

for (const backend of BACKENDS) {
  describe(`Storage contract: Idempotency-Key claims (${backend.name})`, () => {
    const fixture = useStorage(backend)

    test('When the same claim is made again, then it replays the first placement and places nothing', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const first = await storage.writeStock(place(1n, 3, 1, 'k', 'f'))
      const order = orderOf(first)
      assert.deepEqual(first, { outcome: 'placed', order, replayed: false })
      const last = await storage.lastChangeSeq()
      const again = await storage.writeStock(place(1n, 3, 1, 'k', 'f'))
      assert.deepEqual(again, { outcome: 'placed', order, replayed: true })
      assert.deepEqual(await allOrders(storage), [order])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
      assert.deepEqual(await changesAfter(storage, last), [])
    })

    test('When a claimed order has moved since, then the replay answers it as it was when placed', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const order = orderOf(await storage.writeStock(place(1n, 3, 1, 'k', 'f')))
      const approved = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'approved', actor: actor() })
      assert.equal(typeof approved === 'object' && 'status' in approved && approved.status, 'approved')
      assert.deepEqual(await storage.writeStock(place(1n, 3, 1, 'k', 'f')), { outcome: 'placed', order, replayed: true })
      assert.deepEqual(await allOrders(storage), [approved])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
    })

    test('When a claim is made again with another fingerprint, then it answers idempotency_key_reused and places nothing', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const order = orderOf(await storage.writeStock(place(1n, 3, 1, 'k', 'f')))
      const last = await storage.lastChangeSeq()
      assert.equal(await storage.writeStock(place(1n, 3, 1, 'k', 'g')), 'idempotency_key_reused')
      assert.equal(await storage.writeStock(place(1n, 2, 1, 'k', 'g')), 'idempotency_key_reused')
      assert.deepEqual(await allOrders(storage), [order])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
      assert.deepEqual(await changesAfter(storage, last), [])
      // The first fingerprint still replays.
      assert.deepEqual(await storage.writeStock(place(1n, 3, 1, 'k', 'f')), { outcome: 'placed', order, replayed: true })
    })

    test('When the same key is used under another API key, then it is a claim of its own and places again', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const first = orderOf(await storage.writeStock(place(1n, 3, 1, 'k', 'f')))
      const second = await storage.writeStock(place(1n, 3, 2, 'k', 'f'))
      const other = orderOf(second)
      assert.deepEqual(second, { outcome: 'placed', order: other, replayed: false })
      assert.equal(other.id, first.id + 1n)
      // Each replays its own.
      assert.deepEqual(await storage.writeStock(place(1n, 3, 1, 'k', 'f')), { outcome: 'placed', order: first, replayed: true })
      assert.deepEqual(await storage.writeStock(place(1n, 3, 2, 'k', 'f')), { outcome: 'placed', order: other, replayed: true })
      assert.deepEqual(await allOrders(storage), [first, other])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 4))
    })

    test('When a claimed placement found too little stock, then the replay answers insufficient_stock again, even once stock is there', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 2)])
      assert.deepEqual(await storage.writeStock(place(1n, 5, 1, 'k', 'f')), {
        outcome: 'insufficient_stock',
        available: 2,
        replayed: false,
      })
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 50, actor: actor() }), item(1n, 50))
      const last = await storage.lastChangeSeq()
      assert.deepEqual(await storage.writeStock(place(1n, 5, 1, 'k', 'f')), { outcome: 'insufficient_stock', available: 2, replayed: true })
      assert.deepEqual(await allOrders(storage), [])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 50))
      assert.deepEqual(await changesAfter(storage, last), [])
    })

    test('When a claimed placement named a pet without an entry, then the replay answers not_found again, even once the entry exists', async () => {
      const { storage } = fixture
      assert.deepEqual(await storage.writeStock(place(5n, 1, 1, 'k', 'f')), { outcome: 'not_found', replayed: false })
      await seed(storage, [item(5n, 9)])
      assert.deepEqual(await storage.writeStock(place(5n, 1, 1, 'k', 'f')), { outcome: 'not_found', replayed: true })
      assert.deepEqual(await allOrders(storage), [])
      assert.deepEqual(await storage.getInventoryItem(5n), item(5n, 9))
    })

    test('When the same claim is made twice in one concurrent batch, then the second replays the first', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const [a, b, c] = await Promise.all([
        storage.writeStock(place(1n, 3, 1, 'k', 'f')),
        storage.writeStock(place(1n, 3, 1, 'k', 'f')),
        storage.writeStock(place(1n, 3, 1, 'k', 'g')),
      ])
      const order = orderOf(a!)
      assert.deepEqual(a, { outcome: 'placed', order, replayed: false })
      assert.deepEqual(b, { outcome: 'placed', order, replayed: true })
      assert.equal(c, 'idempotency_key_reused')
      assert.deepEqual(await allOrders(storage), [order])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
      assert.equal((await changesAfter(storage, 1n)).length, 1)
    })

    test('When a placement with a key comes without an API key (the CLI), then no claim is kept and each placement places', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const first = orderOf(await storage.writeStock(place(1n, 3, null, 'k', 'f')))
      const second = orderOf(await storage.writeStock(place(1n, 3, null, 'k', 'f')))
      assert.equal(second.id, first.id + 1n)
      assert.deepEqual(await allOrders(storage), [first, second])
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 4))
      // Nor did they claim the key for an API key that uses it later.
      assert.deepEqual(orderOf(await storage.writeStock(place(1n, 1, 1, 'k', 'f'))).id, second.id + 1n)
    })
  })
}
