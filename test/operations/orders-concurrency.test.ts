import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { BACKENDS, useSuite, type Response, type TestServer } from '../support/helpers.js'
import {
  assertError,
  importInventory,
  placeOrder,
  quantityOf,
  random,
  readAllChanges,
  readAllOrders,
  replay,
  setOrderStatus,
  type Order,
} from '../support/ledger-client.js'

const K = 20
const N = 60
const STORM_PETS = [101, 102, 103, 104]
const STORM_MS = 2000
const STORM_MAX_OPS = 800
const STORM_WORKERS = 8

for (const backend of BACKENDS) {
  describe(`orders through two instances on one database (${backend.name})`, () => {
    const suite = useSuite(backend, { instances: 2 })
    let a: TestServer
    let b: TestServer
    let token: string
    before(async () => {
      ;[a, b] = suite.servers as [TestServer, TestServer]
      token = suite.token
      await importInventory(a, [
        { petId: 1, quantity: K },
        { petId: 2, quantity: 10 },
        { petId: 3, quantity: 10 },
        ...STORM_PETS.map((petId) => ({ petId, quantity: 50 })),
      ])
    })

    test(`When ${N} one-unit orders race for ${K} units through both instances, then exactly ${K} are placed and the rest get 409`, async () => {
      const results = await Promise.all(Array.from({ length: N }, (_, i) => placeOrder(i % 2 ? a : b, token, { petId: 1, quantity: 1 })))
      const won = results.filter((r) => r.status === 201)
      const lost = results.filter((r) => r.status !== 201)
      assert.equal(won.length, K, results.map((r) => r.status).join(','))
      for (const res of lost) assertError(res, 409, 'insufficient_stock')
      const ids = won.map((r) => r.body.id as number)
      assert.equal(new Set(ids).size, K, 'every placement has its own order')
      for (const server of [a, b]) assert.equal(await quantityOf(server, token, 1), 0)
      const orders = (await readAllOrders(b, token)).filter((o) => o.petId === 1n)
      assert.deepEqual(
        orders.map((o) => o.id),
        [...ids].sort((x, y) => x - y),
      )
      for (const order of orders) assert.deepEqual([order.quantity, order.status], [1, 'placed'])
      const rows = (await readAllChanges(a, token, { petId: 1n })).filter((r) => r.reason === 'order')
      assert.deepEqual(
        rows.map((r) => [r.previousQuantity, r.quantity]),
        Array.from({ length: K }, (_, i) => [K - i, K - i - 1]),
      )
      assert.deepEqual(
        rows.map((r) => r.orderId).sort((x, y) => x! - y!),
        [...ids].sort((x, y) => x - y),
      )
    })

    test('When many cancels of one order race through both instances, then exactly one applies and the stock returns once', async () => {
      const res = await placeOrder(a, token, { petId: 2, quantity: 4 })
      assert.equal(res.status, 201)
      const id = res.body.id as number
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => setOrderStatus(i % 2 ? a : b, token, id, 'cancelled')))
      assert.equal(results.filter((r) => r.status === 200).length, 1, results.map((r) => r.status).join(','))
      for (const r of results.filter((r) => r.status !== 200)) assertError(r, 409, 'invalid_transition')
      assert.equal(await quantityOf(b, token, 2), 10)
      const cancellations = (await readAllChanges(a, token, { petId: 2n })).filter((r) => r.reason === 'cancellation')
      assert.deepEqual(
        cancellations.map((r) => [r.orderId, r.previousQuantity, r.quantity]),
        [[id, 6, 10]],
      )
    })

    test('When one Idempotency-Key is sent many times at once through both instances, then one order is placed and every answer is it', async () => {
      const headers = { 'idempotency-key': 'racing-key' }
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => placeOrder(i % 2 ? a : b, token, { petId: 3, quantity: 2 }, headers)),
      )
      for (const r of results) assert.equal(r.status, 201, r.text)
      assert.equal(new Set(results.map((r) => r.text)).size, 1, 'every answer is the same order')
      assert.equal(results.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1, 'exactly one original')
      assert.equal(await quantityOf(a, token, 3), 8)
      assert.equal((await readAllOrders(a, token)).filter((o) => o.petId === 3n).length, 1)
    })

    test("When PATCHes, orders and transitions storm both instances, then replaying the ledger gives every pet's stored quantity", async (t) => {
      const rand = random(20261122)
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!
      const placed: Order[] = []
      const patched: { petId: number; quantity: number }[] = []
      const transitions: { id: number; status: string }[] = []
      const unexpected: string[] = []
      let ops = 0
      const deadline = Date.now() + STORM_MS
      const expect = (res: Response, what: string, ok: number[], code?: string) => {
        if (ok.includes(res.status) && (res.status < 400 || res.body?.code === code)) return true
        unexpected.push(`${what}: ${res.status} ${res.text}`)
        return false
      }
      const worker = async (n: number) => {
        while (Date.now() < deadline && ops < STORM_MAX_OPS) {
          ops++
          const server = rand() < 0.5 ? a : b
          const dice = rand()
          if (dice < 0.35) {
            const petId = pick(STORM_PETS)
            const quantity = Math.floor(rand() * 61)
            const res = await server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity } })
            if (expect(res, `PATCH ${petId}`, [200])) patched.push({ petId, quantity })
          } else if (dice < 0.75 || placed.length === 0) {
            const petId = pick(STORM_PETS)
            const res = await placeOrder(server, token, { petId, quantity: 1 + Math.floor(rand() * 5) })
            if (expect(res, `order ${petId}`, [201, 409], 'insufficient_stock') && res.status === 201) placed.push(res.body)
          } else {
            const order = pick(placed)
            const status = pick(['approved', 'delivered', 'cancelled', 'cancelled'])
            const res = await setOrderStatus(server, token, order.id, status)
            if (expect(res, `worker ${n}: order ${order.id} → ${status}`, [200, 409], 'invalid_transition') && res.status === 200) {
              transitions.push({ id: order.id, status })
            }
          }
        }
      }
      await Promise.all(Array.from({ length: STORM_WORKERS }, (_, n) => worker(n)))
      t.diagnostic(`storm: ${ops} requests, ${patched.length} PATCHes, ${placed.length} orders placed, ${transitions.length} transitions`)
      assert.deepEqual(unexpected, [])
      assert.ok(placed.length > 0 && patched.length > 0, `placed ${placed.length}, patched ${patched.length}`)

      let turn = 0
      const rows = await readAllChanges(() => (turn++ % 2 ? a : b), token, { limit: 97 })
      const finals = replay(rows)
      for (const petId of STORM_PETS) {
        const mine = rows.filter((r) => r.petId === BigInt(petId))
        assert.deepEqual([mine[0]?.reason, mine[0]?.previousQuantity, mine[0]?.quantity], ['import', null, 50], `pet ${petId}'s first row`)
        for (const server of [a, b]) assert.equal(await quantityOf(server, token, petId), finals.get(BigInt(petId)), `pet ${petId}`)
      }
      // Every applied write has its row, and each order row moves the stock by its order's quantity.
      const storm = rows.filter((r) => STORM_PETS.includes(Number(r.petId)) && r.reason !== 'import')
      const byId = new Map(placed.map((o) => [o.id, o]))
      const orderRows = storm.filter((r) => r.reason === 'order')
      const cancelRows = storm.filter((r) => r.reason === 'cancellation')
      assert.equal(storm.filter((r) => r.reason === 'adjustment').length, patched.length)
      assert.deepEqual(
        orderRows.map((r) => r.orderId).sort((x, y) => x! - y!),
        placed.map((o) => o.id).sort((x, y) => x - y),
      )
      const cancelled = transitions.filter((t) => t.status === 'cancelled').map((t) => t.id)
      assert.deepEqual(
        cancelRows.map((r) => r.orderId).sort((x, y) => x! - y!),
        [...cancelled].sort((x, y) => x - y),
      )
      for (const row of orderRows) {
        const order = byId.get(row.orderId!)!
        assert.equal(row.petId, order.petId)
        assert.equal(row.quantity, row.previousQuantity! - order.quantity, `order row ${row.seq}`)
      }
      for (const row of cancelRows) {
        const order = byId.get(row.orderId!)!
        assert.equal(row.petId, order.petId)
        assert.equal(row.quantity, row.previousQuantity! + order.quantity, `cancellation row ${row.seq}`)
      }
      // Every order ends in the furthest status one of its applied transitions reached.
      const listed = new Map((await readAllOrders(a, token)).map((o) => [o.id, o]))
      for (const order of placed) {
        const applied = transitions.filter((t) => t.id === order.id).map((t) => t.status)
        const expected = applied.includes('cancelled')
          ? 'cancelled'
          : applied.includes('delivered')
            ? 'delivered'
            : applied.includes('approved')
              ? 'approved'
              : 'placed'
        assert.equal(listed.get(order.id)?.status, expected, `order ${order.id} after ${applied.join(',')}`)
      }
    })
  })
}
