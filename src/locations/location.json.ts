import type { Allocation, Location } from '../domain.js'

// Hand-written as the other resources' (see inventory/inventory.json.ts); a location's name is a client's text, escaped.

export function locationJson(l: Location): string {
  return `{"id":${l.id},"name":${JSON.stringify(l.name)},"active":${l.active},"createdAt":"${l.createdAt}","updatedAt":"${l.updatedAt}"}`
}

/** `,"allocations":[...]` for a line taken (partly) elsewhere than the default location; nothing otherwise. */
export function allocationsJson(allocations: Allocation[] | undefined): string {
  if (allocations === undefined) return ''
  return `,"allocations":[${allocations.map((a) => `{"locationId":${a.locationId},"quantity":${a.quantity}}`).join(',')}]`
}
