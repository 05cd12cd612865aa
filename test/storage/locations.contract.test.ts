// Locations (issue 50) through the storage port, on every backend: the default location holding every
// entry's stock, locations created, renamed and deactivated only when empty; stock set, moved and
// transferred at a location (an entry's quantity always the sum of its levels, a row at each location
// changed); orders and holds taken by the allocation rule or from a named location, and given back
// where they were taken from; on PostgreSQL, two instances racing over transfers, orders and PATCHes.
import assert from 'node:assert/strict'
import { beforeEach, describe, test } from 'node:test'
import { DEFAULT_LOCATION_ID, type Location, type Order, type StockLevel } from '../../src/domain.js'
import type { Storage } from '../../src/storage/ports.js'
import type { StockChange, StockWrite } from '../../src/stock/writes.js'
import type { Violation } from '../../src/storage/invariants.js'
import { runStatements } from '../support/databases.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, changesAfter, INT64_MAX, item, seed } from './fixtures.js'

const who = actor(7, 'req-l')
const at = () => new Date().toISOString()

let batches = 0
/** A batch of changes (a new batch id each, as the service makes them: 'b-1' for a test's first), or an adjustment alone (null). */
const changes = (list: StockChange[], batchId: string | null = `b-${++batches}`) =>
  ({ kind: 'changes', batchId, changes: list, actor: who }) satisfies StockWrite
const transfer = (petId: bigint, from: number, to: number, quantity: number, transferId = 't-1') => ({
  petId,
  fromLocationId: from,
  toLocationId: to,
  quantity,
  transferId,
})

/** Creates a location, failing the test on anything else. */
async function created(storage: Storage, name: string): Promise<Location> {
  const result = await storage.createLocation(name, at(), 1000)
  if (typeof result !== 'object') assert.fail(`expected a location, got ${result}`)
  return result
}

/** One pet's stock by location id (absent: no entry). */
async function levels(storage: Storage, petId: bigint): Promise<Record<number, number> | undefined> {
  const stock = await storage.petStock(petId)
  return stock && Object.fromEntries(stock.map((l) => [l.locationId, l.quantity]))
}

function placed(result: unknown): Order {
  if (typeof result !== 'object' || result === null || !('outcome' in result) || result.outcome !== 'placed')
    assert.fail(`expected an order, got ${show(result)}`)
  return (result as unknown as { order: Order }).order
}

/** What `petstore check` finds. */
async function violations(storage: Storage): Promise<Violation[]> {
  const found: Violation[] = []
  await storage.checkInvariants((v) => found.push(v))
  return found
}

const show = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))

for (const backend of BACKENDS) {
  describe(`Storage contract: locations (${backend.name})`, () => {
    const fixture = useStorage(backend)
    beforeEach(() => {
      batches = 0
    })

    /** Pets 1 (10), 2 (5, pending), INT64_MAX (3, sold); shops A (2) and B (3), each stocked with 4 of pet 1 taken from the default location. */
    const start = async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10), item(2n, 5, 'pending'), item(INT64_MAX, 3, 'sold')])
      const a = await created(storage, 'Shop A')
      const b = await created(storage, 'Shop B')
      return { a: a.id, b: b.id, last: await storage.lastChangeSeq() }
    }

    test('When the store is new, then the default location holds every entry, and locations are created with unique names', async () => {
      const { storage } = fixture
      await seed(storage, [item(1n, 10)])
      const [first] = await storage.listLocations()
      assert.equal(first?.id, DEFAULT_LOCATION_ID)
      assert.deepEqual({ ...first, createdAt: '', updatedAt: '' }, { id: 1, name: 'Default', active: true, createdAt: '', updatedAt: '' })
      const shop = await created(storage, 'Harbour Street')
      assert.equal(shop.id, 2)
      assert.equal(shop.active, true)
      assert.equal(await storage.createLocation('harbour street', at(), 1000), 'name_taken')
      assert.equal(await storage.createLocation('Warehouse', at(), 2), 'limit_reached')
      assert.deepEqual(
        (await storage.listLocations()).map((l) => l.name),
        ['Default', 'Harbour Street'],
      )
      assert.deepEqual(await storage.getLocation(2), shop)
      assert.equal(await storage.getLocation(3), undefined)
      assert.deepEqual(await levels(storage, 1n), { 1: 10 })
      assert.equal(await storage.petStock(99n), undefined)
    })

    test('When stock is set and moved at a location, then the entry is the sum of its levels and each row is that location’s', async () => {
      const { storage } = fixture
      const { a, b, last } = await start()
      const result = await storage.writeStock(
        changes([
          { petId: 1n, quantity: 4, locationId: a, reason: 'arrival' },
          { petId: 1n, delta: 3, locationId: b },
          { petId: 1n, delta: -2, locationId: a },
          { petId: 2n, delta: -1 },
        ]),
      )
      assert.deepEqual(result, {
        outcome: 'applied',
        batchId: 'b-1',
        entries: [
          { petId: 1n, locationId: a, quantity: 4, status: 'available' },
          { petId: 1n, locationId: b, quantity: 3, status: 'available' },
          { petId: 1n, locationId: a, quantity: 2, status: 'available' },
          item(2n, 4, 'pending'),
        ],
        replayed: false,
      })
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 15))
      assert.deepEqual(await levels(storage, 1n), { 1: 10, [a]: 2, [b]: 3 })
      const rows = await changesAfter(storage, last)
      assert.deepEqual(
        rows.map((c) => [c.petId, c.locationId, c.previousQuantity, c.quantity, c.reason]),
        [
          [1n, a, 0, 4, 'arrival'],
          [1n, b, 0, 3, 'adjustment'],
          [1n, a, 4, 2, 'adjustment'],
          [2n, undefined, 5, 4, 'adjustment'],
        ],
      )
      // A PATCH (a set at no location) sets the default location's stock: the entry is it plus the rest.
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 1, actor: who }), item(1n, 6))
      assert.deepEqual(await levels(storage, 1n), { 1: 1, [a]: 2, [b]: 3 })
      const [patched] = await changesAfter(storage, rows.at(-1)!.seq)
      assert.deepEqual([patched?.locationId, patched?.previousQuantity, patched?.quantity], [undefined, 10, 1])
      // So does an adjustment at no location, below zero there refused though the pet has stock elsewhere.
      assert.deepEqual(await storage.writeStock(changes([{ petId: 1n, delta: -2 }], null)), {
        outcome: 'refused',
        index: 0,
        refusal: { refused: 'insufficient_stock', found: 1, delta: -2 },
        replayed: false,
      })
      assert.deepEqual(await storage.writeStock(changes([{ petId: 1n, delta: 4 }], null)), {
        outcome: 'applied',
        batchId: null,
        entries: [item(1n, 10)],
        replayed: false,
      })
      assert.deepEqual(await levels(storage, 1n), { 1: 5, [a]: 2, [b]: 3 })
      assert.deepEqual(await violations(storage), [])
    })

    test('When the stock at a location is listed, then the default one lists every entry and another the pets stocked there, by petId', async () => {
      const { storage } = fixture
      const { a } = await start()
      await storage.writeStock(
        changes([
          { petId: INT64_MAX, quantity: 0, locationId: a },
          transfer(1n, DEFAULT_LOCATION_ID, a, 6),
          transfer(2n, DEFAULT_LOCATION_ID, a, 5),
        ]),
      )
      const level = (petId: bigint, locationId: number, quantity: number, status: StockLevel['status'] = 'available') => ({
        petId,
        locationId,
        quantity,
        status,
      })
      assert.deepEqual(await storage.listLocationStock(DEFAULT_LOCATION_ID, { limit: 10 }), [
        level(1n, 1, 4),
        level(2n, 1, 0, 'pending'),
        level(INT64_MAX, 1, 3, 'sold'),
      ])
      assert.deepEqual(await storage.listLocationStock(a, { limit: 10 }), [
        level(1n, a, 6),
        level(2n, a, 5, 'pending'),
        level(INT64_MAX, a, 0, 'sold'),
      ])
      assert.deepEqual(await storage.listLocationStock(a, { after: 1n, limit: 1 }), [level(2n, a, 5, 'pending')])
      assert.deepEqual(await storage.listLocationStock(a, { limit: 10, status: 'sold' }), [level(INT64_MAX, a, 0, 'sold')])
      assert.deepEqual(await storage.listLocationStock(DEFAULT_LOCATION_ID, { after: 1n, limit: 10, status: 'pending' }), [
        level(2n, 1, 0, 'pending'),
      ])
      assert.deepEqual(await storage.listLocationStock(99, { limit: 10 }), [])
    })

    test('When units are transferred, then a row at each location shares the transfer id and the entry is unchanged; short at the source, nothing moves', async () => {
      const { storage } = fixture
      const { a, b, last } = await start()
      const moved = await storage.writeStock(changes([transfer(1n, DEFAULT_LOCATION_ID, a, 7, 't-7'), transfer(1n, a, b, 2, 't-8')]))
      assert.deepEqual(moved, {
        outcome: 'applied',
        batchId: 'b-1',
        entries: [
          { petId: 1n, locationId: a, quantity: 7, status: 'available', transferId: 't-7', from: { locationId: 1, quantity: 3 } },
          { petId: 1n, locationId: b, quantity: 2, status: 'available', transferId: 't-8', from: { locationId: a, quantity: 5 } },
        ],
        replayed: false,
      })
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 10))
      assert.deepEqual(await levels(storage, 1n), { 1: 3, [a]: 5, [b]: 2 })
      const rows = await changesAfter(storage, last)
      assert.deepEqual(
        rows.map((c) => [c.locationId, c.previousQuantity, c.quantity, c.reason, c.transferId, c.batchId]),
        [
          [undefined, 10, 3, 'transfer', 't-7', 'b-1'],
          [a, 0, 7, 'transfer', 't-7', 'b-1'],
          [a, 7, 5, 'transfer', 't-8', 'b-1'],
          [b, 0, 2, 'transfer', 't-8', 'b-1'],
        ],
      )
      const seq = await storage.lastChangeSeq()
      assert.deepEqual(await storage.writeStock(changes([transfer(1n, b, a, 1), transfer(1n, b, DEFAULT_LOCATION_ID, 2)])), {
        outcome: 'refused',
        index: 1,
        refusal: { refused: 'insufficient_stock', found: 1, delta: -2 },
        replayed: false,
      })
      assert.deepEqual(await levels(storage, 1n), { 1: 3, [a]: 5, [b]: 2 })
      assert.equal(await storage.lastChangeSeq(), seq)
      assert.deepEqual(await violations(storage), [])
    })

    test('When a write names a location that is not there or inactive, then it is refused, naming it, and nothing changes', async () => {
      const { storage } = fixture
      const { a, b } = await start()
      assert.deepEqual(await storage.updateLocation(b, { active: false }, at()), {
        ...(await storage.getLocation(b)),
        active: false,
      })
      const seq = await storage.lastChangeSeq()
      assert.deepEqual(await storage.writeStock(changes([{ petId: 1n, delta: 1, locationId: a }, transfer(1n, a, 9, 1)])), {
        outcome: 'refused',
        index: 1,
        refusal: { refused: 'location_not_found', locationId: 9 },
        replayed: false,
      })
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 1, locationId: b, actor: who }), {
        refused: 'location_inactive',
        locationId: b,
      })
      assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 1n, quantity: 1, locationId: b, actor: who }), {
        outcome: 'location_refused',
        refusal: { refused: 'location_inactive', locationId: b },
        replayed: false,
      })
      assert.deepEqual(
        await storage.writeStock({
          kind: 'hold',
          lines: [{ petId: 1n, quantity: 1, locationId: 9 }],
          expiresAt: at(),
          reference: null,
          actor: who,
        }),
        { outcome: 'unheld', refusal: { refused: 'location_not_found', locationId: 9, index: 0 }, replayed: false },
      )
      assert.equal(await storage.lastChangeSeq(), seq)
      assert.deepEqual(await levels(storage, 1n), { 1: 10 })
    })

    test('When a location holds stock, then it cannot be deactivated; empty, it can, and the default one never', async () => {
      const { storage } = fixture
      const { a } = await start()
      await storage.writeStock(changes([transfer(1n, DEFAULT_LOCATION_ID, a, 4), transfer(2n, DEFAULT_LOCATION_ID, a, 1)]))
      assert.deepEqual(await storage.updateLocation(a, { active: false }, at()), { refused: 'not_empty', units: 5, pets: 2 })
      assert.equal(await storage.updateLocation(DEFAULT_LOCATION_ID, { active: false }, at()), 'default_location')
      assert.equal(await storage.updateLocation(a, { name: 'shop b' }, at()), 'name_taken')
      assert.equal(await storage.updateLocation(42, { name: 'X' }, at()), 'not_found')
      const renamed = await storage.updateLocation(a, { name: 'Shop A (harbour)' }, at())
      assert.equal(typeof renamed === 'object' && 'name' in renamed && renamed.name, 'Shop A (harbour)')
      assert.equal(typeof (await storage.updateLocation(a, { name: 'SHOP A (HARBOUR)' }, at())), 'object', 'its own name, case changed')
      await storage.writeStock(changes([transfer(1n, a, DEFAULT_LOCATION_ID, 4), { petId: 2n, delta: -1, locationId: a }]))
      const closed = await storage.updateLocation(a, { active: false }, at())
      assert.equal(typeof closed === 'object' && 'active' in closed && closed.active, false)
      assert.deepEqual(await levels(storage, 1n), { 1: 10 }, 'an inactive location is not listed for a pet')
      assert.equal((await storage.getLocation(a))?.active, false)
    })

    test('When an order names no location, then the default location goes first, then the one with the most stock, split when none covers it', async () => {
      const { storage } = fixture
      const { a, b } = await start()
      await storage.writeStock(changes([transfer(1n, DEFAULT_LOCATION_ID, a, 3), transfer(1n, DEFAULT_LOCATION_ID, b, 5)]))
      // Default 2, A 3, B 5.
      const place = async (quantity: number, locationId?: number) =>
        placed(await storage.writeStock({ kind: 'place', petId: 1n, quantity, locationId, actor: who }))
      const one = await place(2)
      assert.equal(one.allocations, undefined, 'all from the default location: no allocations shown')
      assert.deepEqual(await levels(storage, 1n), { 1: 0, [a]: 3, [b]: 5 })
      const two = await place(4)
      assert.deepEqual(two.allocations, [{ locationId: b, quantity: 4 }])
      const three = await place(3)
      assert.deepEqual(three.allocations, [{ locationId: a, quantity: 3 }], 'A has 3, B 1: A covers it alone')
      assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 1n, quantity: 2, actor: who }), {
        outcome: 'insufficient_stock',
        available: 1,
        replayed: false,
      })
      await storage.writeStock(
        changes([
          { petId: 1n, delta: 1 },
          { petId: 1n, delta: 1, locationId: a },
        ]),
      )
      // Default 1, A 1, B 1: split, the default location first.
      const four = await place(3)
      assert.deepEqual(four.allocations, [
        { locationId: 1, quantity: 1 },
        { locationId: a, quantity: 1 },
        { locationId: b, quantity: 1 },
      ])
      assert.deepEqual(await storage.getOrder(four.id), four)
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 0))
      const rows = (await changesAfter(storage, 0n)).filter((c) => c.orderId === four.id)
      assert.deepEqual(
        rows.map((c) => [c.locationId, c.previousQuantity, c.quantity, c.reason]),
        [
          [undefined, 1, 0, 'order'],
          [a, 1, 0, 'order'],
          [b, 1, 0, 'order'],
        ],
      )
      // Cancelled, each goes back where it was taken from (B's location deactivated meanwhile: to the default one).
      await storage.writeStock({ kind: 'transition', orderId: two.id, status: 'cancelled', actor: who })
      assert.deepEqual(await levels(storage, 1n), { 1: 0, [a]: 0, [b]: 4 })
      await storage.writeStock(changes([transfer(1n, b, a, 4)]))
      assert.equal(typeof (await storage.updateLocation(b, { active: false }, at())), 'object')
      await storage.writeStock({ kind: 'transition', orderId: four.id, status: 'cancelled', actor: who })
      assert.deepEqual(await levels(storage, 1n), { 1: 2, [a]: 5 })
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
      // A named location: only there.
      assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 1n, quantity: 3, locationId: DEFAULT_LOCATION_ID, actor: who }), {
        outcome: 'insufficient_stock',
        available: 2,
        replayed: false,
      })
      assert.deepEqual((await place(5, a)).allocations, [{ locationId: a, quantity: 5 }])
      assert.deepEqual(await violations(storage), [])
    })

    test('When a hold takes stock elsewhere, then release and expiry give it back there, and its confirmed orders carry the allocations', async () => {
      const { storage } = fixture
      const { a, b } = await start()
      await storage.writeStock(changes([transfer(1n, DEFAULT_LOCATION_ID, a, 8), transfer(2n, DEFAULT_LOCATION_ID, b, 5)]))
      const hold = async (expiresAt: string) => {
        const result = await storage.writeStock({
          kind: 'hold',
          lines: [
            { petId: 1n, quantity: 9 },
            { petId: 2n, quantity: 2, locationId: b },
            { petId: INT64_MAX, quantity: 1 },
          ],
          expiresAt,
          reference: null,
          actor: who,
        })
        if (typeof result !== 'object' || result.outcome !== 'held') assert.fail(show(result))
        return result.reservation
      }
      const first = await hold(new Date(Date.now() + 600_000).toISOString())
      assert.deepEqual(
        first.lines.map((l) => l.allocations),
        [
          [
            { locationId: 1, quantity: 2 },
            { locationId: a, quantity: 7 },
          ],
          [{ locationId: b, quantity: 2 }],
          undefined,
        ],
      )
      assert.deepEqual(await storage.getReservation(first.id), first)
      assert.deepEqual(await levels(storage, 1n), { 1: 0, [a]: 1 })
      await storage.writeStock({ kind: 'reservation', reservationId: first.id, action: 'release', actor: who })
      assert.deepEqual(await levels(storage, 1n), { 1: 2, [a]: 8 })
      assert.deepEqual(await levels(storage, 2n), { 1: 0, [b]: 5 })

      const second = await hold(new Date(Date.now() - 1).toISOString())
      assert.deepEqual(await storage.writeStock({ kind: 'expire', reservationIds: [second.id], actor: actor(null, null) }), {
        expired: [second.id],
        overflowed: [],
      })
      assert.deepEqual(await levels(storage, 1n), { 1: 2, [a]: 8 })
      assert.deepEqual(await levels(storage, 2n), { 1: 0, [b]: 5 })

      const third = await hold(new Date(Date.now() + 600_000).toISOString())
      const confirmed = await storage.writeStock({ kind: 'reservation', reservationId: third.id, action: 'confirm', actor: who })
      if (typeof confirmed !== 'object' || !('orders' in confirmed)) assert.fail(show(confirmed))
      assert.deepEqual(
        confirmed.orders.map((o) => o.allocations),
        third.lines.map((l) => l.allocations),
      )
      assert.deepEqual(await levels(storage, 1n), { 1: 0, [a]: 1 })
      await storage.writeStock({ kind: 'transition', orderId: confirmed.orders[0]!.id, status: 'cancelled', actor: who })
      assert.deepEqual(await levels(storage, 1n), { 1: 2, [a]: 8 })
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 10))
      assert.deepEqual(await violations(storage), [])
    })

    test('When `petstore check` reads stock behind the service’s back, then each location’s level, the sums and the allocations are judged', async () => {
      const { storage } = fixture
      const { a } = await start()
      await storage.writeStock(changes([transfer(1n, DEFAULT_LOCATION_ID, a, 6)]))
      const order = placed(await storage.writeStock({ kind: 'place', petId: 1n, quantity: 7, actor: who }))
      assert.deepEqual(order.allocations, [
        { locationId: 1, quantity: 4 },
        { locationId: a, quantity: 3 },
      ])
      assert.deepEqual(await violations(storage), [])
      await runStatements(fixture.database.url, [
        `UPDATE stock_levels SET quantity = 5 WHERE pet_id = 1 AND location_id = ${a}`,
        `UPDATE order_allocations SET quantity = 2 WHERE order_id = ${order.id} AND location_id = ${a}`,
      ])
      const found = (await violations(storage)).map((v) => [v.invariant, v.ids, v.found])
      const seqAt = (await changesAfter(storage)).filter((c) => c.locationId === a).at(-1)!.seq
      assert.deepEqual(found, [
        ['entry_matches_ledger', { pet: 1n, location: a, seq: seqAt }, 'it holds 5 there, its newest ledger row there says 3'],
        [
          'entry_sums_locations',
          { pet: 1n },
          'the entry counts 3 units at the other locations than the default one, their levels add up to 5',
        ],
        ['allocations_sum', { order: order.id }, 'its allocations add up to 6 units, not 7'],
      ])
    })

    test('When a set at a location would take the entry past the bound, then it is refused; a PATCH too, without writing', async () => {
      const { storage } = fixture
      const { a } = await start()
      await storage.writeStock(changes([{ petId: 1n, quantity: 2_000_000_000, locationId: a }]))
      assert.deepEqual(await storage.writeStock(changes([{ petId: 1n, quantity: 200_000_000, locationId: DEFAULT_LOCATION_ID }])), {
        outcome: 'refused',
        index: 0,
        refusal: { refused: 'stock_overflow', found: 10, delta: 199_999_990 },
        replayed: false,
      })
      const seq = await storage.lastChangeSeq()
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 200_000_000, actor: who }), {
        refused: 'stock_overflow',
        found: 10,
        delta: 199_999_990,
      })
      assert.equal(await storage.lastChangeSeq(), seq)
      assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 147_483_647, actor: who }), item(1n, 2147483647))
    })

    if (backend.name === 'postgres')
      test('When two instances race transfers, orders and PATCHes, then every entry is the sum of its levels and no level goes below zero', async () => {
        const { storage } = fixture
        const { a, b } = await start()
        const other = await fixture.another()
        await storage.writeStock(
          changes([
            { petId: 1n, quantity: 1000, locationId: a },
            { petId: 1n, quantity: 1000, locationId: b },
          ]),
        )
        const work: Promise<unknown>[] = []
        for (let i = 0; i < 60; i++) {
          const s = i % 2 === 0 ? storage : other
          const from = [DEFAULT_LOCATION_ID, a, b][i % 3]!
          const to = [a, b, DEFAULT_LOCATION_ID][i % 3]!
          work.push(s.writeStock(changes([transfer(1n, from, to, 7, `t${i}`)], null)))
          work.push(s.writeStock({ kind: 'place', petId: 1n, quantity: 3, actor: who }))
          work.push(s.writeStock({ kind: 'set', petId: 1n, quantity: 50 + i, actor: who }))
          work.push(s.writeStock(changes([{ petId: 1n, delta: 2 }], null)))
        }
        await Promise.all(work)
        const stock = (await levels(storage, 1n))!
        const entry = await storage.getInventoryItem(1n)
        assert.equal(
          entry?.quantity,
          Object.values(stock).reduce((x, y) => x + y, 0),
        )
        for (const level of Object.values(stock)) assert.ok(level >= 0)
        // Each location's stock is its newest ledger row's.
        const rows = await changesAfter(storage, 0n)
        for (const [locationId, quantity] of Object.entries(stock)) {
          const newest = rows.filter((c) => c.petId === 1n && (c.locationId ?? DEFAULT_LOCATION_ID) === Number(locationId)).at(-1)
          assert.equal(newest?.quantity, quantity, `location ${locationId}`)
        }
      })
  })
}
