import type { Placement } from './writes.js'

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
