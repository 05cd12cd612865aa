// StockWrites, on every backend: each kind's result, refusals that change nothing, one ledger row per
// applied write with seqs in commit order, and concurrent writes applied in the order they were asked for.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { MAX_QUANTITY, type InventoryItem, type Order } from '../../src/domain.js'
import type { StockWrite } from '../../src/stock/writes.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, allOrders, assertTimeWithin, changesAfter, expectChanges, item, now, row, seed } from './fixtures.js'

const who = actor(7, 'req-1')
const START = [item(1n, 10), item(2n, 5, 'pending'), item(3n, 0, 'sold')]

for (const backend of BACKENDS) {
  describe(`Storage contract: stock writes (${backend.name})`, () => {
    const fixture = useStorage(backend)

    /** The fresh inventory of START, and the last seq its import left. */
    const start = async () => {
      await seed(fixture.storage, START)
      const last = await fixture.storage.lastChangeSeq()
      assert.equal(last, 3n)
      return last
    }
    const entries = () => Promise.all(START.map((i) => fixture.storage.getInventoryItem(i.petId)))
    const placed = (o: { id: bigint; petId: bigint; quantity: number }, at: string): Order => ({
      ...o,
      status: 'placed',
      placedAt: at,
      updatedAt: at,
    })

    describe('set', () => {
      test('When a quantity is set, then it answers the entry as written, and one adjustment row records it', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        const result = await storage.writeStock({ kind: 'set', petId: 2n, quantity: 7, actor: who })
        const to = now()
        assert.deepEqual(result, item(2n, 7, 'pending'))
        assert.deepEqual(await entries(), [START[0], item(2n, 7, 'pending'), START[2]])
        expectChanges(await changesAfter(storage, last), [row(4n, 2n, 5, 7, 'adjustment', who)], from, to)
      })

      test('When a quantity is set for a pet without an entry, then it answers not_found and creates nothing', async () => {
        const { storage } = fixture
        const last = await start()
        assert.equal(await storage.writeStock({ kind: 'set', petId: 4n, quantity: 7, actor: who }), 'not_found')
        assert.equal(await storage.getInventoryItem(4n), undefined)
        assert.deepEqual(await entries(), START)
        assert.deepEqual(await changesAfter(storage, last), [])
        assert.equal(await storage.lastChangeSeq(), last)
      })

      test('When a precondition fails, then it answers precondition_failed and changes nothing; it saw the entry as it was', async () => {
        const { storage } = fixture
        const last = await start()
        const seen: InventoryItem[] = []
        const result = await storage.writeStock({
          kind: 'set',
          petId: 1n,
          quantity: 4,
          actor: who,
          precondition: (current) => {
            seen.push({ ...current })
            return current.quantity === 11
          },
        })
        assert.equal(result, 'precondition_failed')
        assert.deepEqual(seen, [START[0]])
        assert.deepEqual(await entries(), START)
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When a precondition holds, then the quantity is set as without one', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        const result = await storage.writeStock({ kind: 'set', petId: 1n, quantity: 4, actor: who, precondition: (c) => c.quantity === 10 })
        assert.deepEqual(result, item(1n, 4))
        assert.deepEqual(await entries(), [item(1n, 4), START[1], START[2]])
        expectChanges(await changesAfter(storage, last), [row(4n, 1n, 10, 4, 'adjustment', who)], from, now())
      })

      test('When a quantity is set to 0 and to the largest quantity, then both are stored exactly', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 0, actor: who }), item(1n, 0))
        assert.deepEqual(
          await storage.writeStock({ kind: 'set', petId: 3n, quantity: MAX_QUANTITY, actor: actor(null, null) }),
          item(3n, MAX_QUANTITY, 'sold'),
        )
        assert.deepEqual(await entries(), [item(1n, 0), START[1], item(3n, MAX_QUANTITY, 'sold')])
        expectChanges(
          await changesAfter(storage, last),
          [row(4n, 1n, 10, 0, 'adjustment', who), row(5n, 3n, 0, MAX_QUANTITY, 'adjustment', actor(null, null))],
          from,
          now(),
        )
      })
    })

    describe('set: reason and note (issue 23)', () => {
      const NOTE = 'ünïcødé 🐕\t"quoted"\n\\'

      test('When sets give reasons and notes, one at a time, then each row records its own; without them, adjustment and null', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        const writes: StockWrite[] = [
          { kind: 'set', petId: 1n, quantity: 11, reason: 'arrival', note: 'crate 7', actor: who },
          { kind: 'set', petId: 2n, quantity: 6, reason: 'return', note: null, actor: who },
          { kind: 'set', petId: 3n, quantity: 1, reason: 'count', note: NOTE, actor: who, precondition: (c) => c.quantity === 0 },
          { kind: 'set', petId: 1n, quantity: 12, note: '', actor: who },
          { kind: 'set', petId: 1n, quantity: 13, reason: 'adjustment', actor: who },
          { kind: 'set', petId: 1n, quantity: 14, actor: who },
          { kind: 'set', petId: 3n, quantity: 2, reason: 'count', note: 'refused', actor: who, precondition: () => false },
        ]
        for (const w of writes) await storage.writeStock(w)
        expectChanges(
          await changesAfter(storage, last),
          [
            row(4n, 1n, 10, 11, 'arrival', who, null, 'crate 7'),
            row(5n, 2n, 5, 6, 'return', who),
            row(6n, 3n, 0, 1, 'count', who, null, NOTE),
            row(7n, 1n, 11, 12, 'adjustment', who, null, ''),
            row(8n, 1n, 12, 13, 'adjustment', who),
            row(9n, 1n, 13, 14, 'adjustment', who),
          ],
          from,
          now(),
        )
      })

      for (const [what, precondition] of [
        ['plain sets (on PostgreSQL, set_inventory_quantities)', undefined],
        ['sets with preconditions (the planned path)', () => true],
      ] as const) {
        test(`When ${what} with reasons and notes share a commit, then each row records its own, in order`, async () => {
          const { storage } = fixture
          const last = await start()
          const from = now()
          const notes = [null, 'a', NOTE, 'n'.repeat(500), '🐕'.repeat(500), null]
          const reasons = ['count', 'arrival', 'return', 'adjustment', 'count', 'arrival'] as const
          const batch: StockWrite[] = notes.map((note, i) => ({
            kind: 'set',
            petId: BigInt(1 + (i % 2)),
            quantity: 100 + i,
            reason: reasons[i],
            note,
            actor: actor(i, `r${i}`),
            precondition,
          }))
          await Promise.all(batch.map((w) => storage.writeStock(w)))
          expectChanges(
            await changesAfter(storage, last),
            notes.map((note, i) =>
              row(
                4n + BigInt(i),
                BigInt(1 + (i % 2)),
                i < 2 ? START[i]!.quantity : 100 + i - 2,
                100 + i,
                reasons[i]!,
                actor(i, `r${i}`),
                null,
                note,
              ),
            ),
            from,
            now(),
          )
        })
      }
    })

    describe('place', () => {
      test('When an order is placed, then it answers the order, the stock goes down, and one order row records it', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        const result = await storage.writeStock({ kind: 'place', petId: 1n, quantity: 3, actor: who })
        const to = now()
        assert.ok(typeof result === 'object' && result.outcome === 'placed')
        assertTimeWithin(result.order.placedAt, from, to)
        assert.deepEqual(result, {
          outcome: 'placed',
          order: placed({ id: 1n, petId: 1n, quantity: 3 }, result.order.placedAt),
          replayed: false,
        })
        assert.deepEqual(await storage.getOrder(1n), result.order)
        assert.deepEqual(await allOrders(storage), [result.order])
        assert.deepEqual(await entries(), [item(1n, 7), START[1], START[2]])
        const changes = await changesAfter(storage, last)
        expectChanges(changes, [row(4n, 1n, 10, 7, 'order', who, 1n)], from, to)
        assert.equal(changes[0]!.at, result.order.placedAt)
      })

      test('When an order takes the whole stock, then it is placed and the stock is 0', async () => {
        const { storage } = fixture
        const last = await start()
        const result = await storage.writeStock({ kind: 'place', petId: 2n, quantity: 5, actor: who })
        assert.ok(typeof result === 'object' && result.outcome === 'placed')
        assert.deepEqual(result.order, placed({ id: 1n, petId: 2n, quantity: 5 }, result.order.placedAt))
        assert.deepEqual(await storage.getInventoryItem(2n), item(2n, 0, 'pending'))
        expectChanges(
          await changesAfter(storage, last),
          [row(4n, 2n, 5, 0, 'order', who, 1n)],
          result.order.placedAt,
          result.order.placedAt,
        )
      })

      test('When an order asks for more than the stock, then it answers insufficient_stock with what is available, and changes nothing', async () => {
        const { storage } = fixture
        const last = await start()
        assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 2n, quantity: 6, actor: who }), {
          outcome: 'insufficient_stock',
          available: 5,
          replayed: false,
        })
        assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 3n, quantity: 1, actor: who }), {
          outcome: 'insufficient_stock',
          available: 0,
          replayed: false,
        })
        assert.deepEqual(await entries(), START)
        assert.deepEqual(await allOrders(storage), [])
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When an order names a pet without an entry, then it answers not_found and places nothing', async () => {
        const { storage } = fixture
        const last = await start()
        assert.deepEqual(await storage.writeStock({ kind: 'place', petId: 9n, quantity: 1, actor: who }), {
          outcome: 'not_found',
          replayed: false,
        })
        assert.deepEqual(await allOrders(storage), [])
        assert.equal(await storage.getInventoryItem(9n), undefined)
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When orders are placed one after another, then their ids follow on from 1', async () => {
        const { storage } = fixture
        await start()
        const ids: bigint[] = []
        for (const petId of [1n, 2n, 1n]) {
          const r = await storage.writeStock({ kind: 'place', petId, quantity: 1, actor: who })
          assert.ok(typeof r === 'object' && r.outcome === 'placed')
          ids.push(r.order.id)
        }
        assert.deepEqual(ids, [1n, 2n, 3n])
        assert.deepEqual(
          (await allOrders(storage)).map((o) => [o.id, o.petId, o.quantity, o.status]),
          [
            [1n, 1n, 1, 'placed'],
            [2n, 2n, 1, 'placed'],
            [3n, 1n, 1, 'placed'],
          ],
        )
        assert.deepEqual(await entries(), [item(1n, 8), item(2n, 4, 'pending'), START[2]])
      })
    })

    describe('transition', () => {
      /** START with order 1 (pet 1, quantity 3) placed; answers it and the last seq. */
      const withOrder = async () => {
        await start()
        const r = await fixture.storage.writeStock({ kind: 'place', petId: 1n, quantity: 3, actor: who })
        assert.ok(typeof r === 'object' && r.outcome === 'placed')
        return { order: r.order, last: await fixture.storage.lastChangeSeq() }
      }

      test('When an order is approved then delivered, then each answers the order as moved, with no ledger row and the stock unchanged', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        const from = now()
        const approved = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'approved', actor: who })
        assert.ok(typeof approved === 'object' && 'status' in approved)
        assertTimeWithin(approved.updatedAt, from, now())
        assert.deepEqual(approved, { ...order, status: 'approved', updatedAt: approved.updatedAt })
        assert.deepEqual(await storage.getOrder(order.id), approved)
        const delivered = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'delivered', actor: who })
        assert.ok(typeof delivered === 'object' && 'status' in delivered)
        assert.deepEqual(delivered, { ...order, status: 'delivered', updatedAt: delivered.updatedAt })
        assert.ok(delivered.updatedAt >= approved.updatedAt)
        assert.deepEqual(await storage.getOrder(order.id), delivered)
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When an order is cancelled, then its quantity goes back to stock with one cancellation row', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        const from = now()
        const cancelled = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'cancelled', actor: actor(8, 'req-2') })
        const to = now()
        assert.ok(typeof cancelled === 'object' && 'status' in cancelled)
        assert.deepEqual(cancelled, { ...order, status: 'cancelled', updatedAt: cancelled.updatedAt })
        assertTimeWithin(cancelled.updatedAt, from, to)
        assert.deepEqual(await storage.getOrder(order.id), cancelled)
        assert.deepEqual(await storage.getInventoryItem(1n), START[0])
        expectChanges(await changesAfter(storage, last), [row(last + 1n, 1n, 7, 10, 'cancellation', actor(8, 'req-2'), order.id)], from, to)
      })

      test('When an approved order is cancelled, then its quantity goes back to stock too', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'approved', actor: who })
        await storage.writeStock({ kind: 'set', petId: 1n, quantity: 1, actor: who })
        const from = now()
        const cancelled = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'cancelled', actor: who })
        assert.ok(typeof cancelled === 'object' && 'status' in cancelled)
        assert.equal(cancelled.status, 'cancelled')
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 4))
        const changes = await changesAfter(storage, last)
        expectChanges(
          changes,
          [row(last + 1n, 1n, 7, 1, 'adjustment', who), row(last + 2n, 1n, 1, 4, 'cancellation', who, order.id)],
          changes[0]!.at,
          now(),
        )
        assert.ok(changes[1]!.at >= from)
      })

      test('When a transition is not allowed, then it answers invalid_transition with the status it came from, and changes nothing', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        const refuse = async (status: Order['status'], from: Order['status']) =>
          assert.deepEqual(await storage.writeStock({ kind: 'transition', orderId: order.id, status, actor: who }), {
            refused: 'invalid_transition',
            from,
          })
        await refuse('placed', 'placed')
        await refuse('delivered', 'placed')
        assert.deepEqual(await storage.getOrder(order.id), order)
        const delivered = [
          await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'approved', actor: who }),
          await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'delivered', actor: who }),
        ][1]
        await refuse('cancelled', 'delivered')
        await refuse('approved', 'delivered')
        assert.deepEqual(await storage.getOrder(order.id), delivered)
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When a cancelled order is moved again, then it is refused and its quantity is not returned twice', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        const cancelled = await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'cancelled', actor: who })
        for (const status of ['cancelled', 'approved', 'placed', 'delivered'] as const) {
          assert.deepEqual(await storage.writeStock({ kind: 'transition', orderId: order.id, status, actor: who }), {
            refused: 'invalid_transition',
            from: 'cancelled',
          })
        }
        assert.deepEqual(await storage.getOrder(order.id), cancelled)
        assert.deepEqual(await storage.getInventoryItem(1n), START[0])
        assert.equal((await changesAfter(storage, last)).length, 1)
      })

      test('When a cancellation would take the stock above the largest quantity, then it answers stock_overflow and changes nothing', async () => {
        const { storage } = fixture
        const { order } = await withOrder()
        await storage.writeStock({ kind: 'set', petId: 1n, quantity: MAX_QUANTITY - 2, actor: who })
        const last = await storage.lastChangeSeq()
        assert.deepEqual(await storage.writeStock({ kind: 'transition', orderId: order.id, status: 'cancelled', actor: who }), {
          refused: 'stock_overflow',
          stock: MAX_QUANTITY - 2,
        })
        assert.deepEqual(await storage.getOrder(order.id), order)
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, MAX_QUANTITY - 2))
        assert.deepEqual(await changesAfter(storage, last), [])
      })

      test('When a transition names no order, then it answers not_found and changes nothing', async () => {
        const { storage } = fixture
        const { order, last } = await withOrder()
        assert.equal(await storage.writeStock({ kind: 'transition', orderId: 2n, status: 'cancelled', actor: who }), 'not_found')
        assert.deepEqual(await allOrders(storage), [order])
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 7))
        assert.deepEqual(await changesAfter(storage, last), [])
      })
    })

    describe('ledger rows and commit order', () => {
      test('When writes are applied one after another, then each appends one row and seqs follow on without gaps', async () => {
        const { storage } = fixture
        const last = await start()
        const from = now()
        const writes: StockWrite[] = [
          { kind: 'set', petId: 1n, quantity: 12, actor: actor(1, 'a') },
          { kind: 'place', petId: 1n, quantity: 2, actor: actor(2, 'b') },
          { kind: 'set', petId: 9n, quantity: 1, actor: who }, // not_found: no row
          { kind: 'place', petId: 2n, quantity: 1, actor: actor(null, null) },
          { kind: 'transition', orderId: 1n, status: 'cancelled', actor: actor(3, 'c') },
          { kind: 'transition', orderId: 2n, status: 'approved', actor: who }, // applied, but no quantity changes: no row
          { kind: 'set', petId: 3n, quantity: 2, actor: who, precondition: () => false }, // refused: no row
          { kind: 'set', petId: 3n, quantity: 2, actor: actor(4, 'd') },
        ]
        for (const w of writes) await storage.writeStock(w)
        expectChanges(
          await changesAfter(storage, last),
          [
            row(4n, 1n, 10, 12, 'adjustment', actor(1, 'a')),
            row(5n, 1n, 12, 10, 'order', actor(2, 'b'), 1n),
            row(6n, 2n, 5, 4, 'order', actor(null, null), 2n),
            row(7n, 1n, 10, 12, 'cancellation', actor(3, 'c'), 1n),
            row(8n, 3n, 0, 2, 'adjustment', actor(4, 'd')),
          ],
          from,
          now(),
        )
        assert.equal(await storage.lastChangeSeq(), 8n)
        assert.deepEqual(await entries(), [item(1n, 12), item(2n, 4, 'pending'), item(3n, 2, 'sold')])
      })

      test('When 50 writes are submitted at once, then all land, and their rows follow submission order with consecutive seqs', async () => {
        const { storage } = fixture
        const last = await start()
        const writes: StockWrite[] = Array.from({ length: 50 }, (_, i) => ({
          kind: 'set',
          petId: BigInt((i % 3) + 1),
          quantity: 100 + i,
          actor: actor(i, `r${i}`),
        }))
        const from = now()
        const results = await Promise.all(writes.map((w) => storage.writeStock(w)))
        const to = now()
        assert.deepEqual(
          results,
          writes.map((_, i) => item(BigInt((i % 3) + 1), 100 + i, START[i % 3]!.status)),
        )
        expectChanges(
          await changesAfter(storage, last),
          writes.map((_, i) =>
            row(
              last + 1n + BigInt(i),
              BigInt((i % 3) + 1),
              i < 3 ? START[i]!.quantity : 100 + i - 3,
              100 + i,
              'adjustment',
              actor(i, `r${i}`),
            ),
          ),
          from,
          to,
        )
        assert.deepEqual(await entries(), [item(1n, 148), item(2n, 149, 'pending'), item(3n, 147, 'sold')])
      })

      test('When 50 placements and sets are submitted at once, then orders and rows follow submission order', async () => {
        const { storage } = fixture
        const last = await start()
        // Pet 1 alternately restocked to 1 and ordered by 1: every placement finds exactly its unit.
        const writes: StockWrite[] = Array.from({ length: 50 }, (_, i) =>
          i % 2 === 0
            ? { kind: 'set', petId: 1n, quantity: 1, actor: actor(i, `r${i}`) }
            : { kind: 'place', petId: 1n, quantity: 1, actor: actor(i, `r${i}`) },
        )
        const from = now()
        const results = await Promise.all(writes.map((w) => storage.writeStock(w)))
        const to = now()
        const orders = await allOrders(storage)
        assert.equal(orders.length, 25)
        results.forEach((r, i) => {
          if (i % 2 === 0) assert.deepEqual(r, item(1n, 1))
          else assert.deepEqual(r, { outcome: 'placed', order: orders[(i - 1) / 2], replayed: false })
        })
        assert.deepEqual(
          orders.map((o) => o.id),
          Array.from({ length: 25 }, (_, i) => BigInt(i + 1)),
        )
        expectChanges(
          await changesAfter(storage, last),
          writes.map((_, i) =>
            i % 2 === 0
              ? row(last + 1n + BigInt(i), 1n, i === 0 ? 10 : 0, 1, 'adjustment', actor(i, `r${i}`))
              : row(last + 1n + BigInt(i), 1n, 1, 0, 'order', actor(i, `r${i}`), BigInt((i + 1) / 2)),
          ),
          from,
          to,
        )
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 0))
      })

      test('When two storages write at once while a reader polls by last seq, then seqs are consecutive, each row starts where its pet was, and the reader misses none', async () => {
        const { storage } = fixture
        const last = await start()
        const other = await fixture.another()
        let writing = true
        const seen: bigint[] = []
        const poll = (async () => {
          let after = last
          while (writing || after < (await storage.lastChangeSeq())) {
            const rows = await storage.listChanges({ after, limit: 7 })
            for (const r of rows) seen.push(r.seq)
            after = rows.at(-1)?.seq ?? after
            await new Promise((resolve) => setImmediate(resolve))
          }
        })()
        const round = (s: typeof storage, base: number) =>
          Promise.all(
            Array.from(
              { length: 20 },
              (_, i): Promise<unknown> =>
                i % 4 === 3
                  ? s.writeStock({ kind: 'place', petId: 1n, quantity: 1, actor: actor(base + i, null) })
                  : s.writeStock({ kind: 'set', petId: BigInt((i % 2) + 1), quantity: base + i, actor: actor(base + i, null) }),
            ),
          )
        try {
          for (let r = 0; r < 3; r++) await Promise.all([round(storage, 100 * r), round(other, 100 * r + 1000)])
        } finally {
          writing = false
          await poll
        }
        const changes = await changesAfter(storage, last)
        assert.equal(changes.length, 6 * 20)
        assert.deepEqual(
          changes.map((c) => c.seq),
          Array.from({ length: 120 }, (_, i) => last + 1n + BigInt(i)),
        )
        // Replaying the ledger from the start gives every quantity as it is now: rows are in commit order.
        const running = new Map(START.map((i) => [i.petId, i.quantity]))
        for (const c of changes) {
          assert.equal(c.previousQuantity, running.get(c.petId), `seq ${c.seq} starts where pet ${c.petId} was`)
          running.set(c.petId, c.quantity)
        }
        assert.deepEqual(await entries(), [item(1n, running.get(1n)!), item(2n, running.get(2n)!, 'pending'), START[2]])
        assert.deepEqual(
          seen,
          changes.map((c) => c.seq),
          'the polling reader saw every seq once, in order',
        )
        assert.equal((await allOrders(storage)).length, 30)
      })

      test('When refused writes sit in the middle of a concurrent batch, then their neighbours land as if they were not there', async () => {
        const { storage } = fixture
        const last = await start()
        const writes: StockWrite[] = [
          { kind: 'set', petId: 1n, quantity: 20, actor: actor(1, 'a') },
          { kind: 'place', petId: 2n, quantity: 2, actor: actor(2, 'b') },
          { kind: 'set', petId: 2n, quantity: 0, actor: who, precondition: (c) => c.quantity === 5 }, // stale: 412
          { kind: 'set', petId: 42n, quantity: 1, actor: who }, // no entry: 404
          { kind: 'place', petId: 3n, quantity: 1, actor: who }, // no stock: 409
          { kind: 'transition', orderId: 99n, status: 'approved', actor: who }, // no order: 404
          { kind: 'transition', orderId: 1n, status: 'delivered', actor: who }, // placed -> delivered: 409
          { kind: 'place', petId: 1n, quantity: 20, actor: actor(3, 'c') },
          { kind: 'set', petId: 2n, quantity: 9, actor: actor(4, 'd'), precondition: (c) => c.quantity === 3 },
        ]
        const from = now()
        const results = await Promise.all(writes.map((w) => storage.writeStock(w)))
        const to = now()
        const orders = await allOrders(storage)
        assert.equal(orders.length, 2)
        assert.deepEqual(results, [
          item(1n, 20),
          { outcome: 'placed', order: orders[0], replayed: false },
          'precondition_failed',
          'not_found',
          { outcome: 'insufficient_stock', available: 0, replayed: false },
          'not_found',
          { refused: 'invalid_transition', from: 'placed' },
          { outcome: 'placed', order: orders[1], replayed: false },
          item(2n, 9, 'pending'),
        ])
        assert.deepEqual(
          orders.map((o) => [o.id, o.petId, o.quantity, o.status]),
          [
            [1n, 2n, 2, 'placed'],
            [2n, 1n, 20, 'placed'],
          ],
        )
        expectChanges(
          await changesAfter(storage, last),
          [
            row(4n, 1n, 10, 20, 'adjustment', actor(1, 'a')),
            row(5n, 2n, 5, 3, 'order', actor(2, 'b'), 1n),
            row(6n, 1n, 20, 0, 'order', actor(3, 'c'), 2n),
            row(7n, 2n, 3, 9, 'adjustment', actor(4, 'd')),
          ],
          from,
          to,
        )
        assert.deepEqual(await entries(), [item(1n, 0), item(2n, 9, 'pending'), START[2]])
      })
    })
  })
}
