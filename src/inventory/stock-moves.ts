import { createHash } from 'node:crypto'
import { MAX_QUANTITY } from '../domain.js'
import { ConflictError, type DomainError, NotFoundError } from '../errors.js'
import type { ChangeRefusal, StockChange } from '../stock/writes.js'

/**
 * What an Idempotency-Key on an adjustment or a batch is bound to: the request's changes, hashed
 * (a batch of 1,000 would otherwise store its whole body twice). The prefix keeps them apart from an
 * order's fingerprint (`petId:quantity`), so a key reused across operations is refused as reused.
 */
export function changesFingerprint(kind: 'adjust' | 'batch', changes: StockChange[]): string {
  const canonical = changes.map((c) =>
    'delta' in c
      ? [String(c.petId), 'delta', c.delta, c.reason ?? 'adjustment', c.note ?? null]
      : [String(c.petId), 'set', c.quantity, c.expectedQuantity ?? null, c.reason ?? 'adjustment', c.note ?? null],
  )
  return `${kind} ${createHash('sha256').update(JSON.stringify(canonical)).digest('base64url')}`
}

/**
 * The error of a change that could not apply, worded for its client; in a batch (`index` given) the
 * message starts with the change's place in the request, `changes[17]: `.
 */
export function refusalError(change: StockChange, refusal: ChangeRefusal, index?: number): DomainError {
  const at = index === undefined ? '' : `changes[${index}]: `
  const pet = index === undefined ? `Pet ${change.petId}` : `pet ${change.petId}`
  switch (refusal.refused) {
    case 'not_found':
      return new NotFoundError(`${at}${index === undefined ? 'No' : 'no'} inventory entry for pet ${change.petId}`)
    case 'quantity_mismatch':
      return new ConflictError(
        'quantity_mismatch',
        `${at}${pet} has ${refusal.found} in stock, not the expectedQuantity ${refusal.expected}; nothing was changed`,
      )
    case 'insufficient_stock':
      return new ConflictError(
        'insufficient_stock',
        `${at}${pet} has ${refusal.found} in stock; removing ${-refusal.delta} would take it below zero`,
      )
    case 'stock_overflow':
      return new ConflictError(
        'stock_overflow',
        `${at}${pet} has ${refusal.found} in stock; adding ${refusal.delta} would take it past ${MAX_QUANTITY}`,
      )
  }
}
