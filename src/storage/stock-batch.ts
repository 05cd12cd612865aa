import {
  MAX_QUANTITY,
  ORDER_TRANSITIONS,
  type Actor,
  type InventoryChange,
  type InventoryItem,
  type Order,
  type OrderStatus,
} from '../domain.js'

/** Decides, inside a write's own transaction, whether the write may apply to the entry as it is. */
export type Precondition = (current: InventoryItem) => boolean

/** An Idempotency-Key as a placement carries it: the key, and what identifies the request's body. */
export interface IdempotencyClaim {
  key: string
  fingerprint: string
}

/**
 * Every write that changes stock, as the group commit carries it: a PATCH's new quantity, an order
 * placed, an order's status changed. They share commits, and are applied in submission order.
 */
export type StockWrite =
  | { kind: 'set'; petId: bigint; quantity: number; precondition?: Precondition | undefined; actor: Actor }
  | { kind: 'place'; petId: bigint; quantity: number; actor: Actor; idempotency?: IdempotencyClaim | undefined }
  | { kind: 'transition'; orderId: bigint; status: OrderStatus; actor: Actor }

export type SetResult = InventoryItem | 'not_found' | 'precondition_failed'

/** What a placement answered; kept with its Idempotency-Key, so a replay answers the same. */
export type Placement =
  | { outcome: 'placed'; order: Order }
  | { outcome: 'not_found' }
  | { outcome: 'insufficient_stock'; available: number }

export type PlaceResult = (Placement & { replayed: boolean }) | 'idempotency_key_reused'

export type TransitionResult =
  | Order
  | 'not_found'
  | { refused: 'invalid_transition'; from: OrderStatus }
  | { refused: 'stock_overflow'; stock: number }

export type StockResult = SetResult | PlaceResult | TransitionResult

/** An Idempotency-Key as stored: the request it was first used with and what that got. */
export interface StoredClaim {
  keyId: number
  key: string
  fingerprint: string
  placement: Placement
}

/**
 * A placement as both backends store it beside its Idempotency-Key: the outcome, the order it
 * placed and the stock it found short; `order` is the placed order's row, read back with the claim.
 */
export interface StoredPlacement {
  outcome: Placement['outcome']
  orderId: bigint | null
  available: number | null
  order?: { petId: bigint; quantity: number; placedAt: string } | undefined
}

export function storedPlacement(p: Placement): StoredPlacement {
  return {
    outcome: p.outcome,
    orderId: p.outcome === 'placed' ? p.order.id : null,
    available: p.outcome === 'insufficient_stock' ? p.available : null,
  }
}

/** A stored placement as it was answered: a placed order as it was when placed. */
export function placementOf({ outcome, orderId, available, order }: StoredPlacement): Placement {
  if (outcome === 'placed') {
    const { petId, quantity, placedAt } = order!
    return { outcome, order: { id: orderId!, petId, quantity, status: 'placed', placedAt, updatedAt: placedAt } }
  }
  return outcome === 'insufficient_stock' ? { outcome, available: available! } : { outcome }
}

/** How long an Idempotency-Key is kept, at least: a later use of it counts as a new key. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export const claimKey = (keyId: number, key: string) => `${keyId}\u0000${key}`

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
    else petIds.add(w.petId)
    if (w.kind === 'place' && w.idempotency && w.actor.keyId !== null) claims.push({ keyId: w.actor.keyId, key: w.idempotency.key })
  }
  return { petIds, orderIds, claims }
}

/**
 * Applies a batch of stock writes, in order, to the state read under the write lock: the one place
 * where the store's rules hold (no quantity below zero or above the bound, the order transitions, an
 * Idempotency-Key answers as it first did), for both backends. Pure: the backend reads the state,
 * then writes the plan in the same transaction. A write that is refused (404, 409, 412) changes
 * nothing and never affects its neighbours; each applied write gets its own ledger row, in order.
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

  const change = (entry: InventoryItem, quantity: number, reason: InventoryChange['reason'], orderId: bigint | null, actor: Actor) => {
    changes.push({
      seq: ++lastChange,
      petId: entry.petId,
      previousQuantity: entry.quantity,
      quantity,
      reason,
      orderId,
      keyId: actor.keyId,
      requestId: actor.requestId,
      at,
    })
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

  const results = batch.map((w): StockResult => {
    switch (w.kind) {
      case 'set': {
        const entry = entries.get(w.petId)
        if (!entry) return 'not_found'
        if (w.precondition && !w.precondition(entry)) return 'precondition_failed'
        change(entry, w.quantity, 'adjustment', null, w.actor)
        return entries.get(w.petId)!
      }
      case 'place': {
        const claimed = w.idempotency && w.actor.keyId !== null ? { keyId: w.actor.keyId, ...w.idempotency } : undefined
        const stored = claimed && claims.get(claimKey(claimed.keyId, claimed.key))
        if (stored) {
          if (stored.fingerprint !== claimed.fingerprint) return 'idempotency_key_reused'
          return { ...stored.placement, replayed: true }
        }
        const placement = place(w)
        if (claimed) {
          const claim = { ...claimed, placement }
          claims.set(claimKey(claimed.keyId, claimed.key), claim)
          newClaims.push(claim)
        }
        return { ...placement, replayed: false }
      }
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
