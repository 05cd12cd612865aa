import type { Actor, DeltaReason, InventoryItem, Order, OrderStatus, Reservation, SetReason, StockLevel } from '../domain.js'

/** Decides, inside a write's own transaction, whether the write may apply to the entry as it is. */
export type Precondition = (current: InventoryItem) => boolean

/** An Idempotency-Key as a placement carries it: the key, and what identifies the request's body. */
export interface IdempotencyClaim {
  key: string
  fingerprint: string
}

/**
 * One change of a quantity as a client states it: a set (a physical count, say), refused unless the
 * location holds `expectedQuantity` when one is given, or a delta (stock received, damaged, sold
 * elsewhere), applied to whatever the location holds, at `locationId` (the default location when
 * absent); or a transfer of units from one location to another. Its ledger row records the reason
 * (adjustment when absent) and the note (null when absent).
 */
export type StockChange =
  | {
      petId: bigint
      quantity: number
      expectedQuantity?: number | undefined
      reason?: SetReason | undefined
      note?: string | null | undefined
      locationId?: number | undefined
    }
  | { petId: bigint; delta: number; reason?: DeltaReason | undefined; note?: string | null | undefined; locationId?: number | undefined }
  | Transfer

/** Units of a pet moved from one location to another (two distinct ones): a ledger row at each, sharing `transferId`. */
export interface Transfer {
  petId: bigint
  fromLocationId: number
  toLocationId: number
  quantity: number
  /** Made by the service, one per transfer. */
  transferId: string
  note?: string | null | undefined
}

export const isTransfer = (change: StockChange): change is Transfer => 'fromLocationId' in change

/**
 * A location a write names that does not exist, or is inactive: the write changes nothing, and its
 * answer is not kept with its Idempotency-Key (bad input, as a 400 is not).
 */
export interface LocationRefusal {
  /**
   * location_out_of_reach: the write's key is held to other locations (at the default location's id:
   * it names none and its key has no one location a write could mean).
   */
  refused: 'location_not_found' | 'location_inactive' | 'location_out_of_reach'
  locationId: number
  /** For location_out_of_reach: the locations the key is held to. */
  reach?: readonly number[] | undefined
}

/** Why a change could not apply; nothing of it (nor of its batch) was written. */
export type ChangeRefusal =
  | { refused: 'not_found' }
  /** A set's expectedQuantity is not what the entry holds. */
  | { refused: 'quantity_mismatch'; found: number; expected: number }
  /** A delta would take the quantity below zero. */
  | { refused: 'insufficient_stock'; found: number; delta: number }
  /** A delta (or a set at a location) would take the pet's stock past MAX_QUANTITY. */
  | { refused: 'stock_overflow'; found: number; delta: number }
  | LocationRefusal

/** A transfer's destination as it left it, with its id and its source as it left it. */
export type TransferredLevel = StockLevel & { transferId: string; from: { locationId: number; quantity: number } }

/**
 * An entry as a change left it: the pet's entry (its quantity the sum over every location) for a
 * change at no named location; that location's stock for one that names it; a transfer's destination
 * and source.
 */
export type ChangedEntry = InventoryItem | StockLevel | TransferredLevel

/**
 * What changes applied together answer: every resulting entry, in the order of the changes (with
 * the batch's id, null for an adjustment alone), or the first change that could not apply.
 */
export type ChangesAnswer =
  | { outcome: 'applied'; batchId: string | null; entries: ChangedEntry[] }
  | { outcome: 'refused'; index: number; refusal: ChangeRefusal }

/**
 * Every write that changes stock, as the group commit carries it: a PATCH's new quantity, changes
 * applied all or nothing (an adjustment, a batch), an order placed, an order's status changed. They
 * share commits, and are applied in submission order.
 */
export type StockWrite =
  | {
      kind: 'set'
      petId: bigint
      quantity: number
      /** Refused (quantity_mismatch) unless the entry holds this quantity. */
      expectedQuantity?: number | undefined
      /** What its ledger row records: adjustment and no note when absent. */
      reason?: SetReason | undefined
      note?: string | null | undefined
      precondition?: Precondition | undefined
      /** The default location when absent. */
      locationId?: number | undefined
      actor: Actor
    }
  | {
      kind: 'changes'
      /** Carried by every ledger row of the changes; null for an adjustment alone. */
      batchId: string | null
      changes: StockChange[]
      actor: Actor
      idempotency?: IdempotencyClaim | undefined
    }
  | {
      kind: 'place'
      petId: bigint
      quantity: number
      /** Taken from this location only; when absent, where the allocation rule chooses (src/stock/allocation.ts). */
      locationId?: number | undefined
      actor: Actor
      idempotency?: IdempotencyClaim | undefined
    }
  | { kind: 'transition'; orderId: bigint; status: OrderStatus; actor: Actor }
  | {
      kind: 'hold'
      /** Distinct pets (the HTTP layer refuses a pet on two lines). */
      lines: HoldLine[]
      /** RFC 3339, UTC, milliseconds. */
      expiresAt: string
      reference: string | null
      actor: Actor
      idempotency?: IdempotencyClaim | undefined
    }
  | {
      kind: 'reservation'
      reservationId: bigint
      /** release: the units come back now; confirm: the lines become orders; extend: a new expiresAt. */
      action: 'release' | 'confirm' | 'extend'
      /** For extend: RFC 3339, UTC, milliseconds. */
      expiresAt?: string | undefined
      actor: Actor
    }
  /** The expiry sweep's: each of these holds that is active and due gives its units back. */
  | { kind: 'expire'; reservationIds: bigint[]; actor: Actor }

/** A set's result: the pet's entry (its quantity the sum over every location), or why nothing was set. */
export type SetResult =
  | InventoryItem
  | 'not_found'
  | 'precondition_failed'
  | Extract<ChangeRefusal, { refused: 'quantity_mismatch' | 'stock_overflow' }>
  | LocationRefusal

export type ChangesResult = (ChangesAnswer & { replayed: boolean }) | 'idempotency_key_reused'

/** What a placement answered; kept with its Idempotency-Key, so a replay answers the same. */
export type Placement =
  | { outcome: 'placed'; order: Order }
  | { outcome: 'not_found' }
  | { outcome: 'insufficient_stock'; available: number }
  /** Never kept with an Idempotency-Key: a retry once the location is there (or active) places the order. */
  | { outcome: 'location_refused'; refusal: LocationRefusal }

export type PlaceResult = (Placement & { replayed: boolean }) | 'idempotency_key_reused'

export type TransitionResult =
  | Order
  | 'not_found'
  | { refused: 'invalid_transition'; from: OrderStatus }
  | { refused: 'stock_overflow'; stock: number }
  /** A cancellation by a key held to locations, of an order that took units elsewhere. */
  | LocationRefusal

/** Units of one pet a hold asks for: from `locationId` only, or where the allocation rule chooses when absent. */
export interface HoldLine {
  petId: bigint
  quantity: number
  locationId?: number | undefined
}

/** A line of a hold that its pet's entry cannot cover: where it is, and what the entry holds. */
export interface ShortLine {
  index: number
  petId: bigint
  available: number
  requested: number
}

/** Why a hold was not placed: the first line whose pet has no entry, or every line its entry cannot cover. */
export type HoldRefusal =
  | { refused: 'not_found'; index: number; petId: bigint }
  | { refused: 'insufficient_stock'; short: ShortLine[] }
  /** The first line naming a location that is not there or inactive; never kept with an Idempotency-Key. */
  | (LocationRefusal & { index: number })

/** What placing a hold answered; kept with its Idempotency-Key, so a replay answers the same. */
export type HoldAnswer = { outcome: 'held'; reservation: Reservation } | { outcome: 'unheld'; refusal: HoldRefusal }

export type HoldResult = (HoldAnswer & { replayed: boolean }) | 'idempotency_key_reused'

/** Why a hold cannot be released, confirmed or extended: it ended (which way), or giving its units back would pass the bound. */
export type ReservationRefusal =
  | { refused: 'reservation_expired' | 'reservation_released' | 'reservation_confirmed' }
  | { refused: 'stock_overflow'; petId: bigint; stock: number }
  /** A release by a key held to locations, of a hold that took units elsewhere. */
  | LocationRefusal

/** The hold as the action left it (with its lines' orders once confirmed), or why it did nothing. */
export type ReservationResult = { reservation: Reservation; orders: Order[] } | 'not_found' | ReservationRefusal

/** The holds the sweep expired now; the others named were not active, not due, or (overflow) could not give their units back. */
export interface ExpireResult {
  expired: bigint[]
  overflowed: bigint[]
}

export type StockResult = SetResult | ChangesResult | PlaceResult | TransitionResult | HoldResult | ReservationResult | ExpireResult

/** What each kind of write answers: the storage's writeStock resolves with the result of its write's kind. */
export type ResultOf<W extends StockWrite> = W extends { kind: 'set' }
  ? SetResult
  : W extends { kind: 'changes' }
    ? ChangesResult
    : W extends { kind: 'place' }
      ? PlaceResult
      : W extends { kind: 'transition' }
        ? TransitionResult
        : W extends { kind: 'hold' }
          ? HoldResult
          : W extends { kind: 'reservation' }
            ? ReservationResult
            : W extends { kind: 'expire' }
              ? ExpireResult
              : never
