import { createHash } from 'node:crypto'
import { MAX_QUANTITY } from '../domain.js'
import { ConflictError, type DomainError, NotFoundError } from '../errors.js'
import { locationRefusalError } from '../stock/location-refusal.js'
import { type ChangeRefusal, isTransfer, type StockChange } from '../stock/writes.js'

/**
 * What an Idempotency-Key on an adjustment or a batch is bound to: the request's changes, hashed
 * (a batch of 1,000 would otherwise store its whole body twice). The prefix keeps them apart from an
 * order's fingerprint (`petId:quantity`), so a key reused across operations is refused as reused.
 */
export function changesFingerprint(kind: 'adjust' | 'batch' | 'transfer', changes: StockChange[]): string {
  // A location is added only when named, so a request that names none keeps the fingerprint it had
  // before locations existed (a retry across the upgrade is still recognised).
  const canonical = changes.map((c) => {
    if (isTransfer(c)) return [String(c.petId), 'transfer', c.quantity, c.fromLocationId, c.toLocationId, c.note ?? null]
    const change =
      'delta' in c
        ? [String(c.petId), 'delta', c.delta, c.reason ?? 'adjustment', c.note ?? null]
        : [String(c.petId), 'set', c.quantity, c.expectedQuantity ?? null, c.reason ?? 'adjustment', c.note ?? null]
    return c.locationId === undefined ? change : [...change, c.locationId]
  })
  return `${kind} ${createHash('sha256').update(JSON.stringify(canonical)).digest('base64url')}`
}

/**
 * The error of a change that could not apply, worded for its client; in a batch (`index` given) the
 * message starts with the change's place in the request, `changes[17]: `.
 */
export function refusalError(change: StockChange, refusal: ChangeRefusal, index?: number): DomainError {
  const at = index === undefined ? '' : `changes[${index}]: `
  const pet = index === undefined ? `Pet ${change.petId}` : `pet ${change.petId}`
  const where = isTransfer(change)
    ? ` at location ${change.fromLocationId}`
    : change.locationId === undefined
      ? ''
      : ` at location ${change.locationId}`
  switch (refusal.refused) {
    case 'location_not_found':
    case 'location_inactive':
    case 'location_out_of_reach': {
      const error = locationRefusalError(refusal)
      error.message = `${at}${error.message}`
      return error
    }
    case 'not_found':
      return new NotFoundError(`${at}${index === undefined ? 'No' : 'no'} inventory entry for pet ${change.petId}`)
    case 'quantity_mismatch':
      return new ConflictError(
        'quantity_mismatch',
        `${at}${pet} has ${refusal.found} in stock${where}, not the expectedQuantity ${refusal.expected}; nothing was changed`,
      )
    case 'insufficient_stock':
      return new ConflictError(
        'insufficient_stock',
        isTransfer(change)
          ? `${at}${pet} has ${refusal.found} in stock${where}; moving ${change.quantity} to location ${change.toLocationId} would take it below zero`
          : `${at}${pet} has ${refusal.found} in stock${where}; removing ${-refusal.delta} would take it below zero`,
      )
    case 'stock_overflow':
      return new ConflictError(
        'stock_overflow',
        where === ''
          ? `${at}${pet} has ${refusal.found} in stock; adding ${refusal.delta} would take it past ${MAX_QUANTITY}`
          : `${at}${pet} has ${refusal.found} in stock${where}; adding ${refusal.delta} would take its stock in all past ${MAX_QUANTITY}`,
      )
  }
}
