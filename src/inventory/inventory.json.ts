import type { InventoryItem } from '../domain.js'

// Hand-written because JSON.stringify cannot write a bigint as a JSON number, and petIds beyond 2^53
// must stay exact numbers. status comes from a closed enum, so it never needs escaping.
export function itemJson(item: InventoryItem): string {
  return `{"petId":${item.petId},"quantity":${item.quantity},"status":"${item.status}"}`
}
