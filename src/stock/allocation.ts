import { type Allocation, DEFAULT_LOCATION_ID } from '../domain.js'

/**
 * Where an order's or a hold line's units come from when the client names no location, as a chain's
 * operations expect (Saleor's allocation strategies, Shopify's fulfilment priority): the default
 * location when it covers the line alone; else the location with the most stock when it covers it
 * (the lowest id among equals), so a line ships from one place whenever one place can; else split,
 * the default location's stock first, then the others' from the most stocked down. `levels` are the
 * pet's stock at each location holding any (the default location's included); undefined when they
 * hold fewer units in all than the line asks for. Only active locations hold stock.
 */
export function allocate(quantity: number, levels: ReadonlyMap<number, number>): Allocation[] | undefined {
  const atDefault = levels.get(DEFAULT_LOCATION_ID) ?? 0
  if (atDefault >= quantity) return [{ locationId: DEFAULT_LOCATION_ID, quantity }]
  const others = [...levels]
    .filter(([locationId, level]) => locationId !== DEFAULT_LOCATION_ID && level > 0)
    .sort(([a, x], [b, y]) => y - x || a - b)
  const most = others[0]
  if (most && most[1] >= quantity) return [{ locationId: most[0], quantity }]
  const taken: Allocation[] = []
  let left = quantity
  for (const [locationId, level] of atDefault > 0 ? [[DEFAULT_LOCATION_ID, atDefault] as const, ...others] : others) {
    const take = Math.min(level, left)
    taken.push({ locationId, quantity: take })
    left -= take
    if (left === 0) return taken
  }
  return undefined
}

/** Whether allocations name only the default location: then they are not stored, nor shown. */
export const allAtDefault = (allocations: readonly Allocation[] | undefined) =>
  allocations === undefined || allocations.every((a) => a.locationId === DEFAULT_LOCATION_ID)
