import type { InventoryChange, InventoryItem, StockLevel } from '../domain.js'
import type { ChangedEntry } from '../stock/writes.js'

// Hand-written because JSON.stringify cannot write a bigint as a JSON number, and petIds beyond 2^53
// must stay exact numbers. status comes from a closed enum, so it never needs escaping.
export function itemJson(item: InventoryItem): string {
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}"}`
}

export function levelJson(l: StockLevel): string {
  return `{"petId":${l.petId},"locationId":${l.locationId},"quantity":${l.quantity},"status":"${l.status}"}`
}

/** An entry a change left: the pet's (its quantity in all), one location's, or a transfer's destination with its source. */
export function changedEntryJson(e: ChangedEntry): string {
  if (!('locationId' in e)) return itemJson(e)
  if (!('transferId' in e)) return levelJson(e)
  return `${levelJson(e).slice(0, -1)},"transferId":"${e.transferId}","from":{"locationId":${e.from.locationId},"quantity":${e.from.quantity}}}`
}

const jsonOrNull = (value: bigint | number | null) => (value === null ? 'null' : String(value))
const stringOrNull = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

/**
 * A ledger row; the request id (a plain one, see app.ts) and the note are a client's text, escaped.
 * A batch id and a transfer id are UUIDs the service made, which need none. `reservationId` only on a
 * hold's rows, `locationId` only on rows of another location than the default one, `transferId` only
 * on a transfer's.
 */
export function changeJson(c: InventoryChange): string {
  return (
    `{"seq":${c.seq},"petId":${c.petId},"previousQuantity":${jsonOrNull(c.previousQuantity)},"quantity":${c.quantity},` +
    `"reason":"${c.reason}","note":${stringOrNull(c.note)},"orderId":${jsonOrNull(c.orderId)},` +
    `"batchId":${c.batchId === null ? 'null' : `"${c.batchId}"`},"keyId":${jsonOrNull(c.keyId)},` +
    `"requestId":${stringOrNull(c.requestId)},"at":"${c.at}"${c.reservationId === undefined ? '' : `,"reservationId":${c.reservationId}`}` +
    `${c.locationId === undefined ? '' : `,"locationId":${c.locationId}`}${c.transferId === undefined ? '' : `,"transferId":"${c.transferId}"`}}`
  )
}
