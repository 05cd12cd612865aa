import type Database from 'better-sqlite3'
import type { ImportRecord, PetImportRecord } from '../../domain.js'
import { DuplicatePetIdError } from '../../errors.js'
import { petColumns } from '../pet-row.js'
import type { Imports } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { appendInventoryImportChanges, appendPetsImportChanges } from './ledger.js'

/**
 * Stages an import's records in a TEMP table keyed by their id, one transaction per chunk, as they
 * come. The TEMP table is a file of its own: staging takes no lock on the database, so the service
 * keeps writing meanwhile. `columns` gives a record's values, id first; its position comes last. A
 * repeated id throws DuplicatePetIdError with both positions. Resolves with the number of records.
 */
async function stage<R extends { position: number }>(
  db: Database.Database,
  chunks: AsyncIterable<R[]>,
  table: string,
  idColumn: string,
  columns: (record: R) => [bigint, ...unknown[]],
): Promise<number> {
  const firstAt = db.prepare(`SELECT position FROM temp.${table} WHERE ${idColumn} = ?`).pluck()
  let insert: Database.Statement | undefined
  let count = 0
  for await (const chunk of chunks) {
    db.transaction(() => {
      for (const record of chunk) {
        const values = [...columns(record), record.position]
        insert ??= db.prepare(`INSERT INTO temp.${table} VALUES (${values.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`)
        if (insert.run(...values).changes === 0) {
          const id = values[0] as bigint
          throw new DuplicatePetIdError(id, firstAt.get(id) as number, record.position)
        }
      }
    })()
    count += chunk.length
  }
  return count
}

export function sqliteImports(conn: SqliteConnection): Imports {
  const { db } = conn
  return {
    /** Stages the records (see stage), then copies them into the inventory in one IMMEDIATE transaction. */
    async importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number> {
      db.exec(`CREATE TEMP TABLE IF NOT EXISTS import_staging (
        pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, position INTEGER NOT NULL)`)
      try {
        const count = await stage(db, chunks, 'import_staging', 'pet_id', ({ item }) => [item.petId, item.quantity, item.status])
        const at = new Date().toISOString()
        await conn.write(() => {
          // The ledger first, while the entries still hold their previous quantities; seqs in file order.
          appendInventoryImportChanges(conn, at)
          db.exec(`INSERT INTO inventory (pet_id, quantity, status)
            SELECT pet_id, quantity, status FROM temp.import_staging WHERE true
            ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status`)
        })
        return count
      } finally {
        db.exec('DELETE FROM temp.import_staging')
      }
    },

    /**
     * Stages the pets (see stage), then writes them and their statuses in one IMMEDIATE transaction:
     * each staged pet with a status sets its entry's status, creating the entry with quantity 0 when
     * there is none (a change of quantity, from none to 0, with its ledger row).
     */
    async importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number> {
      db.exec(`CREATE TEMP TABLE IF NOT EXISTS pets_staging (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, category_id INTEGER, category_name TEXT,
        photo_urls TEXT NOT NULL, tags TEXT NOT NULL, status TEXT, position INTEGER NOT NULL)`)
      try {
        const count = await stage(db, chunks, 'pets_staging', 'id', ({ pet }) => [...petColumns(pet), pet.status ?? null])
        await conn.write(() => {
          db.exec(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
            SELECT id, name, category_id, category_name, photo_urls, tags FROM temp.pets_staging WHERE true
            ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
              category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`)
          appendPetsImportChanges(conn, new Date().toISOString())
          db.exec(`INSERT INTO inventory (pet_id, quantity, status)
            SELECT id, 0, status FROM temp.pets_staging WHERE status IS NOT NULL
            ON CONFLICT (pet_id) DO UPDATE SET status = excluded.status`)
        })
        return count
      } finally {
        db.exec('DELETE FROM temp.pets_staging')
      }
    },
  }
}
