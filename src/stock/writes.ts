import type { Actor, InventoryItem, Order, OrderStatus, SetReason } from '../domain.js'

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
  | {
      kind: 'set'
      petId: bigint
      quantity: number
      /** What its ledger row records: adjustment and no note when absent. */
      reason?: SetReason | undefined
      note?: string | null | undefined
      precondition?: Precondition | undefined
      actor: Actor
    }
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

/** What each kind of write answers: the storage's writeStock resolves with the result of its write's kind. */
export type ResultOf<W extends StockWrite> = W extends { kind: 'set' }
  ? SetResult
  : W extends { kind: 'place' }
    ? PlaceResult
    : W extends { kind: 'transition' }
      ? TransitionResult
      : never
