import { createHash } from 'node:crypto'
import { type Actor, MAX_QUANTITY, type Reservation } from '../domain.js'
import { ConflictError, type DomainError, NotFoundError } from '../errors.js'
import type { ReservationQuery, ReservationReads, StockWrites } from '../storage/ports.js'
import { isLocationRefusal, locationRefusalError } from '../stock/location-refusal.js'
import type { HoldLine, HoldRefusal } from '../stock/writes.js'

/** A hold's answer: the hold, or the error it got, and whether it repeats an earlier request's answer. */
export type HoldAnswer = { replayed: boolean } & (
  | { reservation: Reservation; error?: undefined }
  | { reservation?: undefined; error: DomainError }
)

/** What a hold's Idempotency-Key is bound to: its lines, expiry and reference, hashed (prefixed apart from the others'). */
export function holdFingerprint(lines: HoldLine[], expiresInSeconds: number, reference: string | null): string {
  // A line's location only when named: a hold that names none keeps its fingerprint from before locations.
  const canonical = [
    lines.map((l) => (l.locationId === undefined ? [String(l.petId), l.quantity] : [String(l.petId), l.quantity, l.locationId])),
    expiresInSeconds,
    reference,
  ]
  return `hold ${createHash('sha256').update(JSON.stringify(canonical)).digest('base64url')}`
}

/** A hold that was not placed, worded for its client: the line and pet, and what each short one found. */
function holdRefusalError(refusal: HoldRefusal): DomainError {
  if (refusal.refused === 'not_found') return new NotFoundError(`lines[${refusal.index}]: no inventory entry for pet ${refusal.petId}`)
  if (refusal.refused !== 'insufficient_stock') {
    const error = locationRefusalError(refusal)
    error.message = `lines[${refusal.index}]: ${error.message}`
    return error
  }
  const short = refusal.short.map((s) => `lines[${s.index}] (pet ${s.petId}: ${s.available} in stock, ${s.requested} asked)`)
  return new ConflictError('insufficient_stock', `Not enough stock for ${short.join(', ')}; nothing was held`)
}

export class ReservationsService {
  constructor(private readonly storage: ReservationReads & StockWrites) {}

  /**
   * Holds every line or none, for `expiresInSeconds` from now. With an Idempotency-Key, a request
   * that repeats an earlier one gets that request's answer again, error included, and holds nothing.
   */
  async hold(
    lines: HoldLine[],
    expiresInSeconds: number,
    reference: string | null,
    actor: Actor,
    idempotencyKey?: string,
  ): Promise<HoldAnswer> {
    const claim =
      idempotencyKey === undefined ? undefined : { key: idempotencyKey, fingerprint: holdFingerprint(lines, expiresInSeconds, reference) }
    const expiresAt = new Date(Date.now() + expiresInSeconds * 1000).toISOString()
    const result = await this.storage.writeStock({ kind: 'hold', lines, expiresAt, reference, actor, idempotency: claim })
    if (result === 'idempotency_key_reused')
      throw new ConflictError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with another request body; use a new key for a new hold',
      )
    if (result.outcome === 'held') return { reservation: result.reservation, replayed: result.replayed }
    return { error: holdRefusalError(result.refusal), replayed: result.replayed }
  }

  async get(reservationId: bigint): Promise<Reservation> {
    const reservation = await this.storage.getReservation(reservationId)
    if (!reservation) throw new NotFoundError(`No hold ${reservationId}`)
    return reservation
  }

  list(query: ReservationQuery): Promise<Reservation[]> {
    return this.storage.listReservations(query)
  }

  /** Releases, confirms or extends a hold, while it is active and not due; a due one expires now and is refused. */
  async act(
    reservationId: bigint,
    action: 'release' | 'confirm' | 'extend',
    actor: Actor,
    expiresInSeconds?: number,
  ): Promise<Reservation> {
    const expiresAt = expiresInSeconds === undefined ? undefined : new Date(Date.now() + expiresInSeconds * 1000).toISOString()
    const result = await this.storage.writeStock({ kind: 'reservation', reservationId, action, expiresAt, actor })
    if (result === 'not_found') throw new NotFoundError(`No hold ${reservationId}`)
    if ('reservation' in result) return result.reservation
    if (isLocationRefusal(result)) throw locationRefusalError(result)
    switch (result.refused) {
      case 'reservation_expired':
        throw new ConflictError('reservation_expired', `Hold ${reservationId} has expired: its units are back in stock`)
      case 'reservation_released':
        throw new ConflictError('reservation_released', `Hold ${reservationId} was released: its units are back in stock`)
      case 'reservation_confirmed':
        throw new ConflictError('reservation_confirmed', `Hold ${reservationId} is confirmed already: its lines are orders`)
      case 'stock_overflow':
        throw new ConflictError(
          'stock_overflow',
          `Releasing hold ${reservationId} would take pet ${result.petId} past ${MAX_QUANTITY} (it holds ${result.stock}); nothing was changed`,
        )
    }
  }
}
