import type { Reservation } from '../domain.js'
import { allocationsJson } from '../locations/location.json.js'

// Hand-written for the exact int64 ids (see inventory.json.ts); the reference is the caller's text, escaped.
export function reservationJson(r: Reservation): string {
  const lines = r.lines
    .map((l) => `{"petId":${l.petId},"quantity":${l.quantity},"orderId":${l.orderId ?? 'null'}${allocationsJson(l.allocations)}}`)
    .join(',')
  return (
    `{"id":${r.id},"status":"${r.status}","lines":[${lines}],"expiresAt":"${r.expiresAt}",` +
    `"reference":${r.reference === null ? 'null' : JSON.stringify(r.reference)},"createdAt":"${r.createdAt}","updatedAt":"${r.updatedAt}"}`
  )
}
