import { MAX_QUANTITY, ORDER_TRANSITIONS, type Actor, type InventoryChange, type InventoryItem, type Order } from '../domain.js'
import { type ClaimAnswer, claimKey, type StoredClaim } from './claims.js'
import type { ChangeRefusal, ChangesAnswer, Placement, StockChange, StockResult, StockWrite } from './writes.js'

/** What a batch reads before it is planned: the rows it may touch, as they are under the write lock. */
export interface BatchState {
  /** Every existing entry the batch's writes name (and those of the orders it changes). */
  entries: Map<bigint, InventoryItem>
  /** Every existing order the batch's transitions name. */
  orders: Map<bigint, Order>
  /** The stored, unexpired claims of the batch's Idempotency-Keys, by claimKey. */
  claims: Map<string, StoredClaim>
  /** The last ledger seq and order id given out: the batch continues from them. */
  lastChange: bigint
  lastOrder: bigint
}

/** What the batch writes, in one transaction, and what each write answers. */
export interface BatchPlan {
  results: StockResult[]
  /** Entries whose quantity the batch changed: their final quantity. */
  quantities: Map<bigint, number>
  /** Orders placed by the batch, as the batch leaves them. */
  newOrders: Order[]
  /** Existing orders the batch changed, as it leaves them. */
  changedOrders: Order[]
  /** Ledger rows, in the order their writes were applied; seqs follow lastChange. */
  changes: InventoryChange[]
  claims: StoredClaim[]
  lastChange: bigint
  lastOrder: bigint
}

/** The keys a batch must read before it is planned (orders first: a cancellation names its pet through its order). */
export function batchReads(batch: StockWrite[]) {
  const petIds = new Set<bigint>()
  const orderIds = new Set<bigint>()
  const claims: { keyId: number; key: string }[] = []
  for (const w of batch) {
    if (w.kind === 'transition') orderIds.add(w.orderId)
    else if (w.kind === 'changes') for (const c of w.changes) petIds.add(c.petId)
    else petIds.add(w.petId)
    if ((w.kind === 'place' || w.kind === 'changes') && w.idempotency && w.actor.keyId !== null)
      claims.push({ keyId: w.actor.keyId, key: w.idempotency.key })
  }
  return { petIds, orderIds, claims }
}

/** A change's resulting quantity for an entry holding `found`, or why it cannot apply. */
export function changedQuantity(change: StockChange, found: number): number | ChangeRefusal {
  if ('delta' in change) {
    const quantity = found + change.delta
    if (quantity < 0) return { refused: 'insufficient_stock', found, delta: change.delta }
    if (quantity > MAX_QUANTITY) return { refused: 'stock_overflow', found, delta: change.delta }
    return quantity
  }
  if (change.expectedQuantity !== undefined && change.expectedQuantity !== found)
    return { refused: 'quantity_mismatch', found, expected: change.expectedQuantity }
  return change.quantity
}

/**
 * Applies a batch of stock writes, in order, to the state read under the write lock: the one place
 * where the store's rules hold (no quantity below zero or above the bound, a compare quantity, the
 * order transitions, an Idempotency-Key answers as it first did), for both backends. Pure: the
 * backend reads the state, then writes the plan in the same transaction. A write that is refused
 * (404, 409, 412) changes nothing and never affects its neighbours; each applied write gets its own
 * ledger row, in order (a write of several changes, a row each, contiguous).
 */
export function planBatch(batch: StockWrite[], state: BatchState, at: string): BatchPlan {
  const entries = new Map(state.entries)
  const orders = new Map(state.orders)
  const placedIds = new Set<bigint>()
  const changedIds = new Set<bigint>()
  const quantities = new Map<bigint, number>()
  const claims = new Map(state.claims)
  const newClaims: StoredClaim[] = []
  const changes: InventoryChange[] = []
  let { lastChange, lastOrder } = state

  const change = (
    entry: InventoryItem,
    quantity: number,
    reason: InventoryChange['reason'],
    orderId: bigint | null,
    actor: Actor,
    note: string | null = null,
    batchId: string | null = null,
  ) => {
    const row: InventoryChange = {
      seq: ++lastChange,
      petId: entry.petId,
      previousQuantity: entry.quantity,
      quantity,
      reason,
      note,
      orderId,
      batchId,
      keyId: actor.keyId,
      requestId: actor.requestId,
      at,
    }
    if (actor.traceContext !== undefined) row.traceContext = actor.traceContext
    changes.push(row)
    entries.set(entry.petId, { ...entry, quantity })
    quantities.set(entry.petId, quantity)
  }

  const place = (w: Extract<StockWrite, { kind: 'place' }>): Placement => {
    const entry = entries.get(w.petId)
    if (!entry) return { outcome: 'not_found' }
    if (entry.quantity < w.quantity) return { outcome: 'insufficient_stock', available: entry.quantity }
    const order: Order = { id: ++lastOrder, petId: w.petId, quantity: w.quantity, status: 'placed', placedAt: at, updatedAt: at }
    orders.set(order.id, order)
    placedIds.add(order.id)
    change(entry, entry.quantity - w.quantity, 'order', order.id, w.actor)
    return { outcome: 'placed', order }
  }

  /** Changes all or nothing: each is checked against what the ones before it left, then all are applied. */
  const applyChanges = (w: Extract<StockWrite, { kind: 'changes' }>): ChangesAnswer => {
    const checked = new Map<bigint, InventoryItem>()
    const quantities: number[] = []
    for (const [index, c] of w.changes.entries()) {
      const entry = checked.get(c.petId) ?? entries.get(c.petId)
      if (!entry) return { outcome: 'refused', index, refusal: { refused: 'not_found' } }
      const quantity = changedQuantity(c, entry.quantity)
      if (typeof quantity !== 'number') return { outcome: 'refused', index, refusal: quantity }
      checked.set(c.petId, { ...entry, quantity })
      quantities.push(quantity)
    }
    const applied = w.changes.map((c, i) => {
      const reason = c.reason ?? 'adjustment'
      change(entries.get(c.petId)!, quantities[i]!, reason, null, w.actor, c.note ?? null, w.batchId)
      return entries.get(c.petId)!
    })
    return { outcome: 'applied', batchId: w.batchId, entries: applied }
  }

  /**
   * A write with an Idempotency-Key: the stored answer when the key was used before (with the same
   * request: replayed; with another: refused), else the write's own answer, stored with the key.
   */
  const claiming = <A extends ClaimAnswer>(
    w: Extract<StockWrite, { kind: 'place' | 'changes' }>,
    answer: () => A,
  ): (A & { replayed: boolean }) | 'idempotency_key_reused' => {
    const claimed = w.idempotency && w.actor.keyId !== null ? { keyId: w.actor.keyId, ...w.idempotency } : undefined
    const stored = claimed && claims.get(claimKey(claimed.keyId, claimed.key))
    if (stored) {
      if (stored.fingerprint !== claimed.fingerprint) return 'idempotency_key_reused'
      return { ...(stored.answer as A), replayed: true }
    }
    const answered = answer()
    if (claimed) {
      const claim = { ...claimed, answer: answered }
      claims.set(claimKey(claimed.keyId, claimed.key), claim)
      newClaims.push(claim)
    }
    return { ...answered, replayed: false }
  }

  const results = batch.map((w): StockResult => {
    switch (w.kind) {
      case 'set': {
        const entry = entries.get(w.petId)
        if (!entry) return 'not_found'
        if (w.precondition && !w.precondition(entry)) return 'precondition_failed'
        const quantity = changedQuantity(w, entry.quantity)
        if (typeof quantity !== 'number') return quantity as Extract<ChangeRefusal, { refused: 'quantity_mismatch' }>
        change(entry, quantity, w.reason ?? 'adjustment', null, w.actor, w.note ?? null)
        return entries.get(w.petId)!
      }
      case 'changes':
        return claiming(w, () => applyChanges(w))
      case 'place':
        return claiming(w, () => place(w))
      case 'transition': {
        const order = orders.get(w.orderId)
        if (!order) return 'not_found'
        if (!ORDER_TRANSITIONS[order.status].includes(w.status)) return { refused: 'invalid_transition', from: order.status }
        if (w.status === 'cancelled') {
          // The reserved quantity goes back to stock; entries are never deleted, so it is there.
          const entry = entries.get(order.petId)
          if (entry) {
            if (entry.quantity + order.quantity > MAX_QUANTITY) return { refused: 'stock_overflow', stock: entry.quantity }
            change(entry, entry.quantity + order.quantity, 'cancellation', order.id, w.actor)
          }
        }
        const next = { ...order, status: w.status, updatedAt: at }
        orders.set(order.id, next)
        if (!placedIds.has(order.id)) changedIds.add(order.id)
        return next
      }
      default:
        return w satisfies never
    }
  })

  return {
    results,
    quantities,
    newOrders: [...placedIds].map((id) => orders.get(id)!),
    changedOrders: [...changedIds].map((id) => orders.get(id)!),
    changes,
    claims: newClaims,
    lastChange,
    lastOrder,
  }
}
