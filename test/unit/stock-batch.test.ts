import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { MAX_QUANTITY, ORDER_STATUSES, ORDER_TRANSITIONS, type InventoryItem, type Order } from '../../src/domain.js'
import { planBatch, type BatchState } from '../../src/stock/planner.js'
import type { PlaceResult, StockWrite } from '../../src/stock/writes.js'

const AT = '2026-11-22T00:00:00.000Z'
const actor = { keyId: 1, requestId: 'r' }

const stateArb = fc
  .record({
    quantities: fc.array(fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(MAX_QUANTITY - 1)), { minLength: 1, maxLength: 4 }),
    orders: fc.array(fc.record({ pet: fc.nat(3), quantity: fc.integer({ min: 1, max: 3 }), status: fc.constantFrom(...ORDER_STATUSES) }), {
      maxLength: 4,
    }),
  })
  .map(
    ({ quantities, orders }): BatchState => ({
      entries: new Map(
        quantities.map((quantity, i): [bigint, InventoryItem] => [BigInt(i + 1), { petId: BigInt(i + 1), quantity, status: 'available' }]),
      ),
      orders: new Map(
        orders.map((o, i): [bigint, Order] => [
          BigInt(i + 1),
          {
            id: BigInt(i + 1),
            petId: BigInt((o.pet % quantities.length) + 1),
            quantity: o.quantity,
            status: o.status,
            placedAt: AT,
            updatedAt: AT,
          },
        ]),
      ),
      claims: new Map(),
      lastChange: 10n,
      lastOrder: BigInt(orders.length),
    }),
  )

// Pets 1..5 (5 may have no entry), orders 1..8 (some not yet placed), keys reused across writes.
const writeArb: fc.Arbitrary<StockWrite> = fc.oneof(
  fc
    .record({ pet: fc.integer({ min: 1, max: 5 }), quantity: fc.integer({ min: 0, max: 6 }) })
    .map(({ pet, quantity }): StockWrite => ({ kind: 'set', petId: BigInt(pet), quantity, actor })),
  fc
    .record({ pet: fc.integer({ min: 1, max: 5 }), quantity: fc.integer({ min: 1, max: 4 }), key: fc.option(fc.constantFrom('a', 'b')) })
    .map(
      ({ pet, quantity, key }): StockWrite => ({
        kind: 'place',
        petId: BigInt(pet),
        quantity,
        actor,
        idempotency: key === null ? undefined : { key, fingerprint: `${pet}:${quantity}` },
      }),
    ),
  fc
    .record({ order: fc.integer({ min: 1, max: 8 }), status: fc.constantFrom(...ORDER_STATUSES) })
    .map(({ order, status }): StockWrite => ({ kind: 'transition', orderId: BigInt(order), status, actor })),
)

describe('planBatch: the rules every stock write follows, on both backends', () => {
  test('For any batch on any state, no quantity leaves 0..MAX, the ledger replays to the final quantities, and refusals change nothing', () => {
    fc.assert(
      fc.property(stateArb, fc.array(writeArb, { maxLength: 12 }), (state, batch) => {
        const plan = planBatch(batch, state, AT)
        assert.equal(plan.results.length, batch.length)

        // Replaying the ledger from the state before the batch gives every final quantity, row by row.
        const running = new Map([...state.entries].map(([id, e]) => [id, e.quantity]))
        let seq = state.lastChange
        for (const change of plan.changes) {
          assert.equal(change.seq, ++seq, 'seqs follow on, one per row')
          assert.equal(change.previousQuantity, running.get(change.petId), 'each row starts where the last one ended')
          assert.ok(change.quantity >= 0 && change.quantity <= MAX_QUANTITY, `quantity ${change.quantity}`)
          running.set(change.petId, change.quantity)
        }
        assert.equal(plan.lastChange, seq)
        for (const [petId, quantity] of plan.quantities) assert.equal(running.get(petId), quantity)
        for (const [petId, quantity] of running) {
          if (!plan.quantities.has(petId)) assert.equal(quantity, state.entries.get(petId)!.quantity)
        }

        // One row per applied stock change, none for refusals.
        const rowsExpected = plan.results.filter((r, i) => {
          const w = batch[i]!
          if (w.kind === 'set') return typeof r === 'object'
          if (w.kind === 'place') {
            const placed = r as PlaceResult
            return typeof placed === 'object' && placed.outcome === 'placed' && !placed.replayed
          }
          return typeof r === 'object' && 'status' in r && r.status === 'cancelled' && !('refused' in r)
        }).length
        assert.equal(plan.changes.length, rowsExpected)

        // Transitions follow the graph; the placed orders are new ids after lastOrder.
        batch.forEach((w, i) => {
          const r = plan.results[i]!
          if (w.kind === 'transition' && typeof r === 'object' && 'refused' in r && r.refused === 'invalid_transition') {
            assert.ok(!ORDER_TRANSITIONS[r.from].includes(w.status))
          }
        })
        for (const [i, o] of plan.newOrders.entries()) assert.equal(o.id, state.lastOrder + BigInt(i + 1))
      }),
      { numRuns: 500 },
    )
  })

  test('When one Idempotency-Key comes twice in a batch with the same body, then one order is placed and the second is its replay', () => {
    const state: BatchState = {
      entries: new Map([[1n, { petId: 1n, quantity: 5, status: 'available' }]]),
      orders: new Map(),
      claims: new Map(),
      lastChange: 0n,
      lastOrder: 0n,
    }
    const place = (quantity: number): StockWrite => ({
      kind: 'place',
      petId: 1n,
      quantity,
      actor,
      idempotency: { key: 'k', fingerprint: `1:${quantity}` },
    })
    const plan = planBatch([place(2), place(2), place(3)], state, AT)
    assert.deepEqual(
      (plan.results as PlaceResult[]).map((r) => (typeof r === 'string' ? r : [r.outcome, r.replayed])),
      [['placed', false], ['placed', true], 'idempotency_key_reused'],
    )
    assert.equal(plan.newOrders.length, 1)
    assert.equal(plan.claims.length, 1)
    assert.deepEqual([...plan.quantities], [[1n, 3]])
  })

  test('When a cancellation would take the stock past the maximum, then it is refused and nothing changes', () => {
    const state: BatchState = {
      entries: new Map([[1n, { petId: 1n, quantity: MAX_QUANTITY, status: 'available' }]]),
      orders: new Map([[1n, { id: 1n, petId: 1n, quantity: 1, status: 'placed', placedAt: AT, updatedAt: AT }]]),
      claims: new Map(),
      lastChange: 0n,
      lastOrder: 1n,
    }
    const plan = planBatch([{ kind: 'transition', orderId: 1n, status: 'cancelled', actor }], state, AT)
    assert.deepEqual(plan.results, [{ refused: 'stock_overflow', stock: MAX_QUANTITY }])
    assert.equal(plan.changes.length, 0)
    assert.equal(plan.changedOrders.length, 0)
  })
})
