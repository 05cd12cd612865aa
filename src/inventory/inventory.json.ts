import type { InventoryChange, InventoryItem } from '../domain.js'

// Hand-written because JSON.stringify cannot write a bigint as a JSON number, and petIds beyond 2^53
// must stay exact numbers. status comes from a closed enum, so it never needs escaping.
export function itemJson(item: InventoryItem): string {
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}"}`
}

const jsonOrNull = (value: bigint | number | null) => (value === null ? 'null' : String(value))
const stringOrNull = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

/**
 * A ledger row; the request id (a plain one, see app.ts) and the note are a client's text, escaped.
 * A batch id is a UUID the service made, which needs none. `reservationId` only on a hold's rows.
 */
export function changeJson(c: InventoryChange): string {
  return (
    `{"seq":${c.seq},"petId":${c.petId},"previousQuantity":${jsonOrNull(c.previousQuantity)},"quantity":${c.quantity},` +
    `"reason":"${c.reason}","note":${stringOrNull(c.note)},"orderId":${jsonOrNull(c.orderId)},` +
    `"batchId":${c.batchId === null ? 'null' : `"${c.batchId}"`},"keyId":${jsonOrNull(c.keyId)},` +
    `"requestId":${stringOrNull(c.requestId)},"at":"${c.at}"${c.reservationId === undefined ? '' : `,"reservationId":${c.reservationId}`}}`
  )
}
