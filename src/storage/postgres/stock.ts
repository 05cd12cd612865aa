import type { Order, PetStatus } from '../../domain.js'
import { claimKey, IDEMPOTENCY_TTL_MS, storedAnswer } from '../../stock/claims.js'
import {
  addHoldPets,
  type BatchPlan,
  type BatchReads,
  type BatchState,
  batchReads,
  LevelsNotRead,
  locationReads,
  namesLocations,
  planBatch,
  touchesHolds,
} from '../../stock/planner.js'
import type { ChangeRefusal, StockChange, StockResult, StockWrite } from '../../stock/writes.js'
import { GroupCommit } from '../group-commit.js'
import { stockWritesThrough } from '../stock-writes.js'
import type { StockWrites } from '../ports.js'
import { lockInventory, type PostgresConnection, type Run, unavailable } from './connection.js'
import { changeArrays, insertPlanChanges, placeArrays } from './ledger.js'
import { readLevels, readLocationStates } from './locations.js'
import { ALLOCATIONS_JSON, ORDER_COLUMNS } from './orders.js'
import { lastReservationId, readReservations, writeReservations } from './reservations.js'
import { type ClaimRow, type ItemRow, type OrderRow, toClaim, toItem, toOrder } from './rows.js'
import { intArray, textArray } from './array-literals.js'

/** What a write touches, for GroupCommit's `touches`: its (first) pet, or the order or hold it names. */
function touches(write: StockWrite): unknown {
  switch (write.kind) {
    case 'transition':
      return `order ${write.orderId}`
    case 'changes':
      return write.changes[0]!.petId
    case 'hold':
      return write.lines[0]!.petId
    case 'reservation':
      return `hold ${write.reservationId}`
    case 'expire':
      return 'holds due'
    default:
      return write.petId
  }
}

/** The stock writes, and `drain` for close: it resolves once every write submitted so far is answered. */
export function postgresStock(db: PostgresConnection): StockWrites & { drain(): Promise<void> } {
  const { observer } = db
  // Half the pool commits batches; the rest stays free for reads and authentication.
  const groupCommit = new GroupCommit<StockWrite, StockResult>((batch, deadline) => commitStockWrites(db, batch, deadline), {
    maxInFlight: Math.max(1, db.poolSize >> 1),
    maxWaitMs: db.timeoutMs,
    expired: unavailable,
    dialect: 'postgres',
    onBatch: observer && ((writes, seconds) => observer.batchCommitted('postgres', writes, seconds)),
    // Batches in flight at once name different pets: a flash sale (every order for one pet) commits
    // one large batch at a time instead of many that conflict and are planned again under the lock.
    // An order moved by id names its pet only once read; a conflict there is still caught and replanned.
    // Changes name their first pet: an adjustment its only one; a batch's others may still conflict.
    touches,
  })
  return stockWritesThrough(groupCommit)
}

/**
 * One transaction, one commit, for a whole batch, applied in submission order. A batch of plain
 * PATCHes is one call of set_inventory_quantities (migration 007, 017), a batch of plain adjustments
 * one of adjust_inventory_quantities (019): one round trip. Anything else
 * (If-Match preconditions, compare quantities, changes, orders) is read in one statement, planned, and
 * applied by one call of apply_stock_plan (migration 010, 017, 019), which holds the inventory_version lock only for itself and
 * applies the plan only if what it was made from is unchanged: two round trips, none under the
 * lock. When another writer changed it meanwhile, the batch is planned again the sure way: the lock
 * first, like every inventory writer (see lockInventory), then the reads, which no other writer can
 * change until the commit, then the plan in one statement.
 */
async function commitStockWrites(db: PostgresConnection, batch: StockWrite[], deadline: number): Promise<StockResult[]> {
  const at = new Date()
  // At the default location, by a key that reaches it as every key does: keys held to locations go the planner's way.
  const plain = batch.every(
    (w) => w.kind === 'set' && !w.precondition && w.expectedQuantity === undefined && w.locationId === undefined && !w.actor.locations,
  )
  if (plain) {
    const sets = batch as Extract<StockWrite, { kind: 'set' }>[]
    const rows = await db.withConnection(deadline, (run) =>
      run<{ write_ord: string; write_quantity: string; write_status: PetStatus }>(
        `SELECT write_ord::text, write_quantity::text, write_status
         FROM set_default_quantities($1::bigint[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8)`,
        [
          sets.map((w) => String(w.petId)),
          sets.map((w) => w.quantity),
          sets.map((w) => w.actor.keyId),
          sets.map((w) => w.actor.requestId),
          sets.map((w) => w.reason ?? 'adjustment'),
          sets.map((w) => w.note ?? null),
          sets.map((w) => w.actor.traceContext ?? null),
          at,
        ],
      ),
    )
    // Ord 0: one of them would take its entry past the bound; nothing was written, and the general way refuses that one alone.
    if (rows[0]?.write_ord !== '0') {
      const written = new Map(rows.map((r) => [Number(r.write_ord) - 1, r]))
      return sets.map(({ petId }, i) => {
        const r = written.get(i)
        return r ? { petId, quantity: Number(r.write_quantity), status: r.write_status } : 'not_found'
      })
    }
  } else if (batch.every(plainDelta)) return adjustQuantities(db, batch as PlainDelta[], deadline, at)
  // A batch that writes holds or names a location is planned under the lock at once: apply_stock_plan
  // knows no holds, nor any location but the default one.
  if (!touchesHolds(batch) && !namesLocations(batchReads(batch))) {
    const applied = await db.withConnection(deadline, (run) => applyUnlocked(run, batch, at))
    if (applied !== undefined) return applied
    db.observer?.stockReplanned()
  }
  return db.transaction(deadline, async (run) => {
    const reads = batchReads(batch)
    const state: BatchState = {
      entries: new Map(),
      orders: new Map(),
      claims: new Map(),
      reservations: new Map(),
      elsewhere: new Map(),
      levels: new Map(),
      locations: new Map(),
      ...(await lockInventory(run)),
    }
    if (reads.placesHold) state.lastReservation = await lastReservationId(run)
    await readReservations(run, reads.reservationIds, state.reservations!)
    for (const r of state.reservations!.values()) addHoldPets(r, reads.petIds)
    if (reads.orderIds.size > 0) {
      const rows = await run<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ANY($1::bigint[])`, [
        [...reads.orderIds].map(String),
      ])
      for (const order of rows.map(toOrder)) {
        state.orders.set(order.id, order)
        reads.petIds.add(order.petId)
      }
    }
    const entries = await run<ItemRow & { elsewhere: number }>(
      'SELECT pet_id::text AS pet_id, quantity, status, elsewhere FROM inventory WHERE pet_id = ANY($1::bigint[])',
      [[...reads.petIds].map(String)],
    )
    for (const row of entries) {
      const item = toItem(row)
      state.entries.set(item.petId, item)
      if (row.elsewhere !== 0) state.elsewhere!.set(item.petId, row.elsewhere)
    }
    const { levelPets, maybeLevelPets, locationIds } = locationReads(reads, state)
    await readLevels(run, new Set([...levelPets, ...maybeLevelPets]), state.levels!)
    await readLocationStates(run, locationIds, state.locations!)
    if (reads.claims.length > 0) await readClaims(run, reads.claims, at, state)
    const plan = planBatch(batch, state, at.toISOString())
    await writeReservations(run, plan.newReservations, plan.changedReservations)
    await writePlan(run, plan, at)
    return plan.results
  })
}

/** An adjustment alone: one delta, no batch id, no Idempotency-Key. */
type PlainDelta = Extract<StockWrite, { kind: 'changes' }> & { changes: [Extract<StockChange, { delta: number }>] }

const plainDelta = (w: StockWrite): w is PlainDelta =>
  w.kind === 'changes' &&
  w.batchId === null &&
  !w.idempotency &&
  w.changes.length === 1 &&
  'delta' in w.changes[0]! &&
  w.changes[0].locationId === undefined &&
  !w.actor.locations

/**
 * A batch of plain adjustments (at the default location) in one call of adjust_default_quantities
 * (migration 021), as plain PATCHes go through set_default_quantities: one round trip, the planner's
 * rules for deltas in SQL.
 */
async function adjustQuantities(db: PostgresConnection, batch: PlainDelta[], deadline: number, at: Date): Promise<StockResult[]> {
  const changes = batch.map((w) => w.changes[0])
  const rows = await db.withConnection(deadline, (run) =>
    run<{
      write_outcome: 'applied' | 'not_found' | 'insufficient_stock' | 'stock_overflow'
      write_found: number | null
      write_quantity: number | null
      write_status: PetStatus | null
    }>(
      `SELECT write_outcome, write_found, write_quantity, write_status
       FROM adjust_default_quantities($1::bigint[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::text[], $8)
       ORDER BY write_ord`,
      [
        changes.map((c) => String(c.petId)),
        changes.map((c) => c.delta),
        batch.map((w) => w.actor.keyId),
        batch.map((w) => w.actor.requestId),
        changes.map((c) => c.reason ?? 'adjustment'),
        changes.map((c) => c.note ?? null),
        batch.map((w) => w.actor.traceContext ?? null),
        at,
      ],
    ),
  )
  return rows.map((r, i): StockResult => {
    const { petId, delta } = changes[i]!
    if (r.write_outcome === 'applied')
      return {
        outcome: 'applied',
        batchId: null,
        entries: [{ petId, quantity: r.write_quantity!, status: r.write_status! }],
        replayed: false,
      }
    const refusal: ChangeRefusal =
      r.write_outcome === 'not_found' ? { refused: 'not_found' } : { refused: r.write_outcome, found: r.write_found!, delta }
    return { outcome: 'refused', index: 0, refusal, replayed: false }
  })
}

/** Whether planning the batch surely needs stock levels (which only a plan under the lock reads). */
const needsLevels = (reads: BatchReads, state: BatchState) => locationReads(reads, state).levelPets.size > 0

/** A batch's state as read without the lock, and when each live claim it read was made (to check it was not replaced). */
interface UnlockedRead {
  state: BatchState
  petIds: bigint[]
  claimsMade: Map<string, string>
}

/**
 * Reads what planBatch needs in one statement (one snapshot), plans, and applies the plan with
 * apply_stock_plan; undefined when the function found something read changed (nothing was written).
 */
async function applyUnlocked(run: Run, batch: StockWrite[], at: Date): Promise<StockResult[] | undefined> {
  const reads = batchReads(batch)
  const since = new Date(at.getTime() - IDEMPOTENCY_TTL_MS)
  const { state, petIds, claimsMade } = await readUnlocked(run, reads, since)
  // Levels to read (an order that took stock elsewhere, given back; an order the default location does
  // not cover): the plan is made under the lock, which reads them.
  if (needsLevels(reads, state)) return undefined
  let plan: BatchPlan
  try {
    plan = planBatch(batch, state, at.toISOString())
  } catch (error) {
    if (error instanceof LevelsNotRead) return undefined
    throw error
  }
  const claimed = reads.claims.map((c) => claimsMade.get(claimKey(c.keyId, c.key)) ?? null)
  const orderIds = [...reads.orderIds]
  const [result] = await run<{ applied: boolean; change_shift: string; order_shift: string }>(
    `SELECT applied, change_shift::text, order_shift::text FROM apply_stock_plan(${Array.from({ length: 41 }, (_, i) => `$${i + 1}`).join(', ')})`,
    [
      String(state.lastChange),
      String(state.lastOrder),
      intArray(petIds),
      intArray(petIds.map((id) => state.entries.get(id)?.quantity)),
      textArray(petIds.map((id) => state.entries.get(id)?.status)),
      intArray(petIds.map((id) => (state.entries.has(id) ? (state.elsewhere!.get(id) ?? 0) : undefined))),
      orderIds.map(String),
      orderIds.map((id) => state.orders.get(id)?.status ?? null),
      reads.claims.map((c) => c.keyId),
      reads.claims.map((c) => c.key),
      claimed,
      since,
      ...planParameters(plan, at),
    ],
  )
  if (!result?.applied) return undefined
  return shiftOrderIds(plan.results, state.lastOrder, BigInt(result.order_shift))
}

/**
 * The batch's entries (those its writes name and those of the orders it moves), orders, live claims
 * and the counters, in one statement, so they are one snapshot; JSON carries the three sets in one row.
 * The entries are named by one array: `ANY($1) OR pet_id IN (SELECT ...)` was planned as a scan of the
 * whole inventory (Rows Removed by Filter: 9999 of 10,000; 49 ms a commit at 1,000,000 entries,
 * against 0.5 ms by the index).
 */
async function readUnlocked(run: Run, reads: ReturnType<typeof batchReads>, since: Date): Promise<UnlockedRead> {
  const [row] = await run<{
    last_change: string
    last_order: string
    entries: (ItemRow & { elsewhere: number })[]
    orders: (Omit<OrderRow, 'placed_at' | 'updated_at'> & { placed_at: string; updated_at: string })[]
    claims: (Omit<ClaimRow, 'placed_at'> & { placed_at: string | null; made: string })[]
  }>(
    `WITH o AS (SELECT id, pet_id, quantity, status, placed_at, updated_at, ${ALLOCATIONS_JSON} AS allocations FROM orders WHERE id = ANY($2::bigint[]))
     SELECT v.last_change::text AS last_change, v.last_order::text AS last_order,
       (SELECT coalesce(json_agg(json_build_object('pet_id', i.pet_id::text, 'quantity', i.quantity, 'status', i.status,
          'elsewhere', i.elsewhere)), '[]')
          FROM inventory AS i WHERE i.pet_id = ANY($1::bigint[] || ARRAY(SELECT pet_id FROM o))) AS entries,
       (SELECT coalesce(json_agg(json_build_object('id', o.id::text, 'pet_id', o.pet_id::text, 'quantity', o.quantity,
          'status', o.status, 'placed_at', o.placed_at, 'updated_at', o.updated_at, 'allocations', o.allocations)), '[]') FROM o) AS orders,
       (SELECT coalesce(json_agg(json_build_object('key_id', c.key_id, 'idempotency_key', c.idempotency_key,
          'fingerprint', c.fingerprint, 'outcome', c.outcome, 'order_id', c.order_id::text, 'available', c.available,
          'answer', c.answer, 'pet_id', po.pet_id::text, 'quantity', po.quantity, 'placed_at', po.placed_at,
          'made', ((extract(epoch FROM c.created_at) * 1000000)::bigint)::text)), '[]')
          FROM unnest($3::integer[], $4::text[]) AS k(key_id, idempotency_key)
          JOIN idempotency_keys AS c USING (key_id, idempotency_key)
          LEFT JOIN orders AS po ON po.id = c.order_id
          WHERE c.created_at > $5) AS claims
     FROM inventory_version AS v`,
    [intArray([...reads.petIds]), [...reads.orderIds].map(String), reads.claims.map((c) => c.keyId), reads.claims.map((c) => c.key), since],
  )
  const state: BatchState = {
    entries: new Map(),
    orders: new Map(),
    claims: new Map(),
    lastChange: BigInt(row!.last_change),
    lastOrder: BigInt(row!.last_order),
    elsewhere: new Map(),
  }
  const petIds = new Set(reads.petIds)
  for (const r of row!.orders) {
    const order = toOrder({ ...r, placed_at: new Date(r.placed_at), updated_at: new Date(r.updated_at) })
    state.orders.set(order.id, order)
    petIds.add(order.petId)
  }
  for (const r of row!.entries) {
    const item = toItem(r)
    state.entries.set(item.petId, item)
    if (r.elsewhere !== 0) state.elsewhere!.set(item.petId, r.elsewhere)
  }
  const claimsMade = new Map<string, string>()
  for (const r of row!.claims) {
    const [key, claim] = toClaim({ ...r, placed_at: r.placed_at === null ? null : new Date(r.placed_at) })
    state.claims.set(key, claim)
    claimsMade.set(key, r.made)
  }
  return { state, petIds: [...petIds], claimsMade }
}

/**
 * The answers with the ids of orders the batch placed moved by `shift`: planned after the counter as
 * read (`readOrder`), given out after the counter as it was under the lock.
 */
function shiftOrderIds(results: StockResult[], readOrder: bigint, shift: bigint): StockResult[] {
  if (shift === 0n) return results
  const moved = (order: Order): Order => (order.id > readOrder ? { ...order, id: order.id + shift } : order)
  return results.map((r) => {
    if (typeof r !== 'object') return r
    if ('outcome' in r) return r.outcome === 'placed' ? { ...r, order: moved(r.order) } : r
    if ('id' in r) return moved(r)
    return r
  })
}

/** The batch's unexpired Idempotency-Key claims, with the orders they placed; expired ones are purged a few at a time. */
async function readClaims(run: Run, claims: { keyId: number; key: string }[], at: Date, state: BatchState) {
  const since = new Date(at.getTime() - IDEMPOTENCY_TTL_MS)
  const rows = await run<ClaimRow>(
    `SELECT c.key_id, c.idempotency_key, c.fingerprint, c.outcome, c.order_id::text AS order_id, c.available, c.answer,
         o.pet_id::text AS pet_id, o.quantity, o.placed_at
       FROM unnest($1::integer[], $2::text[]) AS k(key_id, idempotency_key)
       JOIN idempotency_keys AS c USING (key_id, idempotency_key)
       LEFT JOIN orders AS o ON o.id = c.order_id
       WHERE c.created_at > $3`,
    [claims.map((c) => c.keyId), claims.map((c) => c.key), since],
  )
  for (const [key, claim] of rows.map(toClaim)) state.claims.set(key, claim)
  await run(
    `DELETE FROM idempotency_keys WHERE (key_id, idempotency_key) IN
         (SELECT key_id, idempotency_key FROM idempotency_keys WHERE created_at <= $1 ORDER BY created_at LIMIT 100)`,
    [since],
  )
}

/**
 * A plan as statement parameters, in the order both writePlan's statement and apply_stock_plan take
 * them: quantities, orders placed, orders moved, ledger rows (changeArrays), the counters, the time,
 * and the claims made.
 */
function planParameters(plan: BatchPlan, at: Date): unknown[] {
  const { quantities, newOrders, changedOrders, changes, claims } = plan
  const stored = claims.map((c) => storedAnswer(c.answer))
  return [
    intArray([...quantities.keys()]),
    intArray([...quantities.values()]),
    newOrders.map((o) => String(o.id)),
    newOrders.map((o) => String(o.petId)),
    newOrders.map((o) => o.quantity),
    newOrders.map((o) => o.status),
    changedOrders.map((o) => String(o.id)),
    changedOrders.map((o) => o.status),
    ...changeArrays(changes),
    String(plan.lastChange),
    String(plan.lastOrder),
    at,
    claims.map((c) => c.keyId),
    claims.map((c) => c.key),
    claims.map((c) => c.fingerprint),
    stored.map((p) => p.outcome),
    stored.map((p) => (p.orderId === null ? null : String(p.orderId))),
    stored.map((p) => p.available),
    stored.map((p) => p.answer),
  ]
}

/** A batch's plan, written by one statement (the transaction holds the inventory_version lock). */
async function writePlan(run: Run, plan: BatchPlan, at: Date) {
  const quantityIds = [...plan.quantities.keys()]
  const allocations = plan.newOrders.flatMap((o) => (o.allocations ?? []).map((a, position) => ({ orderId: o.id, position, ...a })))
  const levels = [...plan.levels].flatMap(([petId, own]) => [...own].map(([locationId, quantity]) => ({ petId, locationId, quantity })))
  await run(
    `WITH quantities AS (
         UPDATE inventory AS i SET quantity = v.quantity, elsewhere = coalesce(v.elsewhere, i.elsewhere)
         FROM unnest($1::bigint[], $2::integer[], $33::integer[]) AS v(pet_id, quantity, elsewhere)
         WHERE i.pet_id = v.pet_id AND cardinality($1::bigint[]) > 0
       ), placed AS (
         INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
         SELECT id, pet_id, quantity, status, $22, $22 FROM unnest($3::bigint[], $4::bigint[], $5::integer[], $6::text[]) AS v(id, pet_id, quantity, status)
       ), allocated AS (
         INSERT INTO order_allocations (order_id, position, location_id, quantity)
         SELECT * FROM unnest($34::bigint[], $35::integer[], $36::integer[], $37::integer[])
       ), levels AS (
         INSERT INTO stock_levels (pet_id, location_id, quantity)
         SELECT * FROM unnest($38::bigint[], $39::integer[], $40::integer[])
         ON CONFLICT (pet_id, location_id) DO UPDATE SET quantity = excluded.quantity
       ), moved AS (
         UPDATE orders AS o SET status = v.status, updated_at = $22 FROM unnest($7::bigint[], $8::text[]) AS v(id, status) WHERE o.id = v.id
       ), logged AS (
         ${insertPlanChanges(9, 22, 30)}
       ), claimed AS (
         INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, answer, created_at)
         SELECT v.*, $22 FROM unnest($23::integer[], $24::text[], $25::text[], $26::text[], $27::bigint[], $28::integer[], $29::text[]) AS v
         ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
           order_id = excluded.order_id, available = excluded.available, answer = excluded.answer, created_at = excluded.created_at
       )
       UPDATE inventory_version SET last_change = $20, last_order = $21`,
    [
      ...planParameters(plan, at),
      ...placeArrays(plan.changes),
      intArray(quantityIds.map((id) => plan.elsewhere.get(id))),
      intArray(allocations.map((a) => a.orderId)),
      intArray(allocations.map((a) => a.position)),
      intArray(allocations.map((a) => a.locationId)),
      intArray(allocations.map((a) => a.quantity)),
      intArray(levels.map((l) => l.petId)),
      intArray(levels.map((l) => l.locationId)),
      intArray(levels.map((l) => l.quantity)),
    ],
  )
}
