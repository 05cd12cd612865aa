import type { PetStatus } from '../domain.js'
import type { ChangesAnswer, HoldAnswer, Placement } from './writes.js'

/** What a request with an Idempotency-Key was answered: a placement, changes applied (or refused), a hold placed (or not). */
export type ClaimAnswer = Placement | ChangesAnswer | HoldAnswer

/** An Idempotency-Key as stored: the request it was first used with and what that got. */
export interface StoredClaim {
  keyId: number
  key: string
  fingerprint: string
  answer: ClaimAnswer
}

/**
 * An answer as both backends store it beside its Idempotency-Key. A placement: the outcome, the
 * order it placed and the stock it found short; `order` is the placed order's row, read back with
 * the claim. Any other answer: outcome `answered`, and the answer itself as JSON (answerJson).
 */
export interface StoredAnswer {
  outcome: Exclude<Placement['outcome'], 'location_refused'> | 'answered'
  orderId: bigint | null
  available: number | null
  /** JSON, for outcome `answered`. */
  answer: string | null
  order?: { petId: bigint; quantity: number; placedAt: string } | undefined
}

/** A placement as kept in columns (a location refused is never kept). */
const isPlacement = (a: ClaimAnswer): a is Exclude<Placement, { outcome: 'location_refused' }> =>
  a.outcome === 'placed' || a.outcome === 'not_found' || a.outcome === 'insufficient_stock'
const isHold = (a: ClaimAnswer): a is HoldAnswer => a.outcome === 'held' || a.outcome === 'unheld'

export function storedAnswer(a: ClaimAnswer): StoredAnswer {
  if (a.outcome === 'location_refused') throw new Error('A location refused is never kept with an Idempotency-Key')
  if (!isPlacement(a)) return { outcome: 'answered', orderId: null, available: null, answer: answerJson(a) }
  return {
    outcome: a.outcome,
    orderId: a.outcome === 'placed' ? a.order.id : null,
    available: a.outcome === 'insufficient_stock' ? a.available : null,
    answer: null,
  }
}

/** A stored answer as it was answered: a placed order as it was when placed. */
export function answerOf({ outcome, orderId, available, answer, order }: StoredAnswer): ClaimAnswer {
  if (outcome === 'answered') return parseAnswer(answer!)
  if (outcome === 'placed') {
    const { petId, quantity, placedAt } = order!
    return { outcome, order: { id: orderId!, petId, quantity, status: 'placed', placedAt, updatedAt: placedAt } }
  }
  return outcome === 'insufficient_stock' ? { outcome, available: available! } : { outcome: 'not_found' }
}

/** A bigint in a stored hold answer: an object no client's string can be mistaken for. */
const INT64_TAG = '$int64'

/**
 * Changes' answer as stored: entries as [petId, quantity, status], the petId a decimal string
 * (exact), and a location's id fourth when the entry is one location's stock; a hold's with its
 * bigints tagged.
 */
function answerJson(a: ChangesAnswer | HoldAnswer): string {
  if (isHold(a)) return JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? { [INT64_TAG]: String(v) } : v))
  if (a.outcome === 'refused') return JSON.stringify(a)
  return JSON.stringify({
    ...a,
    entries: a.entries.map((e) => {
      if (!('locationId' in e)) return [String(e.petId), e.quantity, e.status]
      if (!('transferId' in e)) return [String(e.petId), e.quantity, e.status, e.locationId]
      return [String(e.petId), e.quantity, e.status, e.locationId, e.transferId, e.from.locationId, e.from.quantity]
    }),
  })
}

function parseAnswer(json: string): ChangesAnswer | HoldAnswer {
  const hold = JSON.parse(json, (_, v) =>
    v !== null && typeof v === 'object' && typeof v[INT64_TAG] === 'string' ? BigInt(v[INT64_TAG]) : v,
  ) as ChangesAnswer | HoldAnswer
  if (isHold(hold)) return hold
  type Stored = [string, number, PetStatus, number?, string?, number?, number?]
  const a = JSON.parse(json) as ChangesAnswer | { outcome: 'applied'; batchId: string | null; entries: Stored[] }
  if (a.outcome === 'refused') return a
  return {
    outcome: 'applied',
    batchId: a.batchId,
    entries: (a.entries as Stored[]).map(([petId, quantity, status, locationId, transferId, fromLocationId, fromQuantity]) => {
      if (locationId === undefined) return { petId: BigInt(petId), quantity, status }
      if (transferId === undefined) return { petId: BigInt(petId), locationId, quantity, status }
      const from = { locationId: fromLocationId!, quantity: fromQuantity! }
      return { petId: BigInt(petId), locationId, quantity, status, transferId, from }
    }),
  }
}

/** How long an Idempotency-Key is kept, at least: a later use of it counts as a new key. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export const claimKey = (keyId: number, key: string) => `${keyId}\u0000${key}`
