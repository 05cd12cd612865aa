import type { InventoryChange } from '../../domain.js'
import type { ChangeQuery, LedgerReads } from '../ports.js'
import type { PostgresConnection, Run } from './connection.js'
import { type ChangeRow, toChange } from './rows.js'
import { intArray, textArray } from './array-literals.js'

/*
 * The ledger, inventory_changes: its reads, and every row the TypeScript side writes to it (the
 * set_inventory_quantities function of migration 007 writes those of plain PATCH batches). Writers
 * hold the inventory_version lock (lockInventory) and give seqs out from its last_change counter.
 */

/** The columns a read of the ledger takes (with `trace_context` only when asked: ChangeQuery.traceContexts). */
export const CHANGE_COLUMNS =
  'seq::text AS seq, pet_id::text AS pet_id, previous_quantity, quantity, reason, note, order_id::text AS order_id, batch_id, key_id, request_id, at, ' +
  'reservation_id::text AS reservation_id, location_id, transfer_id'

export function postgresLedger(db: PostgresConnection): LedgerReads {
  return {
    async listChanges({
      after,
      through,
      limit,
      petId,
      reason,
      newestFirst = false,
      traceContexts = false,
    }: ChangeQuery): Promise<InventoryChange[]> {
      // Only the conditions given, so that one pet's rows are read by its index (pet_id, seq) from `after` on.
      const values: unknown[] = [String(after)]
      const where = ['seq > $1']
      if (through !== undefined) where.push(`seq <= $${values.push(String(through))}`)
      if (petId !== undefined) where.push(`pet_id = $${values.push(String(petId))}`)
      if (reason !== undefined) where.push(`reason = $${values.push(reason)}`)
      const rows = await db.query<ChangeRow>(
        `SELECT ${CHANGE_COLUMNS}${traceContexts ? ', trace_context' : ''} FROM inventory_changes WHERE ${where.join(' AND ')}
       ORDER BY inventory_changes.seq ${newestFirst ? 'DESC' : ''} LIMIT $${values.push(limit)}`,
        values,
      )
      return rows.map(toChange)
    },

    // The last row's, not the counter's (inventory_version.last_change): after a jump (jumps.ts) the
    // counter is inside it, and a reader starting there would be refused as from a lost history.
    async lastChangeSeq(): Promise<bigint> {
      const [row] = await db.query<{ last: string }>('SELECT coalesce(max(seq), 0)::text AS last FROM inventory_changes')
      return BigInt(row!.last)
    },
  }
}

/** The parameter type of each column of an inserted ledger row, seq to batch_id. */
const CHANGE_ARRAYS = ['bigint', 'bigint', 'integer', 'integer', 'text', 'bigint', 'integer', 'text', 'text', 'text', 'text']

/** A stock batch's ledger rows as one array per column, seq to batch_id (CHANGE_ARRAYS' order). */
export function changeArrays(changes: InventoryChange[]): unknown[] {
  return [
    intArray(changes.map((c) => c.seq)),
    intArray(changes.map((c) => c.petId)),
    intArray(changes.map((c) => c.previousQuantity)),
    intArray(changes.map((c) => c.quantity)),
    textArray(changes.map((c) => c.reason)),
    intArray(changes.map((c) => c.orderId)),
    intArray(changes.map((c) => c.keyId)),
    textArray(changes.map((c) => c.requestId)),
    textArray(changes.map((c) => c.note)),
    textArray(changes.map((c) => c.traceContext)),
    textArray(changes.map((c) => c.batchId)),
  ]
}

/** The rows' hold ids, locations and transfer ids (the columns apply_stock_plan's plans never write), as three arrays. */
export function placeArrays(changes: InventoryChange[]): string[] {
  return [
    intArray(changes.map((c) => c.reservationId)),
    intArray(changes.map((c) => c.locationId)),
    textArray(changes.map((c) => c.transferId)),
  ]
}

/**
 * A stock batch's ledger rows, as the INSERT of one data-modifying CTE inside the batch's single
 * statement (stock.ts writes the whole plan in one round trip): its arrays (changeArrays) are the
 * parameters from `$first` on, `$at` is the batch's time, and the three from `$places` on the rows'
 * hold ids, locations and transfer ids (placeArrays).
 */
export function insertPlanChanges(first: number, at: number, places: number): string {
  const arrays = CHANGE_ARRAYS.map((type, i) => `$${first + i}::${type}[]`).join(', ')
  return `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, note, trace_context, batch_id, reservation_id, location_id, transfer_id, at)
         SELECT v.*, $${at} FROM unnest(${arrays}, $${places}::bigint[], $${places + 1}::integer[], $${places + 2}::text[]) AS v`
}

/**
 * An inventory import's ledger rows: one per record staged in import_staging (imports.ts), seqs after
 * `lastChange` in file order, each entry's current quantity as the previous one (so it runs before
 * the entries are written); then the counter moves past them.
 */
export async function logInventoryImport(run: Run, lastChange: bigint, count: number): Promise<void> {
  await run(
    `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
         SELECT $1::bigint + row_number() OVER (ORDER BY s.position), s.pet_id, i.quantity, s.quantity, 'import', $2
         FROM import_staging AS s LEFT JOIN inventory AS i USING (pet_id)`,
    [String(lastChange), new Date()],
  )
  await run('UPDATE inventory_version SET last_change = last_change + $1', [count])
}

/**
 * A pets import's ledger rows: one per entry the import is about to create with quantity 0 (a staged
 * pet with a status and no entry yet), reason import, in file order after `lastChange`.
 */
export async function logPetsImportEntries(run: Run, lastChange: bigint): Promise<void> {
  await run(
    `WITH logged AS (
         INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
         SELECT $1::bigint + row_number() OVER (ORDER BY s.position), s.id, NULL, 0, 'import', $2 FROM pets_staging AS s
         WHERE s.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.id)
         RETURNING 1)
       UPDATE inventory_version SET last_change = last_change + (SELECT count(*) FROM logged)`,
    [String(lastChange), new Date()],
  )
}
