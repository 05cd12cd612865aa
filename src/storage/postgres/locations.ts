import { DEFAULT_LOCATION_ID, type Location, type PetStatus, type StockLevel } from '../../domain.js'
import type { InventoryQuery, LocationStore, LocationUpdate, LocationUpdateResult } from '../ports.js'
import { intArray } from './array-literals.js'
import { lockInventory, type PostgresConnection, type Run } from './connection.js'

/*
 * Locations and the stock at each (migration 021), as SQLite's: a stock batch planned under the
 * inventory_version lock reads the levels and locations it needs (stock.ts); creating and updating a
 * location take that lock too, so none is deactivated while a write puts stock there.
 */

interface LocationRow {
  id: number
  name: string
  active: boolean
  created_at: Date
  updated_at: Date
}
interface LevelRow {
  pet_id: string
  location_id: number
  quantity: number
  status: PetStatus
}

const LOCATION_COLUMNS = 'id, name, active, created_at, updated_at'

const toLocation = (r: LocationRow): Location => ({
  id: r.id,
  name: r.name,
  active: r.active,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
})
const toLevel = (r: LevelRow): StockLevel => ({
  petId: BigInt(r.pet_id),
  locationId: r.location_id,
  quantity: r.quantity,
  status: r.status,
})

/** Every level of `petIds` at the other locations than the default one, into `into` (an empty map for a pet with none). */
export async function readLevels(run: Run, petIds: Set<bigint>, into: Map<bigint, Map<number, number>>): Promise<void> {
  if (petIds.size === 0) return
  for (const petId of petIds) into.set(petId, new Map())
  const rows = await run<{ pet_id: string; location_id: number; quantity: number }>(
    'SELECT pet_id::text AS pet_id, location_id, quantity FROM stock_levels WHERE pet_id = ANY($1::bigint[])',
    [intArray([...petIds])],
  )
  for (const r of rows) into.get(BigInt(r.pet_id))!.set(r.location_id, r.quantity)
}

/** Whether each of the locations `ids` that exists is active, into `into`. */
export async function readLocationStates(run: Run, ids: Set<number>, into: Map<number, boolean>): Promise<void> {
  if (ids.size === 0) return
  const rows = await run<{ id: number; active: boolean }>('SELECT id, active FROM locations WHERE id = ANY($1::integer[])', [
    intArray([...ids]),
  ])
  for (const r of rows) into.set(r.id, r.active)
}

const DEFAULT_STOCK = `SELECT pet_id::text AS pet_id, ${DEFAULT_LOCATION_ID} AS location_id, quantity - elsewhere AS quantity, status FROM inventory`
const OTHER_STOCK = `SELECT s.pet_id::text AS pet_id, s.location_id, s.quantity, i.status
  FROM stock_levels AS s JOIN inventory AS i ON i.pet_id = s.pet_id`

export function postgresLocations(db: PostgresConnection): LocationStore {
  const locked = <T>(body: (run: Run) => Promise<T>) =>
    db.transaction(Date.now() + db.timeoutMs, async (run) => {
      await lockInventory(run)
      return body(run)
    })
  return {
    async listLocations() {
      return (await db.query<LocationRow>(`SELECT ${LOCATION_COLUMNS} FROM locations ORDER BY id`)).map(toLocation)
    },

    async getLocation(id) {
      const [row] = await db.query<LocationRow>(`SELECT ${LOCATION_COLUMNS} FROM locations WHERE id = $1`, [id])
      return row && toLocation(row)
    },

    createLocation: (name, at, max) =>
      locked(async (run) => {
        const [count] = await run<{ n: number }>('SELECT count(*)::integer AS n FROM locations')
        if (count!.n >= max) return 'limit_reached' as const
        const [row] = await run<LocationRow>(
          `INSERT INTO locations (name, active, created_at, updated_at) VALUES ($1, true, $2, $2)
           ON CONFLICT (lower(name)) DO NOTHING RETURNING ${LOCATION_COLUMNS}`,
          [name, at],
        )
        return row ? toLocation(row) : ('name_taken' as const)
      }),

    updateLocation: (id, { name, active }: LocationUpdate, at) =>
      locked(async (run): Promise<LocationUpdateResult> => {
        const [row] = await run<LocationRow>(`SELECT ${LOCATION_COLUMNS} FROM locations WHERE id = $1`, [id])
        if (!row) return 'not_found'
        const location = toLocation(row)
        if (active === false && location.active) {
          if (id === DEFAULT_LOCATION_ID) return 'default_location'
          const [held] = await run<{ units: string; pets: number }>(
            'SELECT coalesce(sum(quantity), 0)::text AS units, count(*)::integer AS pets FROM stock_levels WHERE location_id = $1 AND quantity > 0',
            [id],
          )
          if (held!.pets > 0) return { refused: 'not_empty', units: Number(held!.units), pets: held!.pets }
        }
        if (name !== undefined && name.toLowerCase() !== location.name.toLowerCase()) {
          const taken = await run('SELECT 1 FROM locations WHERE lower(name) = lower($1) AND id <> $2', [name, id])
          if (taken.length > 0) return 'name_taken'
        }
        const next = { ...location, name: name ?? location.name, active: active ?? location.active, updatedAt: at }
        await run('UPDATE locations SET name = $1, active = $2, updated_at = $3 WHERE id = $4', [next.name, next.active, at, id])
        return next
      }),

    async listLocationStock(locationId, { after, limit, status }: InventoryQuery) {
      const values: unknown[] = []
      const where: string[] = []
      const own = locationId === DEFAULT_LOCATION_ID
      if (!own) where.push(`s.location_id = $${values.push(locationId)}`)
      if (after !== undefined) where.push(`${own ? '' : 's.'}pet_id > $${values.push(String(after))}`)
      if (status !== undefined) where.push(`${own ? '' : 'i.'}status = $${values.push(status)}`)
      const rows = await db.query<LevelRow>(
        `${own ? DEFAULT_STOCK : OTHER_STOCK} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY ${own ? 'inventory.' : 's.'}pet_id LIMIT $${values.push(limit)}`,
        values,
      )
      return rows.map(toLevel)
    },

    async listReachableInventory(reach, { after, limit, status, petId }) {
      const values: unknown[] = [intArray(reach.filter((id) => id !== DEFAULT_LOCATION_ID))]
      const where: string[] = []
      if (after !== undefined) where.push(`i.pet_id > $${values.push(String(after))}`)
      if (status !== undefined) where.push(`i.status = $${values.push(status)}`)
      if (petId !== undefined) where.push(`i.pet_id = $${values.push(String(petId))}`)
      // The stock elsewhere is read only for entries that have some.
      const rows = await db.query<{ pet_id: string; quantity: number; status: PetStatus }>(
        `SELECT i.pet_id::text AS pet_id,
           (${reach.includes(DEFAULT_LOCATION_ID) ? 'i.quantity - i.elsewhere' : '0'} + CASE WHEN i.elsewhere = 0 THEN 0 ELSE
             coalesce((SELECT sum(s.quantity) FROM stock_levels AS s WHERE s.pet_id = i.pet_id AND s.location_id = ANY($1::integer[])), 0)
           END)::integer AS quantity, i.status
         FROM inventory AS i ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY i.pet_id LIMIT $${values.push(limit)}`,
        values,
      )
      return rows.map((r) => ({ petId: BigInt(r.pet_id), quantity: r.quantity, status: r.status }))
    },

    async petStock(petId) {
      const rows = await db.query<LevelRow>(
        `(${DEFAULT_STOCK} WHERE pet_id = $1)
         UNION ALL
         (${OTHER_STOCK} JOIN locations AS l ON l.id = s.location_id WHERE s.pet_id = $1 AND l.active ORDER BY s.location_id)`,
        [String(petId)],
      )
      return rows.length === 0 ? undefined : rows.map(toLevel)
    },
  }
}
