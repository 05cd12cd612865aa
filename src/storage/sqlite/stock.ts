import { IDEMPOTENCY_TTL_MS, claimKey } from '../../stock/claims.js'
import { addHoldPets, batchReads, locationReads, planBatch, rowsOf, type BatchState } from '../../stock/planner.js'
import type { StockResult, StockWrite } from '../../stock/writes.js'
import { GroupCommit } from '../group-commit.js'
import { stockWritesThrough } from '../stock-writes.js'
import type { StockWrites, StorageObserver } from '../ports.js'
import { busyError, type SqliteConnection } from './connection.js'
import { purgeClaims, readClaim, writeClaims } from './idempotency.js'
import { readEntries, writeQuantities } from './inventory.js'
import { appendChanges, lastIssuedSeq } from './ledger.js'
import { readLevels, readLocationStates, writeLevels } from './locations.js'
import { lastOrderId, readOrder, writeOrders } from './orders.js'
import { lastReservationId, readReservations, writeReservations } from './reservations.js'

/**
 * A batch of stock writes inside its IMMEDIATE transaction: reads what planBatch needs (SQLite has
 * one writer at a time, so nothing changes meanwhile), then writes its plan.
 */
function applyStockWrites(conn: SqliteConnection, batch: StockWrite[]): StockResult[] {
  const now = Date.now()
  const at = new Date(now).toISOString()
  const reads = batchReads(batch)
  const state: BatchState = {
    entries: new Map(),
    orders: new Map(),
    claims: new Map(),
    reservations: new Map(),
    lastChange: lastIssuedSeq(conn),
    // The last order and hold ids are read only when the batch may place one (a confirm places orders).
    lastOrder: batch.some((w) => w.kind === 'place' || w.kind === 'reservation') ? lastOrderId(conn) : 0n,
    lastReservation: reads.placesHold ? lastReservationId(conn) : 0n,
    elsewhere: new Map(),
    levels: new Map(),
    locations: new Map(),
  }
  readReservations(conn, reads.reservationIds, state.reservations!)
  for (const r of state.reservations!.values()) addHoldPets(r, reads.petIds)
  for (const id of reads.orderIds) {
    const order = readOrder(conn, id)
    if (!order) continue
    state.orders.set(id, order)
    reads.petIds.add(order.petId)
  }
  readEntries(conn, reads.petIds, state.entries, state.elsewhere!)
  // The levels a plan may need beyond these (an order the default location does not cover) are read when it needs them.
  const { levelPets, locationIds } = locationReads(reads, state)
  readLevels(conn, levelPets, state.levels!)
  readLocationStates(conn, locationIds, state.locations!)
  state.loadLevels = (petId) => {
    const read = new Map<bigint, Map<number, number>>()
    readLevels(conn, new Set([petId]), read)
    return read.get(petId)!
  }
  if (reads.claims.length > 0) {
    const since = new Date(now - IDEMPOTENCY_TTL_MS).toISOString()
    for (const { keyId, key } of reads.claims) {
      const claim = readClaim(conn, keyId, key, since)
      if (claim) state.claims.set(claimKey(keyId, key), claim)
    }
    purgeClaims(conn, since)
  }
  const plan = planBatch(batch, state, at)
  // Orders first: the ledger rows and the claims name them.
  writeOrders(conn, plan.newOrders, plan.changedOrders)
  writeReservations(conn, plan.newReservations, plan.changedReservations)
  writeQuantities(conn, plan.quantities, plan.elsewhere)
  writeLevels(conn, plan.levels)
  appendChanges(conn, plan.changes)
  writeClaims(conn, plan.claims, at)
  return plan.results
}

/**
 * A small write that is not a stock write but may share a batch's transaction, and so its fsync:
 * a webhook's cursor, written once per delivered message, as a commit of its own made an fsync on
 * the event loop per message, which took 30 % of the server's CPU profile while PATCHes were
 * committing beside it. Runs after the batch's stock writes; its own error fails only its caller.
 */
export type Rider = () => unknown
type Ridden = { value: unknown } | { error: unknown }

const isRider = (write: StockWrite | Rider): write is Rider => typeof write === 'function'

function ride(rider: Rider): Ridden {
  try {
    return { value: rider() }
  } catch (error) {
    // SQLite undid this statement only; the batch's transaction goes on.
    return { error }
  }
}

/** The most ledger rows one group commit writes, but for a single write larger than that (see GroupCommit's maxWeight). */
const MAX_CHANGES_PER_COMMIT = 2000

/** A batch's stock writes, planned together, then its riders, in one transaction. */
function applyBatch(conn: SqliteConnection, batch: (StockWrite | Rider)[]): (StockResult | Ridden)[] {
  const stock = batch.filter((write) => !isRider(write)) as StockWrite[]
  const results = stock.length > 0 ? applyStockWrites(conn, stock) : []
  let next = 0
  return batch.map((write) => (isRider(write) ? ride(write) : results[next++]!))
}

/**
 * Stock writes, sharing commits (group commit); `alongside` runs a Rider in the next batch's
 * transaction, or alone at once when no batch is waiting or committing; `drain` resolves once the
 * pending ones are committed.
 */
export function sqliteStock(
  conn: SqliteConnection,
  observer?: StorageObserver,
): StockWrites & { drain(): Promise<void>; alongside<T>(rider: () => T): Promise<T> } {
  const groupCommit = new GroupCommit<StockWrite | Rider, StockResult | Ridden>(
    (batch, deadline) =>
      // A batch of riders alone writes no inventory: the inventory's caches stay valid.
      batch.every(isRider) ? conn.commit(() => applyBatch(conn, batch), deadline) : conn.write(() => applyBatch(conn, batch), deadline),
    {
      maxWaitMs: conn.busyTimeoutMs,
      expired: busyError,
      dialect: 'sqlite',
      onBatch: observer && ((writes, seconds) => observer.batchCommitted('sqlite', writes, seconds)),
      // A change a ledger row: about 7 µs each here, so a commit holds the event loop 15 ms or so.
      weight: (write) => (isRider(write) ? 1 : rowsOf(write)),
      maxWeight: MAX_CHANGES_PER_COMMIT,
    },
  )
  return {
    ...stockWritesThrough(groupCommit as GroupCommit<StockWrite, StockResult>),
    async alongside<T>(rider: () => T): Promise<T> {
      // With no batch to join, waiting a turn for one would only delay it: it commits alone at once.
      const ridden = (groupCommit.idle ? await conn.commit(() => ride(rider)) : await groupCommit.submit(rider)) as Ridden
      if ('error' in ridden) throw ridden.error
      return ridden.value as T
    },
  }
}
