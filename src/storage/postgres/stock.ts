import type { PetStatus } from '../../domain.js'
import { IDEMPOTENCY_TTL_MS, storedPlacement } from '../../stock/claims.js'
import { type BatchPlan, type BatchState, batchReads, planBatch } from '../../stock/planner.js'
import type { StockResult, StockWrite } from '../../stock/writes.js'
import { GroupCommit } from '../group-commit.js'
import { stockWritesThrough } from '../stock-writes.js'
import type { StockWrites } from '../ports.js'
import { lockInventory, type PostgresConnection, type Run, unavailable } from './connection.js'
import { insertPlanChanges } from './ledger.js'
import { ORDER_COLUMNS } from './orders.js'
import { type ClaimRow, type ItemRow, type OrderRow, toClaim, toItem, toOrder } from './rows.js'

/** The stock writes, and `drain` for close: it resolves once every write submitted so far is answered. */
export function postgresStock(db: PostgresConnection): StockWrites & { drain(): Promise<void> } {
  const { observer } = db
  // Half the pool commits batches; the rest stays free for reads and authentication.
  const groupCommit = new GroupCommit<StockWrite, StockResult>((batch, deadline) => commitStockWrites(db, batch, deadline), {
    maxInFlight: Math.max(1, db.poolSize >> 1),
    maxWaitMs: db.timeoutMs,
    expired: unavailable,
    onBatch: observer && ((writes, seconds) => observer.batchCommitted('postgres', writes, seconds)),
  })
  return stockWritesThrough(groupCommit)
}

/**
 * One transaction, one commit, for a whole batch, applied in submission order. A batch of plain
 * PATCHes is one call of set_inventory_quantities (migration 007): one round trip. Anything else
 * (If-Match preconditions, orders) locks the inventory_version row first, like every inventory
 * writer (see lockInventory), reads what planBatch needs, which no other writer can change until
 * the commit, and writes the plan in one statement.
 */
async function commitStockWrites(db: PostgresConnection, batch: StockWrite[], deadline: number): Promise<StockResult[]> {
  const at = new Date()
  const plain = batch.every((w) => w.kind === 'set' && !w.precondition)
  if (plain) {
    const sets = batch as Extract<StockWrite, { kind: 'set' }>[]
    const rows = await db.withConnection(deadline, (run) =>
      run<{ write_ord: string; write_status: PetStatus }>(
        `SELECT write_ord::text, write_status
         FROM set_inventory_quantities($1::bigint[], $2::integer[], $3::integer[], $4::text[], $5::text[], $6::text[], $7)`,
        [
          sets.map((w) => String(w.petId)),
          sets.map((w) => w.quantity),
          sets.map((w) => w.actor.keyId),
          sets.map((w) => w.actor.requestId),
          sets.map((w) => w.reason ?? 'adjustment'),
          sets.map((w) => w.note ?? null),
          at,
        ],
      ),
    )
    const status = new Map(rows.map((r) => [Number(r.write_ord) - 1, r.write_status]))
    return sets.map(({ petId, quantity }, i) => {
      const s = status.get(i)
      return s ? { petId, quantity, status: s } : 'not_found'
    })
  }
  return db.transaction(deadline, async (run) => {
    const reads = batchReads(batch)
    const state: BatchState = { entries: new Map(), orders: new Map(), claims: new Map(), ...(await lockInventory(run)) }
    if (reads.orderIds.size > 0) {
      const rows = await run<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ANY($1::bigint[])`, [
        [...reads.orderIds].map(String),
      ])
      for (const order of rows.map(toOrder)) {
        state.orders.set(order.id, order)
        reads.petIds.add(order.petId)
      }
    }
    const entries = await run<ItemRow>('SELECT pet_id::text AS pet_id, quantity, status FROM inventory WHERE pet_id = ANY($1::bigint[])', [
      [...reads.petIds].map(String),
    ])
    for (const item of entries.map(toItem)) state.entries.set(item.petId, item)
    if (reads.claims.length > 0) await readClaims(run, reads.claims, at, state)
    const plan = planBatch(batch, state, at.toISOString())
    await writePlan(run, plan, at)
    return plan.results
  })
}

/** The batch's unexpired Idempotency-Key claims, with the orders they placed; expired ones are purged a few at a time. */
async function readClaims(run: Run, claims: { keyId: number; key: string }[], at: Date, state: BatchState) {
  const since = new Date(at.getTime() - IDEMPOTENCY_TTL_MS)
  const rows = await run<ClaimRow>(
    `SELECT c.key_id, c.idempotency_key, c.fingerprint, c.outcome, c.order_id::text AS order_id, c.available,
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

/** A batch's plan, written by one statement (the transaction holds the inventory_version lock). */
async function writePlan(run: Run, plan: BatchPlan, at: Date) {
  const { quantities, newOrders, changedOrders, changes, claims } = plan
  const stored = claims.map((c) => storedPlacement(c.placement))
  const logged = insertPlanChanges(changes, 9, 20)
  await run(
    `WITH quantities AS (
         UPDATE inventory AS i SET quantity = v.quantity FROM unnest($1::bigint[], $2::integer[]) AS v(pet_id, quantity)
         WHERE i.pet_id = v.pet_id AND cardinality($1::bigint[]) > 0
       ), placed AS (
         INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
         SELECT id, pet_id, quantity, status, $20, $20 FROM unnest($3::bigint[], $4::bigint[], $5::integer[], $6::text[]) AS v(id, pet_id, quantity, status)
       ), moved AS (
         UPDATE orders AS o SET status = v.status, updated_at = $20 FROM unnest($7::bigint[], $8::text[]) AS v(id, status) WHERE o.id = v.id
       ), logged AS (
         ${logged.sql}
       ), claimed AS (
         INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at)
         SELECT v.*, $20 FROM unnest($21::integer[], $22::text[], $23::text[], $24::text[], $25::bigint[], $26::integer[]) AS v
         ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
           order_id = excluded.order_id, available = excluded.available, created_at = excluded.created_at
       )
       UPDATE inventory_version SET last_change = $18, last_order = $19`,
    [
      [...quantities.keys()].map(String),
      [...quantities.values()],
      newOrders.map((o) => String(o.id)),
      newOrders.map((o) => String(o.petId)),
      newOrders.map((o) => o.quantity),
      newOrders.map((o) => o.status),
      changedOrders.map((o) => String(o.id)),
      changedOrders.map((o) => o.status),
      ...logged.values,
      String(plan.lastChange),
      String(plan.lastOrder),
      at,
      claims.map((c) => c.keyId),
      claims.map((c) => c.key),
      claims.map((c) => c.fingerprint),
      stored.map((p) => p.outcome),
      stored.map((p) => (p.orderId === null ? null : String(p.orderId))),
      stored.map((p) => p.available),
    ],
  )
}
