import { DEFAULT_LOCATION_ID, type Location, type PetStatus, type StockLevel } from '../../domain.js'
import type { InventoryQuery, LocationStore, LocationUpdate, LocationUpdateResult } from '../ports.js'
import type { SqliteConnection } from './connection.js'

/*
 * Locations and the stock at each (migration 019): a stock batch reads the levels and locations it
 * needs inside its transaction (stock.ts), and writes the levels its plan changed.
 */

type LocationRow = [id: bigint, name: string, active: bigint, createdAt: string, updatedAt: string]
type LevelRow = [petId: bigint, locationId: bigint, quantity: bigint, status: string]

const LOCATION_COLUMNS = 'id, name, active, created_at, updated_at'

const toLocation = ([id, name, active, createdAt, updatedAt]: LocationRow): Location => ({
  id: Number(id),
  name,
  active: active === 1n,
  createdAt,
  updatedAt,
})

const toLevel = ([petId, locationId, quantity, status]: LevelRow): StockLevel => ({
  petId,
  locationId: Number(locationId),
  quantity: Number(quantity),
  status: status as PetStatus,
})

const jsonList = (values: Iterable<bigint | number>) => `[${[...values].join(',')}]`

/** Every level of `petIds` at the other locations than the default one, into `into` (an empty map for a pet with none). */
export function readLevels(conn: SqliteConnection, petIds: Set<bigint>, into: Map<bigint, Map<number, number>>): void {
  if (petIds.size === 0) return
  for (const petId of petIds) into.set(petId, new Map())
  const rows = conn
    .query('SELECT pet_id, location_id, quantity FROM stock_levels WHERE pet_id IN (SELECT value FROM json_each(?))')
    .all(jsonList(petIds)) as [bigint, bigint, bigint][]
  for (const [petId, locationId, quantity] of rows) into.get(petId)!.set(Number(locationId), Number(quantity))
}

/** Whether each of the locations `ids` that exists is active, into `into`. */
export function readLocationStates(conn: SqliteConnection, ids: Set<number>, into: Map<number, boolean>): void {
  if (ids.size === 0) return
  const rows = conn.query('SELECT id, active FROM locations WHERE id IN (SELECT value FROM json_each(?))').all(jsonList(ids)) as [
    bigint,
    bigint,
  ][]
  for (const [id, active] of rows) into.set(Number(id), active === 1n)
}

/** Writes a plan's levels (a row made the first time a pet is stocked at a location). */
export function writeLevels(conn: SqliteConnection, levels: Map<bigint, Map<number, number>>): void {
  if (levels.size === 0) return
  const upsert = conn.statement(`INSERT INTO stock_levels (pet_id, location_id, quantity) VALUES (?, ?, ?)
    ON CONFLICT (pet_id, location_id) DO UPDATE SET quantity = excluded.quantity`)
  for (const [petId, own] of levels) for (const [locationId, quantity] of own) upsert.run(petId, locationId, quantity)
}

/** Stock at the default location: every entry's quantity less what it has elsewhere. */
const DEFAULT_STOCK = `SELECT pet_id, ${DEFAULT_LOCATION_ID}, quantity - elsewhere, status FROM inventory`
const OTHER_STOCK = `SELECT s.pet_id, s.location_id, s.quantity, i.status
  FROM stock_levels AS s JOIN inventory AS i ON i.pet_id = s.pet_id`

export function sqliteLocations(conn: SqliteConnection): LocationStore {
  const read = (id: number) => conn.query(`SELECT ${LOCATION_COLUMNS} FROM locations WHERE id = ?`).get(id) as LocationRow | undefined
  return {
    listLocations: () =>
      conn.retryBusy(() => (conn.query(`SELECT ${LOCATION_COLUMNS} FROM locations ORDER BY id`).all() as LocationRow[]).map(toLocation)),

    getLocation: (id) =>
      conn.retryBusy(() => {
        const row = read(id)
        return row && toLocation(row)
      }),

    createLocation: (name, at, max) =>
      conn.commit(() => {
        if ((conn.query('SELECT count(*) FROM locations').pluck().get() as bigint) >= BigInt(max)) return 'limit_reached'
        const rows = conn
          .query(`INSERT INTO locations (name, active, created_at, updated_at) VALUES (?, 1, ?, ?)
            ON CONFLICT (name) DO NOTHING RETURNING ${LOCATION_COLUMNS}`)
          .all(name, at, at) as LocationRow[]
        return rows[0] ? toLocation(rows[0]) : 'name_taken'
      }),

    updateLocation: (id, { name, active }: LocationUpdate, at) =>
      conn.commit((): LocationUpdateResult => {
        const row = read(id)
        if (!row) return 'not_found'
        const location = toLocation(row)
        if (active === false && location.active) {
          if (id === DEFAULT_LOCATION_ID) return 'default_location'
          const [units, pets] = conn
            .query('SELECT coalesce(sum(quantity), 0), count(*) FROM stock_levels WHERE location_id = ? AND quantity > 0')
            .get(id) as [bigint, bigint]
          if (pets > 0n) return { refused: 'not_empty', units: Number(units), pets: Number(pets) }
        }
        if (name !== undefined && name.toLowerCase() !== location.name.toLowerCase()) {
          const taken = conn.query('SELECT 1 FROM locations WHERE name = ? AND id <> ?').get(name, id)
          if (taken) return 'name_taken'
        }
        const next = { ...location, name: name ?? location.name, active: active ?? location.active, updatedAt: at }
        conn.statement('UPDATE locations SET name = ?, active = ?, updated_at = ? WHERE id = ?').run(next.name, next.active ? 1 : 0, at, id)
        return next
      }),

    listLocationStock: (locationId, { after, limit, status }: InventoryQuery) =>
      conn.retryBusy(() => {
        const where = [
          after === undefined ? '' : `${locationId === DEFAULT_LOCATION_ID ? '' : 's.'}pet_id > @after`,
          status === undefined ? '' : 'status = @status',
        ].filter(Boolean)
        const from = locationId === DEFAULT_LOCATION_ID ? DEFAULT_STOCK : `${OTHER_STOCK} WHERE s.location_id = @locationId`
        const sql = `${from} ${where.length ? `${locationId === DEFAULT_LOCATION_ID ? 'WHERE' : 'AND'} ${where.join(' AND ')}` : ''}
          ORDER BY ${locationId === DEFAULT_LOCATION_ID ? '' : 's.'}pet_id LIMIT @limit`
        const args = {
          limit,
          ...(locationId === DEFAULT_LOCATION_ID ? {} : { locationId }),
          ...(after === undefined ? {} : { after }),
          ...(status === undefined ? {} : { status }),
        }
        return (conn.query(sql).all(args) as LevelRow[]).map(toLevel)
      }),

    listReachableInventory: (reach, { after, limit, status, petId }) =>
      conn.retryBusy(() => {
        const others = reach.filter((id) => id !== DEFAULT_LOCATION_ID)
        const where = [
          after === undefined ? '' : 'i.pet_id > @after',
          status === undefined ? '' : 'i.status = @status',
          petId === undefined ? '' : 'i.pet_id = @petId',
        ].filter(Boolean)
        // The stock elsewhere is read only for entries that have some.
        const sql = `SELECT i.pet_id, ${reach.includes(DEFAULT_LOCATION_ID) ? 'i.quantity - i.elsewhere' : '0'} + CASE WHEN i.elsewhere = 0 THEN 0 ELSE
            coalesce((SELECT sum(s.quantity) FROM stock_levels AS s WHERE s.pet_id = i.pet_id
              AND s.location_id IN (SELECT value FROM json_each(@others))), 0) END, i.status
          FROM inventory AS i ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY i.pet_id LIMIT @limit`
        const args = {
          limit,
          others: jsonList(others),
          ...(after === undefined ? {} : { after }),
          ...(status === undefined ? {} : { status }),
          ...(petId === undefined ? {} : { petId }),
        }
        return (conn.query(sql).all(args) as [bigint, bigint, string][]).map(([id, quantity, s]) => ({
          petId: id,
          quantity: Number(quantity),
          status: s as PetStatus,
        }))
      }),

    petStock: (petId) =>
      conn.retryBusy(() => {
        const entry = conn.query(`${DEFAULT_STOCK} WHERE pet_id = ?`).get(petId) as LevelRow | undefined
        if (!entry) return undefined
        const others = conn
          .query(`${OTHER_STOCK} JOIN locations AS l ON l.id = s.location_id WHERE s.pet_id = ? AND l.active ORDER BY s.location_id`)
          .all(petId) as LevelRow[]
        return [toLevel(entry), ...others.map(toLevel)]
      }),
  }
}
