import type { Allocation, ChangeReason, InventoryChange, InventoryItem, Order, OrderStatus, PetStatus } from '../../domain.js'
import { scopesOf } from '../key-scopes.js'
import type { ApiKey } from '../ports.js'

/*
 * Rows as SQLite returns them (arrays of exact values: integers as bigints) and their domain shapes.
 * SQL-free: every concept's SQL maps its rows here.
 */

export type InventoryRow = [petId: bigint, quantity: bigint, status: string]
export type OrderRow = [
  id: bigint,
  petId: bigint,
  quantity: bigint,
  status: string,
  placedAt: string,
  updatedAt: string,
  /** JSON [[locationId, quantity], ...], or null when all came from the default location (ORDER_READ_COLUMNS). */
  allocations?: string | null,
]
export type ChangeRow = [
  seq: bigint,
  petId: bigint,
  previous: bigint | null,
  quantity: bigint,
  reason: string,
  note: string | null,
  orderId: bigint | null,
  batchId: string | null,
  keyId: bigint | null,
  requestId: string | null,
  at: string,
  reservationId: bigint | null,
  locationId: bigint | null,
  transferId: string | null,
  /** Only when read (TRACED_CHANGE_COLUMNS). */
  traceContext?: string | null,
]
export interface KeyRow {
  id: number
  name: string
  scopes: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
  /** Comma-separated location ids, only when read (keys.ts HELD_TO); null when it reaches every location. */
  locations?: string | null
}

export const ORDER_COLUMNS = 'id, pet_id, quantity, status, placed_at, updated_at'
/**
 * An order's allocations as JSON, for `FROM orders`: one index range of order_allocations, which
 * has no row for an order taken all from the default location (then NULL).
 */
export const ALLOCATIONS_JSON = `(SELECT json_group_array(json_array(a.location_id, a.quantity))
    FROM order_allocations AS a WHERE a.order_id = orders.id HAVING count(*) > 0)`
/** An order's columns as read, allocations included (toOrder). */
export const ORDER_READ_COLUMNS = `${ORDER_COLUMNS}, ${ALLOCATIONS_JSON}`
export const CHANGE_COLUMNS =
  'seq, pet_id, previous_quantity, quantity, reason, note, order_id, batch_id, key_id, request_id, at, reservation_id, location_id, transfer_id'
/** With the row's trace context (ChangeQuery.traceContexts; and every insert). */
export const TRACED_CHANGE_COLUMNS = `${CHANGE_COLUMNS}, trace_context`

export const toItem = ([petId, quantity, status]: InventoryRow): InventoryItem => ({
  petId,
  quantity: Number(quantity),
  status: status as PetStatus,
})

/** Allocations as stored in JSON ([[locationId, quantity], ...]); undefined for none. */
export const toAllocations = (json: string | null | undefined): Allocation[] | undefined =>
  json == null ? undefined : (JSON.parse(json) as [number, number][]).map(([locationId, quantity]) => ({ locationId, quantity }))

export const toOrder = ([id, petId, quantity, status, placedAt, updatedAt, allocations]: OrderRow): Order => {
  const order: Order = { id, petId, quantity: Number(quantity), status: status as OrderStatus, placedAt, updatedAt }
  const taken = toAllocations(allocations)
  if (taken) order.allocations = taken
  return order
}

export const toChange = ([
  seq,
  petId,
  previous,
  quantity,
  reason,
  note,
  orderId,
  batchId,
  keyId,
  requestId,
  at,
  reservationId,
  locationId,
  transferId,
  trace,
]: ChangeRow): InventoryChange => {
  const change: InventoryChange = {
    seq,
    petId,
    previousQuantity: previous === null ? null : Number(previous),
    quantity: Number(quantity),
    reason: reason as ChangeReason,
    note,
    orderId,
    batchId,
    keyId: keyId === null ? null : Number(keyId),
    requestId,
    at,
  }
  if (reservationId !== null) change.reservationId = reservationId
  if (locationId !== null) change.locationId = Number(locationId)
  if (transferId !== null) change.transferId = transferId
  if (trace != null) change.traceContext = trace
  return change
}

export const toKey = (row: KeyRow): ApiKey => {
  const key: ApiKey = {
    id: row.id,
    name: row.name,
    scopes: scopesOf(row.scopes),
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }
  if (row.locations != null) key.locations = row.locations.split(',').map(Number)
  return key
}
