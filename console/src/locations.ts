// The store's locations (shops, a warehouse) as every page sees them. A store with one location is
// shown exactly as before locations existed: the pickers, the stock by location and the transfer form
// appear only once a second location is active.
import type { InventoryChange, Location, StockLevel } from 'petstore-client'
import { useRead } from './parts.js'
import { api, type Session } from './session.js'

/** The default location: every store has it, it is never deactivated, and writes without a location go there. */
export const DEFAULT_LOCATION = 1n

/** The location whose stock a ledger row changed (the row names it unless it is the default one). */
export const rowLocation = (change: InventoryChange): bigint => change.locationId ?? DEFAULT_LOCATION

export interface Locations {
  /** Every location, active or not, by id; undefined until read (or when the read failed). */
  all: Location[] | undefined
  /** The active ones, which hold and take stock. */
  active: Location[]
  /** More than one active location: the pages show stock by location. */
  several: boolean
  /** Known to have one active location: a ledger row's quantities are then the pet's in all, as before. */
  single: boolean
  /** A location's name, or `Location 4` for one not (yet) read. */
  name: (id: bigint) => string
  problem: string | undefined
  reload: () => void
}

/** The store's locations, read once for the page (a key without inventory:read reads none: as one location). */
export function useLocations(session: Session): Locations {
  const read = useRead<Location[]>((signal) => (session.can('inventory:read') ? api.locations.list({ signal }) : Promise.resolve([])), [])
  const active = (read.value ?? []).filter((location) => location.active)
  return {
    all: read.value,
    active,
    several: active.length > 1,
    single: read.value !== undefined && active.length <= 1,
    name: (id) => read.value?.find((location) => location.id === id)?.name ?? `Location ${id}`,
    problem: read.problem,
    reload: read.reload,
  }
}

/** The levels with one location's quantity replaced (added when the pet was not stocked there yet). */
export function withLevel(levels: StockLevel[], locationId: bigint, quantity: number): StockLevel[] {
  if (levels.some((level) => level.locationId === locationId))
    return levels.map((level) => (level.locationId === locationId ? { ...level, quantity } : level))
  const status = levels[0]?.status ?? 'available'
  return [...levels, { petId: levels[0]?.petId ?? 0n, locationId, quantity, status }]
}

/** A pet's quantity in all: the sum of its stock at every location. */
export const totalOf = (levels: StockLevel[]) => levels.reduce((sum, level) => sum + level.quantity, 0)

/**
 * A pet's ledger rows (oldest first) with each row's From and To made the pet's quantity in all: with
 * several locations, a row's quantities are its location's. Each location starts at its first row's
 * From (0 for a row that created it), or, with no row here, at what it holds now (`levels`: it has not
 * changed since the first row shown). A transfer's two rows are one change of the pet's quantity in all
 * (none): drawn once.
 */
export function totalsOver(changes: InventoryChange[], levels: StockLevel[]): InventoryChange[] {
  const held = new Map<bigint, number>(levels.map((level) => [level.locationId, level.quantity]))
  const seen = new Set<bigint>()
  for (const change of changes) {
    const at = rowLocation(change)
    if (seen.has(at)) continue
    seen.add(at)
    held.set(at, change.previousQuantity ?? 0)
  }
  let total = [...held.values()].reduce((sum, quantity) => sum + quantity, 0)
  const totals = changes.map((change) => {
    const at = rowLocation(change)
    const before = total
    total += change.quantity - (held.get(at) ?? 0)
    held.set(at, change.quantity)
    return { ...change, previousQuantity: before, quantity: total }
  })
  // A transfer's two rows as one point: between them the units are out of one location and not yet in the other.
  return totals.filter((change, i) => change.transferId === undefined || totals[i + 1]?.transferId !== change.transferId)
}
