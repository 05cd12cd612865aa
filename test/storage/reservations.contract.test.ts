// Holds (issue 47) through the storage port, on every backend: placed all or nothing (the units leave
// the entries at once, a reservation row a line), released, confirmed (the lines become orders, no
// units move) or extended while active, refused once ended, expired by the sweep's write exactly once
// (on PostgreSQL from two instances racing), and `petstore check`'s invariants holding throughout.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type InventoryItem, MAX_QUANTITY, type Reservation } from '../../src/domain.js'
import type { DueHold, Violation } from '../../src/storage/invariants.js'
import type { Storage } from '../../src/storage/ports.js'
import type { HoldLine, HoldResult, ReservationResult, StockWrite } from '../../src/stock/writes.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, changesAfter, INT64_MAX, item, seed } from './fixtures.js'

const who = actor(7, 'req-h')
const START = [item(1n, 10), item(2n, 5, 'pending'), item(INT64_MAX, 3, 'sold')]
const later = (ms: number) => new Date(Date.now() + ms).toISOString()
const past = (ms: number) => new Date(Date.now() - ms).toISOString()

const holdWrite = (
  lines: HoldLine[],
  expiresAt = later(900_000),
  options: { key?: string; fingerprint?: string; reference?: string } = {},
) =>
  ({
    kind: 'hold',
    lines,
    expiresAt,
    reference: options.reference ?? null,
    actor: who,
    ...(options.key ? { idempotency: { key: options.key, fingerprint: options.fingerprint ?? 'f' } } : {}),
  }) satisfies StockWrite

const act = (reservationId: bigint, action: 'release' | 'confirm' | 'extend', expiresAt?: string) =>
  ({ kind: 'reservation', reservationId, action, expiresAt, actor: who }) satisfies StockWrite

const expire = (...reservationIds: bigint[]) => ({ kind: 'expire', reservationIds, actor: actor(null, null) }) satisfies StockWrite

/** The hold a held answer carries (fails the test on any other). */
function held(result: HoldResult): Reservation {
  if (typeof result !== 'object' || result.outcome !== 'held') assert.fail(`expected a hold, got ${show(result)}`)
  return result.reservation
}

/** The hold an action left (fails the test on a refusal). */
function acted(result: ReservationResult): Extract<ReservationResult, { reservation: Reservation }> {
  if (typeof result !== 'object' || !('reservation' in result)) assert.fail(`expected the hold, got ${show(result)}`)
  return result
}

const show = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))

async function violations(storage: Storage): Promise<{ found: Violation[]; due: DueHold[] }> {
  const found: Violation[] = []
  const due: DueHold[] = []
  await storage.checkInvariants(
    (v) => found.push(v),
    (d) => due.push(d),
  )
  return { found, due }
}

for (const backend of BACKENDS) {
  describe(`Storage contract: holds (${backend.name})`, () => {
    const fixture = useStorage(backend)
    const start = async () => {
      await seed(fixture.storage, START)
      return fixture.storage.lastChangeSeq()
    }
    const entries = (): Promise<(InventoryItem | undefined)[]> => Promise.all(START.map((i) => fixture.storage.getInventoryItem(i.petId)))

    test('When a hold is placed, then its units leave the entries at once, a reservation row a line naming the hold', async () => {
      const { storage } = fixture
      const last = await start()
      const expiresAt = later(600_000)
      const r = held(
        await storage.writeStock(
          holdWrite(
            [
              { petId: 1n, quantity: 4 },
              { petId: INT64_MAX, quantity: 3 },
            ],
            expiresAt,
            { reference: 'cart-9' },
          ),
        ),
      )
      assert.deepEqual(
        { ...r, createdAt: '', updatedAt: '' },
        {
          id: 1n,
          status: 'active',
          lines: [
            { petId: 1n, quantity: 4, orderId: null },
            { petId: INT64_MAX, quantity: 3, orderId: null },
          ],
          expiresAt,
          reference: 'cart-9',
          createdAt: '',
          updatedAt: '',
        },
      )
      assert.equal(r.createdAt, r.updatedAt)
      assert.deepEqual(await entries(), [item(1n, 6), START[1], item(INT64_MAX, 0, 'sold')])
      const rows = await changesAfter(storage, last)
      assert.deepEqual(
        rows.map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.reservationId, c.orderId, c.keyId, c.requestId]),
        [
          [1n, 10, 6, 'reservation', 1n, null, 7, 'req-h'],
          [INT64_MAX, 3, 0, 'reservation', 1n, null, 7, 'req-h'],
        ],
      )
      assert.deepEqual(await storage.getReservation(1n), r)
      assert.deepEqual(await violations(storage), { found: [], due: [] })
    })

    test('When a line cannot be covered, then every short line is named and nothing is held; an unknown pet is named first', async () => {
      const { storage } = fixture
      const last = await start()
      assert.deepEqual(
        await storage.writeStock(
          holdWrite([
            { petId: 1n, quantity: 10 },
            { petId: 2n, quantity: 6 },
            { petId: INT64_MAX, quantity: 4 },
          ]),
        ),
        {
          outcome: 'unheld',
          refusal: {
            refused: 'insufficient_stock',
            short: [
              { index: 1, petId: 2n, available: 5, requested: 6 },
              { index: 2, petId: INT64_MAX, available: 3, requested: 4 },
            ],
          },
          replayed: false,
        },
      )
      assert.deepEqual(
        await storage.writeStock(
          holdWrite([
            { petId: 1n, quantity: 11 },
            { petId: 99n, quantity: 1 },
          ]),
        ),
        {
          outcome: 'unheld',
          refusal: { refused: 'not_found', index: 1, petId: 99n },
          replayed: false,
        },
      )
      assert.deepEqual(await entries(), START)
      assert.deepEqual(await changesAfter(storage, last), [])
      assert.equal(await storage.getReservation(1n), undefined)
    })

    test('When holds share a commit with orders on one pet, then each is judged on what the writes before it left', async () => {
      const { storage } = fixture
      await start()
      const results = await Promise.all([
        storage.writeStock(holdWrite([{ petId: 2n, quantity: 3 }])),
        storage.writeStock({ kind: 'place', petId: 2n, quantity: 2, actor: who }),
        storage.writeStock(holdWrite([{ petId: 2n, quantity: 1 }])),
      ])
      assert.equal((results[0] as { outcome: string }).outcome, 'held')
      assert.equal((results[1] as { outcome: string }).outcome, 'placed')
      assert.deepEqual(results[2], {
        outcome: 'unheld',
        refusal: { refused: 'insufficient_stock', short: [{ index: 0, petId: 2n, available: 0, requested: 1 }] },
        replayed: false,
      })
      assert.deepEqual(await storage.getInventoryItem(2n), item(2n, 0, 'pending'))
    })

    test('When a hold is released, then its units come back, a release row a line, and it cannot be released, confirmed or extended again', async () => {
      const { storage } = fixture
      await start()
      const r = held(
        await storage.writeStock(
          holdWrite([
            { petId: 1n, quantity: 4 },
            { petId: 2n, quantity: 5 },
          ]),
        ),
      )
      const last = await storage.lastChangeSeq()
      const released = acted(await storage.writeStock(act(r.id, 'release')))
      assert.equal(released.reservation.status, 'released')
      assert.deepEqual(released.orders, [])
      assert.deepEqual(await entries(), START)
      assert.deepEqual(
        (await changesAfter(storage, last)).map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.reservationId]),
        [
          [1n, 6, 10, 'release', r.id],
          [2n, 0, 5, 'release', r.id],
        ],
      )
      const end = await storage.lastChangeSeq()
      for (const action of ['release', 'confirm', 'extend'] as const)
        assert.deepEqual(await storage.writeStock(act(r.id, action, later(60_000))), { refused: 'reservation_released' })
      assert.equal(await storage.lastChangeSeq(), end)
      assert.deepEqual(await storage.getReservation(r.id), released.reservation)
      assert.deepEqual(await violations(storage), { found: [], due: [] })
    })

    test('When a hold is confirmed, then each line becomes a placed order, no units move, and a second confirm is refused', async () => {
      const { storage } = fixture
      await start()
      await storage.writeStock({ kind: 'place', petId: 1n, quantity: 1, actor: who })
      const r = held(
        await storage.writeStock(
          holdWrite([
            { petId: 1n, quantity: 4 },
            { petId: INT64_MAX, quantity: 2 },
          ]),
        ),
      )
      const last = await storage.lastChangeSeq()
      const confirmed = acted(await storage.writeStock(act(r.id, 'confirm')))
      assert.equal(confirmed.reservation.status, 'confirmed')
      assert.deepEqual(
        confirmed.orders.map((o) => [o.id, o.petId, o.quantity, o.status]),
        [
          [2n, 1n, 4, 'placed'],
          [3n, INT64_MAX, 2, 'placed'],
        ],
      )
      assert.deepEqual(
        confirmed.reservation.lines.map((l) => l.orderId),
        [2n, 3n],
      )
      assert.deepEqual(await entries(), [item(1n, 5), START[1], item(INT64_MAX, 1, 'sold')])
      assert.deepEqual(
        (await changesAfter(storage, last)).map((c) => [c.petId, c.previousQuantity, c.quantity, c.reason, c.orderId, c.reservationId]),
        [
          [1n, 5, 5, 'order', 2n, r.id],
          [INT64_MAX, 1, 1, 'order', 3n, r.id],
        ],
      )
      assert.deepEqual(await storage.getOrder(3n), confirmed.orders[1])
      assert.deepEqual(await storage.writeStock(act(r.id, 'confirm')), { refused: 'reservation_confirmed' })
      assert.deepEqual(await storage.writeStock(act(r.id, 'release')), { refused: 'reservation_confirmed' })
      // An order of a hold is cancelled like any other: its units come back.
      await storage.writeStock({ kind: 'transition', orderId: 2n, status: 'cancelled', actor: who })
      assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 9))
      assert.deepEqual(await violations(storage), { found: [], due: [] })
    })

    test('When a hold is extended, then its expiry moves; once due, every action expires it and answers reservation_expired', async () => {
      const { storage } = fixture
      await start()
      const r = held(await storage.writeStock(holdWrite([{ petId: 1n, quantity: 2 }], later(60_000))))
      const expiresAt = later(3_600_000)
      const extended = acted(await storage.writeStock(act(r.id, 'extend', expiresAt)))
      assert.deepEqual([extended.reservation.status, extended.reservation.expiresAt], ['active', expiresAt])
      const due = held(await storage.writeStock(holdWrite([{ petId: 2n, quantity: 5 }], past(1))))
      assert.deepEqual((await violations(storage)).due, [{ reservationId: due.id, expiresAt: due.expiresAt, lines: 1, units: 5 }])
      const last = await storage.lastChangeSeq()
      assert.deepEqual(await storage.writeStock(act(due.id, 'confirm')), { refused: 'reservation_expired' })
      assert.deepEqual(await storage.getInventoryItem(2n), START[1])
      assert.deepEqual(
        (await changesAfter(storage, last)).map((c) => [c.petId, c.reason, c.reservationId]),
        [[2n, 'expiry', due.id]],
      )
      assert.equal((await storage.getReservation(due.id))!.status, 'expired')
      assert.deepEqual(await storage.writeStock(act(due.id, 'release')), { refused: 'reservation_expired' })
      assert.deepEqual(await violations(storage), { found: [], due: [] })
    })

    test('When the sweep expires due holds, then each gives its units back once; active holds not due, and ended ones, are left', async () => {
      const { storage } = fixture
      await start()
      const a = held(await storage.writeStock(holdWrite([{ petId: 1n, quantity: 1 }], past(2_000))))
      const b = held(
        await storage.writeStock(
          holdWrite(
            [
              { petId: 1n, quantity: 2 },
              { petId: 2n, quantity: 1 },
            ],
            past(1_000),
          ),
        ),
      )
      const c = held(await storage.writeStock(holdWrite([{ petId: 1n, quantity: 3 }], later(60_000))))
      const d = held(await storage.writeStock(holdWrite([{ petId: 2n, quantity: 1 }], past(500))))
      acted(await storage.writeStock(act(c.id, 'release')))
      assert.deepEqual(await storage.dueReservations(new Date().toISOString(), 10), [a.id, b.id, d.id])
      assert.deepEqual(await storage.dueReservations(new Date().toISOString(), 2), [a.id, b.id])
      assert.deepEqual(await storage.writeStock(expire(a.id, b.id, c.id, 77n)), { expired: [a.id, b.id], overflowed: [] })
      assert.deepEqual(await storage.writeStock(expire(a.id, b.id, d.id)), { expired: [d.id], overflowed: [] })
      assert.deepEqual(await storage.dueReservations(new Date().toISOString(), 10), [])
      assert.deepEqual(await entries(), START)
      assert.deepEqual(
        (await storage.listReservations({ after: 0n, limit: 10 })).map((r) => [r.id, r.status]),
        [
          [a.id, 'expired'],
          [b.id, 'expired'],
          [c.id, 'released'],
          [d.id, 'expired'],
        ],
      )
      assert.deepEqual(
        (await storage.listReservations({ after: a.id, limit: 2, status: 'expired' })).map((r) => r.id),
        [b.id, d.id],
      )
      assert.deepEqual(await violations(storage), { found: [], due: [] })
    })

    test('When giving a hold back would pass 2147483647, then release answers stock_overflow and the sweep leaves it due', async () => {
      const { storage } = fixture
      await start()
      const r = held(await storage.writeStock(holdWrite([{ petId: 1n, quantity: 4 }], past(1))))
      await storage.writeStock({ kind: 'set', petId: 1n, quantity: MAX_QUANTITY - 1, actor: who })
      assert.deepEqual(await storage.writeStock(expire(r.id)), { expired: [], overflowed: [r.id] })
      assert.deepEqual(await storage.writeStock(act(r.id, 'release')), { refused: 'reservation_expired' })
      assert.equal((await storage.getReservation(r.id))!.status, 'active')
      const { found, due } = await violations(storage)
      assert.deepEqual(found, [])
      assert.deepEqual(
        due.map((d) => d.reservationId),
        [r.id],
      )
      const fresh = held(await storage.writeStock(holdWrite([{ petId: 2n, quantity: 1 }])))
      await storage.writeStock({ kind: 'set', petId: 2n, quantity: MAX_QUANTITY, actor: who })
      assert.deepEqual(await storage.writeStock(act(fresh.id, 'release')), { refused: 'stock_overflow', petId: 2n, stock: MAX_QUANTITY })
    })

    test('When a hold is retried with its Idempotency-Key, then it answers as it first did and holds nothing more', async () => {
      const { storage } = fixture
      await start()
      const write = holdWrite([{ petId: 1n, quantity: 4 }], later(60_000), { key: 'cart-1', fingerprint: 'f1' })
      const first = await storage.writeStock(write)
      const r = held(first)
      acted(await storage.writeStock(act(r.id, 'release')))
      assert.deepEqual(await storage.writeStock(write), { ...(first as object), replayed: true })
      assert.deepEqual(await storage.writeStock({ ...write, idempotency: { key: 'cart-1', fingerprint: 'f2' } }), 'idempotency_key_reused')
      const refused = holdWrite([{ petId: 1n, quantity: 99 }], later(60_000), { key: 'cart-2' })
      const answer = await storage.writeStock(refused)
      assert.equal((answer as { outcome: string }).outcome, 'unheld')
      assert.deepEqual(await storage.writeStock(refused), { ...(answer as object), replayed: true })
      assert.deepEqual(await entries(), START)
      assert.equal((await storage.listReservations({ after: 0n, limit: 10 })).length, 1)
    })

    if (backend.name === 'postgres') {
      test('When two instances race to expire the same due holds, then each hold gives its units back exactly once', async () => {
        const { storage } = fixture
        await start()
        const other = await fixture.another()
        const ids: bigint[] = []
        for (let i = 0; i < 10; i++) ids.push(held(await storage.writeStock(holdWrite([{ petId: 1n, quantity: 1 }], past(100)))).id)
        const results = await Promise.all([storage, other, storage, other].map((s) => s.writeStock(expire(...ids))))
        const expired = results.flatMap((r) => r.expired).sort((x, y) => (x < y ? -1 : 1))
        assert.deepEqual(expired, ids)
        assert.deepEqual(await storage.getInventoryItem(1n), START[0])
        assert.deepEqual(await violations(other), { found: [], due: [] })
      })
    }
  })
}
