import type { ImportRecord, PetImportRecord } from '../../domain.js'
import { DuplicatePetIdError } from '../../errors.js'
import { petColumns } from '../pet-row.js'
import type { Imports } from '../ports.js'
import { lockInventory, type PostgresConnection, type Run } from './connection.js'
import { logInventoryImport, logPetsImportEntries } from './ledger.js'

/** Rows copied from an import's staging table into the inventory per statement. */
const IMPORT_PIECE = 10_000

export function postgresImports(db: PostgresConnection): Imports {
  /**
   * An import's one transaction. An import is an operator's bulk job, not a request: it has no
   * deadline, and each of its statements is bounded by DB_MIGRATION_TIMEOUT_MS.
   */
  const importTransaction = (body: (run: Run) => Promise<void>): Promise<void> =>
    db.transaction(
      Number.POSITIVE_INFINITY,
      async (run) => {
        await run(`SET LOCAL statement_timeout = ${db.bulkTimeoutMs}`)
        await body(run)
      },
      db.bulkTimeoutMs,
    )

  return {
    /**
     * Stages the records in a temporary table of the import's own transaction (no lock on the inventory
     * meanwhile), then takes the inventory lock and copies them in, in pieces.
     */
    async importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number> {
      let count = 0
      await importTransaction(async (run) => {
        await run(`CREATE TEMP TABLE import_staging (
        pet_id bigint PRIMARY KEY, quantity integer NOT NULL, status text NOT NULL, position integer NOT NULL) ON COMMIT DROP`)
        for await (const chunk of chunks) {
          const staged = await run<{ id: string }>(
            `INSERT INTO import_staging SELECT * FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::integer[])
           ON CONFLICT (pet_id) DO NOTHING RETURNING pet_id::text AS id`,
            [
              chunk.map((r) => String(r.item.petId)),
              chunk.map((r) => r.item.quantity),
              chunk.map((r) => r.item.status),
              chunk.map((r) => r.position),
            ],
          )
          if (staged.length < chunk.length) {
            const ids = chunk.map(({ item, position }) => ({ id: String(item.petId), position }))
            await throwFirstDuplicate(run, 'import_staging', 'pet_id', ids, staged)
          }
          count += chunk.length
        }
        // The ledger first, while the entries still hold their previous quantities: a seq per record
        // in file order, from the counter the inventory_version lock guards.
        const { lastChange } = await lockInventory(run)
        await logInventoryImport(run, lastChange, count)
        for (let after: string | undefined; ; ) {
          const copied = await run<{ last: string | null }>(
            `WITH piece AS (
             SELECT pet_id, quantity, status FROM import_staging
             WHERE $1::bigint IS NULL OR pet_id > $1::bigint ORDER BY pet_id LIMIT ${IMPORT_PIECE})
           , written AS (
             INSERT INTO inventory (pet_id, quantity, status) SELECT * FROM piece
             ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status
             RETURNING pet_id)
           SELECT max(pet_id)::text AS last FROM written`,
            [after ?? null],
          )
          const last = copied[0]?.last
          if (!last) break
          after = last
        }
      })
      return count
    },

    /**
     * Stages the pets in a temporary table of the import's own transaction (no lock meanwhile), then
     * takes the inventory lock (the transaction writes statuses to the inventory, and the pets rows are
     * written under it too, so two imports never lock pets in opposite orders) and writes the pets and
     * their statuses.
     */
    async importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number> {
      let count = 0
      await importTransaction(async (run) => {
        await run(`CREATE TEMP TABLE pets_staging (
        id bigint PRIMARY KEY, name text NOT NULL, category_id bigint, category_name text,
        photo_urls jsonb NOT NULL, tags jsonb NOT NULL, status text, position integer NOT NULL) ON COMMIT DROP`)
        for await (const chunk of chunks) {
          // unnest takes one array per column: the chunk's rows transposed, int64 values as text (exact).
          const rows = chunk.map(({ pet, position }) => [...petColumns(pet), pet.status ?? null, position])
          const columns = rows[0]!.map((_, i) => rows.map((row) => (typeof row[i] === 'bigint' ? String(row[i]) : row[i])))
          const staged = await run<{ id: string }>(
            `INSERT INTO pets_staging SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[],
             $5::jsonb[], $6::jsonb[], $7::text[], $8::integer[])
           ON CONFLICT (id) DO NOTHING RETURNING id::text AS id`,
            columns,
          )
          if (staged.length < chunk.length) {
            const ids = chunk.map(({ pet, position }) => ({ id: String(pet.id), position }))
            await throwFirstDuplicate(run, 'pets_staging', 'id', ids, staged)
          }
          count += chunk.length
        }
        await lockInventory(run)
        await run(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
        SELECT id, name, category_id, category_name, photo_urls, tags FROM pets_staging
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
          category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`)
        await setStatusesOfStagedPets(run)
      })
      return count
    },
  }
}

/**
 * A chunk staged fewer rows than it has: the first record, in file order, whose id was already
 * there. `ids` are the chunk's ids as text, in file order, with their positions.
 */
async function throwFirstDuplicate(
  run: Run,
  table: string,
  idColumn: string,
  ids: { id: string; position: number }[],
  staged: { id: string }[],
): Promise<never> {
  const fresh = new Set(staged.map((r) => r.id))
  const earlier = new Map<string, number>()
  for (const { id, position } of ids) {
    const inChunk = earlier.get(id)
    if (inChunk === undefined && fresh.has(id)) {
      earlier.set(id, position)
      continue
    }
    const first = inChunk ?? (await run<{ position: number }>(`SELECT position FROM ${table} WHERE ${idColumn} = $1`, [id]))[0]!.position
    throw new DuplicatePetIdError(BigInt(id), first, position)
  }
  throw new Error('a chunk staged fewer rows than it has, but no duplicate was found')
}

/**
 * The pets import's one write to the inventory, inside its transaction and under the inventory lock
 * it took first: each staged pet with a status sets its entry's status, creating the entry with
 * quantity 0 when there is none. A created entry is a change of quantity (from none to 0): it gets
 * its ledger row, reason import, with a seq from the counter that lock guards.
 */
async function setStatusesOfStagedPets(run: Run) {
  const { lastChange } = await lockInventory(run)
  await logPetsImportEntries(run, lastChange)
  await run(`INSERT INTO inventory (pet_id, quantity, status)
      SELECT id, 0, status FROM pets_staging WHERE status IS NOT NULL
      ON CONFLICT (pet_id) DO UPDATE SET status = excluded.status`)
}
