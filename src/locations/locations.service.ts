import { LOCATION_LIMITS, type Location, type StockLevel } from '../domain.js'
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js'
import type { InventoryQuery, LocationStore, LocationUpdate } from '../storage/ports.js'
import { MAX_LOCATION_ID } from '../http/location-id.schema.js'
import { LOCATION_NAME_PATTERN } from './location.schema.js'

/** A name as LocationNameSchema takes it (the HTTP schema says the same; the CLI comes here directly). */
function checkName(name: string) {
  if (!new RegExp(LOCATION_NAME_PATTERN, 'u').test(name) || [...name].length > LOCATION_LIMITS.nameLength)
    throw new InvalidInputError(`name must be 1 to ${LOCATION_LIMITS.nameLength} characters, not only spaces, no control characters`)
}

/** A location id as a path names it (an int64): a number, or undefined when no location can have it. */
const idOf = (id: bigint | number) => (id >= 1 && id <= MAX_LOCATION_ID ? Number(id) : undefined)

/** Locations, and the stock at each, as a client (over HTTP, the CLI, the console) reads and manages them. */
export class LocationsService {
  constructor(private readonly store: LocationStore) {}

  list(): Promise<Location[]> {
    return this.store.listLocations()
  }

  async get(id: bigint | number): Promise<Location> {
    const known = idOf(id)
    const location = known === undefined ? undefined : await this.store.getLocation(known)
    if (!location) throw new NotFoundError(`No location ${id}`)
    return location
  }

  async create(name: string): Promise<Location> {
    checkName(name)
    const created = await this.store.createLocation(name, new Date().toISOString(), LOCATION_LIMITS.locations)
    if (created === 'name_taken') throw new ConflictError('location_name_taken', `A location named ${JSON.stringify(name)} already exists`)
    if (created === 'limit_reached')
      throw new ConflictError('location_limit_reached', `There are ${LOCATION_LIMITS.locations} locations already`)
    return created
  }

  /** Renames, deactivates (only while it holds nothing; never the default one) or activates a location. */
  async update(id: bigint | number, update: LocationUpdate): Promise<Location> {
    if (update.name !== undefined) checkName(update.name)
    const known = idOf(id)
    const result = known === undefined ? 'not_found' : await this.store.updateLocation(known, update, new Date().toISOString())
    if (result === 'not_found') throw new NotFoundError(`No location ${id}`)
    if (result === 'name_taken')
      throw new ConflictError('location_name_taken', `A location named ${JSON.stringify(update.name)} already exists`)
    if (result === 'default_location') throw new InvalidInputError('The default location cannot be deactivated')
    if ('refused' in result)
      throw new ConflictError(
        'location_not_empty',
        `Location ${id} holds ${result.units} unit${result.units === 1 ? '' : 's'} of ${result.pets} pet${result.pets === 1 ? '' : 's'}; ` +
          'move or remove them before deactivating it',
      )
    return result
  }

  /** A page of one location's stock, by petId; 404 for a location that does not exist. */
  async stock(locationId: bigint | number, query: InventoryQuery): Promise<StockLevel[]> {
    const { id } = await this.get(locationId)
    return this.store.listLocationStock(id, query)
  }

  /** One pet's stock at every active location it is stocked at (the default one always first). */
  async petStock(petId: bigint): Promise<StockLevel[]> {
    const stock = await this.store.petStock(petId)
    if (!stock) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return stock
  }
}
