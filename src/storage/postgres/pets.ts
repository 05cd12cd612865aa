import type { Pet } from '../../domain.js'
import { type PetRow, rowToPet } from '../pet-row.js'
import type { PetReads } from '../ports.js'
import type { PostgresConnection } from './connection.js'

export function postgresPets(db: PostgresConnection): PetReads {
  return {
    async getPet(id: bigint): Promise<Pet | undefined> {
      const rows = await db.query<PetRow>(
        `SELECT p.id::text AS id, p.name, p.category_id::text AS category_id, p.category_name,
         p.photo_urls::text AS photo_urls, p.tags::text AS tags, i.status
       FROM pets AS p LEFT JOIN inventory AS i ON i.pet_id = p.id WHERE p.id = $1`,
        [String(id)],
      )
      return rows[0] && rowToPet(rows[0])
    },
  }
}
