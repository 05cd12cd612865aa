import type { InventoryChange } from '../../domain.js'
import type { ChangeQuery, LedgerReads } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { CHANGE_COLUMNS, TRACED_CHANGE_COLUMNS, toChange, type ChangeRow } from './rows.js'

/*
 * The ledger: every row of inventory_changes is written here, inside the transaction of its change,
 * and read here. A stock write's rows come planned (src/stock/planner.ts); an import's are made from
 * its staged records in one statement, since a file may hold a million of them.
 */

/** The last row's seq (0 when the ledger is empty): where a reader starting now starts. */
export function lastSeq(conn: SqliteConnection): bigint {
  return conn.query('SELECT coalesce(max(seq), 0) FROM inventory_changes').pluck().get() as bigint
}

/**
 * The last seq given out, which a jump (jumps.ts, migration 013) may have moved past the last row:
 * every writer numbers its rows after it, never after the last row alone.
 */
export function lastIssuedSeq(conn: SqliteConnection): bigint {
  return conn
    .query('SELECT max((SELECT coalesce(max(seq), 0) FROM inventory_changes), coalesce((SELECT max(through_seq) FROM ledger_jumps), 0))')
    .pluck()
    .get() as bigint
}

/** Rows per INSERT statement of appendChanges (15 parameters each). */
const ROWS_PER_INSERT = 64
const insertSql = (rows: number) =>
  `INSERT INTO inventory_changes (${TRACED_CHANGE_COLUMNS}) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`
/** The INSERT of 1 to ROWS_PER_INSERT rows, by count: a few dozen statements at most, each prepared once. */
const INSERT_SQL: string[] = Array.from({ length: ROWS_PER_INSERT + 1 }, (_, rows) => (rows === 0 ? '' : insertSql(rows)))

/**
 * Appends planned rows, seqs included: up to ROWS_PER_INSERT in one statement, which costs SQLite
 * less than a statement each (a batch of 30 PATCH rows of one pet: 5.5 against 6.2 µs a row,
 * commit included, in a micro-benchmark of the ledger's table and indexes).
 */
export function appendChanges(conn: SqliteConnection, rows: InventoryChange[]): void {
  for (let at = 0; at < rows.length; at += ROWS_PER_INSERT) {
    const chunk = rows.slice(at, at + ROWS_PER_INSERT)
    const values: unknown[] = []
    for (const c of chunk)
      values.push(
        c.seq,
        c.petId,
        c.previousQuantity,
        c.quantity,
        c.reason,
        c.note,
        c.orderId,
        c.batchId,
        c.keyId,
        c.requestId,
        c.at,
        c.reservationId ?? null,
        c.locationId ?? null,
        c.transferId ?? null,
        c.traceContext ?? null,
      )
    conn.statement(INSERT_SQL[chunk.length]!).run(values)
  }
}

/**
 * An inventory import's rows, one per staged record in file order (reason import), written before
 * the entries change so each row holds its entry's previous quantity (null for a new entry). Seqs
 * come after lastIssuedSeq: SQLite's own numbering (after the largest present) is that, unless a
 * jump lies past the last row (a restore, a bump), where it would land inside the jump; then they
 * are numbered explicitly (row_number() costs 0.35 to 0.6 s more for 1,000,000 rows, so only then).
 */
export function appendInventoryImportChanges(conn: SqliteConnection, at: string): void {
  const rows = `s.pet_id, i.quantity, s.quantity, 'import', ? FROM temp.import_staging AS s
      LEFT JOIN inventory AS i ON i.pet_id = s.pet_id ORDER BY s.position`
  const issued = lastIssuedSeq(conn)
  if (issued === lastSeq(conn))
    conn.statement(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at) SELECT ${rows}`).run(at)
  else
    conn
      .statement(`INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
        SELECT ? + row_number() OVER (ORDER BY s.position), ${rows}`)
      .run(issued, at)
}

/**
 * A pets import's rows: an entry it creates (a staged pet with a status and no entry yet) changes
 * its quantity from none to 0. Written before the entries are created.
 */
export function appendPetsImportChanges(conn: SqliteConnection, at: string): void {
  const rows = `s.id, NULL, 0, 'import', ? FROM temp.pets_staging AS s
      WHERE s.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.id)
      ORDER BY s.position`
  const issued = lastIssuedSeq(conn)
  if (issued === lastSeq(conn))
    conn.statement(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at) SELECT ${rows}`).run(at)
  else
    conn
      .statement(`INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
        SELECT ? + row_number() OVER (ORDER BY s.position), ${rows}`)
      .run(issued, at)
}

/** The width of a span of the index by pet, as a shift (migration 017: `seq >> 14`, 16,384 seqs). */
export const PET_INDEX_SPAN_BITS = 14n

export function sqliteLedger(conn: SqliteConnection): LedgerReads {
  return {
    listChanges(query: ChangeQuery): Promise<InventoryChange[]> {
      if (query.petId !== undefined) return conn.retryBusy(() => petChanges(conn, query, query.petId!))
      const { after, through, limit, reason, newestFirst = false, traceContexts = false } = query
      const where = ['seq > ?', ...(through === undefined ? [] : ['seq <= ?']), ...(reason === undefined ? [] : ['reason = ?'])]
      const index = reason === undefined ? '' : 'INDEXED BY inventory_changes_reason'
      const sql = `SELECT ${traceContexts ? TRACED_CHANGE_COLUMNS : CHANGE_COLUMNS} FROM inventory_changes ${index} WHERE ${where.join(' AND ')} ORDER BY seq ${newestFirst ? 'DESC' : ''} LIMIT ?`
      const args = [after, through, reason, limit].filter((a) => a !== undefined)
      return conn.retryBusy(() => (conn.query(sql).all(...args) as ChangeRow[]).map(toChange))
    },
    lastChangeSeq: () => conn.retryBusy(() => lastSeq(conn)),
  }
}

/** One pet's rows of one span (?), seqs after ? through ?, of one reason when `byReason`, up to ? of them. */
export function petSpanSql(byReason: boolean, newestFirst: boolean): string {
  return `SELECT ${CHANGE_COLUMNS} FROM inventory_changes INDEXED BY inventory_changes_pet_span
    WHERE (seq >> ${PET_INDEX_SPAN_BITS}) = ? AND pet_id = ? AND seq > ? AND seq <= ?${byReason ? ' AND reason = ?' : ''}
    ORDER BY seq ${newestFirst ? 'DESC' : ''} LIMIT ?`
}

/**
 * One pet's rows by the index by span and pet (migration 012): span after span, in the page's order,
 * each read as one range of the index, until the page is full or the seqs asked for end. A page
 * costs its rows plus one index seek per span it crosses (a span holds 16,384 seqs, so 611 seeks
 * from end to end of a 10,000,000-row ledger, a few µs each). Synchronous, so no write of this
 * connection comes between the spans; another process's rows all have seqs above `last`.
 */
function petChanges(conn: SqliteConnection, query: ChangeQuery, petId: bigint): InventoryChange[] {
  const { after, limit, reason, newestFirst = false } = query
  // Only the spans between the oldest row and the newest: a `through` far beyond the newest (INT64_MAX),
  // or a cursor before the oldest that retention kept (seqs from 10^9 up: 7,600 empty spans), would
  // otherwise cross spans that hold nothing.
  // Two subqueries: SQLite reads a lone min() or max() off the primary key, but scans for both in one.
  const [oldest, newest] = conn
    .query('SELECT (SELECT min(seq) FROM inventory_changes), (SELECT max(seq) FROM inventory_changes)')
    .get() as [bigint | null, bigint | null]
  if (oldest === null || newest === null) return []
  const last = query.through !== undefined && query.through < newest ? query.through : newest
  if (last <= after) return []
  const statement = conn.query(petSpanSql(reason !== undefined, newestFirst))
  const first = (after >= oldest ? after + 1n : oldest) >> PET_INDEX_SPAN_BITS
  const final = last >> PET_INDEX_SPAN_BITS
  const rows: InventoryChange[] = []
  const step = newestFirst ? -1n : 1n
  for (let span = newestFirst ? final : first; newestFirst ? span >= first : span <= final; span += step) {
    const args = [span, petId, after, last, ...(reason === undefined ? [] : [reason]), limit - rows.length]
    for (const row of statement.all(...args) as ChangeRow[]) rows.push(toChange(row))
    if (rows.length === limit) break
  }
  return rows
}
