import type { Pet } from '../../domain.js'
import { rowToPet, type PetRow } from '../pet-row.js'
import type { PetReads } from '../ports.js'
import type { SqliteConnection } from './connection.js'

export function sqlitePets(conn: SqliteConnection): PetReads {
  const getPet = conn.db
    .prepare(`SELECT p.id, p.name, p.category_id, p.category_name, p.photo_urls, p.tags, i.status
      FROM pets AS p LEFT JOIN inventory AS i ON i.pet_id = p.id WHERE p.id = ?`)
    .safeIntegers()
  return {
    async getPet(id: bigint): Promise<Pet | undefined> {
      const row = await conn.retryBusy(() => getPet.get(id) as PetRow | undefined)
      return row && rowToPet(row)
    },
  }
}
