import {
  MAX_QUANTITY,
  ORDER_TRANSITIONS,
  type Actor,
  type InventoryChange,
  type InventoryItem,
  type Order,
  type Reservation,
  type ReservationStatus,
} from '../domain.js'
import { type ClaimAnswer, claimKey, type StoredClaim } from './claims.js'
import type {
  ChangeRefusal,
  ChangesAnswer,
  ExpireResult,
  HoldAnswer,
  Placement,
  ReservationResult,
  ShortLine,
  StockChange,
  StockResult,
  StockWrite,
} from './writes.js'

/** What a batch reads before it is planned: the rows it may touch, as they are under the write lock. */
export interface BatchState {
  /** Every existing entry the batch's writes name (and those of the orders it changes). */
  entries: Map<bigint, InventoryItem>
  /** Every existing order the batch's transitions name. */
  orders: Map<bigint, Order>
  /** The stored, unexpired claims of the batch's Idempotency-Keys, by claimKey. */
  claims: Map<string, StoredClaim>
  /** Every existing hold the batch's reservation and expire writes name, with its lines (none when absent). */
  reservations?: Map<bigint, Reservation> | undefined
  /** The last ledger seq and order id given out: the batch continues from them. */
  lastChange: bigint
  lastOrder: bigint
  /** The largest hold id (read only when the batch places a hold; 0 when absent). */
  lastReservation?: bigint | undefined
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
  /** Holds placed by the batch, and existing ones it changed, as it leaves them (lines included). */
  newReservations: Reservation[]
  changedReservations: Reservation[]
  /** Ledger rows, in the order their writes were applied; seqs follow lastChange. */
  changes: InventoryChange[]
  claims: StoredClaim[]
  lastChange: bigint
  lastOrder: bigint
  lastReservation: bigint
}

/**
 * The keys a batch must read before it is planned (orders and holds first: a cancellation names its
 * pet through its order, a release its pets through its hold's lines).
 */
export function batchReads(batch: StockWrite[]) {
  const petIds = new Set<bigint>()
  const orderIds = new Set<bigint>()
  const reservationIds = new Set<bigint>()
  const claims: { keyId: number; key: string }[] = []
  let placesHold = false
  for (const w of batch) {
    if (w.kind === 'transition') orderIds.add(w.orderId)
    else if (w.kind === 'changes') for (const c of w.changes) petIds.add(c.petId)
    else if (w.kind === 'hold') {
      placesHold = true
      for (const line of w.lines) petIds.add(line.petId)
    } else if (w.kind === 'reservation') reservationIds.add(w.reservationId)
    else if (w.kind === 'expire') for (const id of w.reservationIds) reservationIds.add(id)
    else petIds.add(w.petId)
    if ((w.kind === 'place' || w.kind === 'changes' || w.kind === 'hold') && w.idempotency && w.actor.keyId !== null)
      claims.push({ keyId: w.actor.keyId, key: w.idempotency.key })
  }
  return { petIds, orderIds, reservationIds, claims, placesHold }
}

/** About how many ledger rows a write may add: what a group commit's size is bounded by. */
export function rowsOf(w: StockWrite): number {
  switch (w.kind) {
    case 'changes':
      return w.changes.length
    case 'hold':
      return w.lines.length
    case 'expire':
      return w.reservationIds.length
    default:
      return 1
  }
}

/** Whether a batch writes holds: on PostgreSQL such a batch is planned under the lock (src/storage/postgres/stock.ts). */
export const touchesHolds = (batch: StockWrite[]) => batch.some((w) => w.kind === 'hold' || w.kind === 'reservation' || w.kind === 'expire')

/** Each of the hold's lines' pets, added to `petIds` (a batch's entries to read). */
export function addHoldPets(reservation: Reservation, petIds: Set<bigint>) {
  for (const line of reservation.lines) petIds.add(line.petId)
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
  const reservations = new Map(state.reservations ?? [])
  const placedHolds = new Set<bigint>()
  const changedHolds = new Set<bigint>()
  const placedIds = new Set<bigint>()
  const changedIds = new Set<bigint>()
  const quantities = new Map<bigint, number>()
  const claims = new Map(state.claims)
  const newClaims: StoredClaim[] = []
  const changes: InventoryChange[] = []
  let { lastChange, lastOrder } = state
  let lastReservation = state.lastReservation ?? 0n

  const change = (
    entry: InventoryItem,
    quantity: number,
    reason: InventoryChange['reason'],
    orderId: bigint | null,
    actor: Actor,
    note: string | null = null,
    batchId: string | null = null,
    reservationId: bigint | null = null,
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
    if (reservationId !== null) row.reservationId = reservationId
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

  /** A hold placed: every line covered, or nothing taken (the first unknown pet, else every short line). */
  const hold = (w: Extract<StockWrite, { kind: 'hold' }>): HoldAnswer => {
    const short: ShortLine[] = []
    for (const [index, line] of w.lines.entries()) {
      const entry = entries.get(line.petId)
      if (!entry) return { outcome: 'unheld', refusal: { refused: 'not_found', index, petId: line.petId } }
      if (entry.quantity < line.quantity) short.push({ index, petId: line.petId, available: entry.quantity, requested: line.quantity })
    }
    if (short.length > 0) return { outcome: 'unheld', refusal: { refused: 'insufficient_stock', short } }
    const id = ++lastReservation
    for (const line of w.lines) {
      const entry = entries.get(line.petId)!
      change(entry, entry.quantity - line.quantity, 'reservation', null, w.actor, null, null, id)
    }
    const reservation: Reservation = {
      id,
      status: 'active',
      lines: w.lines.map((l) => ({ petId: l.petId, quantity: l.quantity, orderId: null })),
      expiresAt: w.expiresAt,
      reference: w.reference,
      createdAt: at,
      updatedAt: at,
    }
    reservations.set(id, reservation)
    placedHolds.add(id)
    return { outcome: 'held', reservation }
  }

  const ended = (r: Reservation, status: ReservationStatus, changed: Partial<Reservation> = {}) => {
    const next = { ...r, ...changed, status, updatedAt: at }
    reservations.set(r.id, next)
    if (!placedHolds.has(r.id)) changedHolds.add(r.id)
    return next
  }

  /**
   * A hold's units given back (release, expiry), one row a line; or the first line whose return
   * would take its pet past the bound, and nothing given back.
   */
  const giveBack = (r: Reservation, reason: 'release' | 'expiry', actor: Actor): { petId: bigint; stock: number } | undefined => {
    for (const line of r.lines) {
      const entry = entries.get(line.petId)
      if (entry && entry.quantity + line.quantity > MAX_QUANTITY) return { petId: line.petId, stock: entry.quantity }
    }
    for (const line of r.lines) {
      const entry = entries.get(line.petId)
      // Entries are never deleted, so each line's is there.
      if (entry) change(entry, entry.quantity + line.quantity, reason, null, actor, null, null, r.id)
    }
    return undefined
  }

  const isDue = (r: Reservation) => r.status === 'active' && r.expiresAt <= at

  /** A client's release, confirm or extend of a hold: only while it is active and not due. */
  const act = (w: Extract<StockWrite, { kind: 'reservation' }>): ReservationResult => {
    const r = reservations.get(w.reservationId)
    if (!r) return 'not_found'
    if (isDue(r)) {
      // Its time has come: it expires now, in this write, as the sweep would have made it.
      if (giveBack(r, 'expiry', w.actor) === undefined) ended(r, 'expired')
      return { refused: 'reservation_expired' }
    }
    if (r.status !== 'active') return { refused: `reservation_${r.status}` }
    switch (w.action) {
      case 'extend':
        return { reservation: ended(r, 'active', { expiresAt: w.expiresAt! }), orders: [] }
      case 'release': {
        const overflow = giveBack(r, 'release', w.actor)
        if (overflow) return { refused: 'stock_overflow', ...overflow }
        return { reservation: ended(r, 'released'), orders: [] }
      }
      case 'confirm': {
        // The units were taken when the hold was placed: each order's row moves nothing, and names both.
        const placed = r.lines.map((line) => {
          const order: Order = {
            id: ++lastOrder,
            petId: line.petId,
            quantity: line.quantity,
            status: 'placed',
            placedAt: at,
            updatedAt: at,
          }
          orders.set(order.id, order)
          placedIds.add(order.id)
          const entry = entries.get(line.petId)
          if (entry) change(entry, entry.quantity, 'order', order.id, w.actor, null, null, r.id)
          return order
        })
        const lines = r.lines.map((line, i) => ({ ...line, orderId: placed[i]!.id }))
        return { reservation: ended(r, 'confirmed', { lines }), orders: placed }
      }
      default:
        return w.action satisfies never
    }
  }

  const expire = (w: Extract<StockWrite, { kind: 'expire' }>): ExpireResult => {
    const result: ExpireResult = { expired: [], overflowed: [] }
    for (const id of w.reservationIds) {
      const r = reservations.get(id)
      if (!r || !isDue(r)) continue
      if (giveBack(r, 'expiry', w.actor) !== undefined) result.overflowed.push(id)
      else {
        ended(r, 'expired')
        result.expired.push(id)
      }
    }
    return result
  }

  /**
   * A write with an Idempotency-Key: the stored answer when the key was used before (with the same
   * request: replayed; with another: refused), else the write's own answer, stored with the key.
   */
  const claiming = <A extends ClaimAnswer>(
    w: Extract<StockWrite, { kind: 'place' | 'changes' | 'hold' }>,
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
      case 'hold':
        return claiming(w, () => hold(w))
      case 'reservation':
        return act(w)
      case 'expire':
        return expire(w)
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
    newReservations: [...placedHolds].map((id) => reservations.get(id)!),
    changedReservations: [...changedHolds].map((id) => reservations.get(id)!),
    changes,
    claims: newClaims,
    lastChange,
    lastOrder,
    lastReservation,
  }
}
