import type { Order } from '../domain.js'
import { allocationsJson } from '../locations/location.json.js'

// Hand-written for the exact int64 ids (see inventory.json.ts); every string here is the service's own.
export function orderJson(o: Order): string {
  return `{"id":${o.id},"petId":${o.petId},"quantity":${o.quantity},"status":"${o.status}","placedAt":"${o.placedAt}","updatedAt":"${o.updatedAt}"${allocationsJson(o.allocations)}}`
}
