import type {
  Allocation,
  ChangeReason,
  DeprecatedCalls,
  InventoryChange,
  InventoryItem,
  Order,
  OrderStatus,
  PetStatus,
} from '../../domain.js'
import { answerOf, claimKey, type StoredAnswer, type StoredClaim } from '../../stock/claims.js'
import { scopesOf } from '../key-scopes.js'
import type { ApiKey } from '../ports.js'

/*
 * Rows as the PostgreSQL backend selects them, and their domain shapes. int64 columns arrive as
 * strings, read back exactly with BigInt.
 */

export interface KeyRow {
  id: number
  name: string
  scopes: string
  created_at: Date
  last_used_at: Date | null
  revoked_at: Date | null
  /** Only when read (keys.ts KEY_COLUMNS): null when it reaches every location. */
  locations?: number[] | null
}

export interface OrderRow {
  id: string
  pet_id: string
  quantity: number
  status: OrderStatus
  placed_at: Date
  updated_at: Date
  /** [[locationId, quantity], ...]; null when all came from the default location. */
  allocations?: [number, number][] | null
}

export interface ChangeRow {
  seq: string
  pet_id: string
  previous_quantity: number | null
  quantity: number
  reason: ChangeReason
  note: string | null
  order_id: string | null
  batch_id: string | null
  key_id: number | null
  request_id: string | null
  at: Date
  reservation_id: string | null
  location_id: number | null
  transfer_id: string | null
  /** Only when read (ChangeQuery.traceContexts). */
  trace_context?: string | null
}

export interface ItemRow {
  pet_id: string
  quantity: number
  status: PetStatus
}

/** An Idempotency-Key claim, with the order it placed joined in (null when it placed none). */
export interface ClaimRow {
  key_id: number
  idempotency_key: string
  fingerprint: string
  outcome: StoredAnswer['outcome']
  order_id: string | null
  available: number | null
  answer: string | null
  pet_id: string | null
  quantity: number | null
  placed_at: Date | null
}

export interface DeprecatedCallsRow {
  key_id: number
  name: string
  calls: string
  first_call: Date
  last_call: Date
}

/** Allocations as read in JSON ([[locationId, quantity], ...]); undefined for none. */
export const toAllocations = (pairs: [number, number][] | null | undefined): Allocation[] | undefined =>
  pairs == null ? undefined : pairs.map(([locationId, quantity]) => ({ locationId, quantity }))

export const toOrder = (r: OrderRow): Order => {
  const order: Order = {
    id: BigInt(r.id),
    petId: BigInt(r.pet_id),
    quantity: r.quantity,
    status: r.status,
    placedAt: r.placed_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  }
  const taken = toAllocations(r.allocations)
  if (taken) order.allocations = taken
  return order
}

export const toChange = (r: ChangeRow): InventoryChange => {
  const change: InventoryChange = {
    seq: BigInt(r.seq),
    petId: BigInt(r.pet_id),
    previousQuantity: r.previous_quantity,
    quantity: r.quantity,
    reason: r.reason,
    note: r.note,
    orderId: r.order_id === null ? null : BigInt(r.order_id),
    batchId: r.batch_id,
    keyId: r.key_id,
    requestId: r.request_id,
    at: r.at.toISOString(),
  }
  if (r.reservation_id !== null) change.reservationId = BigInt(r.reservation_id)
  if (r.location_id !== null) change.locationId = r.location_id
  if (r.transfer_id !== null) change.transferId = r.transfer_id
  if (r.trace_context != null) change.traceContext = r.trace_context
  return change
}

export const toKey = (row: KeyRow): ApiKey => {
  const key: ApiKey = {
    id: row.id,
    name: row.name,
    scopes: scopesOf(row.scopes),
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
  }
  if (row.locations != null) key.locations = row.locations
  return key
}

export const toItem = (r: ItemRow): InventoryItem => ({ petId: BigInt(r.pet_id), quantity: r.quantity, status: r.status })

/** A claim with its key in the batch's claims map (claimKey). */
export const toClaim = (r: ClaimRow): [string, StoredClaim] => {
  const answer = answerOf({
    outcome: r.outcome,
    orderId: r.order_id === null ? null : BigInt(r.order_id),
    available: r.available,
    answer: r.answer,
    order: r.pet_id === null ? undefined : { petId: BigInt(r.pet_id), quantity: r.quantity!, placedAt: r.placed_at!.toISOString() },
  })
  return [
    claimKey(r.key_id, r.idempotency_key),
    {
      keyId: r.key_id,
      key: r.idempotency_key,
      fingerprint: r.fingerprint,
      answer,
    },
  ]
}

export const toDeprecatedCalls = (r: DeprecatedCallsRow): DeprecatedCalls & { name: string } => ({
  keyId: r.key_id,
  name: r.name,
  calls: Number(r.calls),
  firstCall: r.first_call.toISOString(),
  lastCall: r.last_call.toISOString(),
})
