import type { InventoryChange } from '../../domain.js'
import type { ChangeQuery, LedgerReads } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { CHANGE_COLUMNS, toChange, type ChangeRow } from './rows.js'

/*
 * The ledger: every row of inventory_changes is written here, inside the transaction of its change,
 * and read here. A stock write's rows come planned (src/stock/planner.ts); an import's are made from
 * its staged records in one statement, since a file may hold a million of them.
 */

/** The last seq given out (0 when the ledger is empty). */
export function lastSeq(conn: SqliteConnection): bigint {
  return conn.query('SELECT coalesce(max(seq), 0) FROM inventory_changes').pluck().get() as bigint
}

/** Appends planned rows, seqs included. */
export function appendChanges(conn: SqliteConnection, rows: InventoryChange[]): void {
  const insert = conn.statement(`INSERT INTO inventory_changes (${CHANGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  for (const c of rows) insert.run(c.seq, c.petId, c.previousQuantity, c.quantity, c.reason, c.note, c.orderId, c.keyId, c.requestId, c.at)
}

/**
 * An inventory import's rows, one per staged record in file order (reason import), written before
 * the entries change so each row holds its entry's previous quantity (null for a new entry).
 */
export function appendInventoryImportChanges(conn: SqliteConnection, at: string): void {
  conn
    .statement(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at)
      SELECT s.pet_id, i.quantity, s.quantity, 'import', ? FROM temp.import_staging AS s
      LEFT JOIN inventory AS i ON i.pet_id = s.pet_id ORDER BY s.position`)
    .run(at)
}

/**
 * A pets import's rows: an entry it creates (a staged pet with a status and no entry yet) changes
 * its quantity from none to 0. Written before the entries are created.
 */
export function appendPetsImportChanges(conn: SqliteConnection, at: string): void {
  conn
    .statement(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at)
      SELECT s.id, NULL, 0, 'import', ? FROM temp.pets_staging AS s
      WHERE s.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.id)
      ORDER BY s.position`)
    .run(at)
}

export function sqliteLedger(conn: SqliteConnection): LedgerReads {
  return {
    listChanges({ after, through, limit, petId, reason, newestFirst = false }: ChangeQuery): Promise<InventoryChange[]> {
      const where = [
        'seq > ?',
        ...(through === undefined ? [] : ['seq <= ?']),
        ...(petId === undefined ? [] : ['pet_id = ?']),
        ...(reason === undefined ? [] : ['reason = ?']),
      ]
      // With a pet, its index (a pet's rows are few next to the ledger); the reason's index otherwise.
      const index =
        petId !== undefined ? 'INDEXED BY inventory_changes_pet' : reason !== undefined ? 'INDEXED BY inventory_changes_reason' : ''
      const sql = `SELECT ${CHANGE_COLUMNS} FROM inventory_changes ${index} WHERE ${where.join(' AND ')} ORDER BY seq ${newestFirst ? 'DESC' : ''} LIMIT ?`
      const args = [after, through, petId, reason, limit].filter((a) => a !== undefined)
      return conn.retryBusy(() => (conn.query(sql).all(...args) as ChangeRow[]).map(toChange))
    },
    lastChangeSeq: () => conn.retryBusy(() => lastSeq(conn)),
  }
}
