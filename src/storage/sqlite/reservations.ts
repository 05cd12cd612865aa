import type { Reservation, ReservationStatus } from '../../domain.js'
import type { ReservationQuery, ReservationReads } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { toAllocations } from './rows.js'

/*
 * Holds (migration 018): a row of reservations each, its lines in reservation_lines. Read inside a
 * stock batch's transaction when the batch names them, written with the batch's plan.
 */

type ReservationRow = [id: bigint, status: string, expiresAt: string, reference: string | null, createdAt: string, updatedAt: string]
type LineRow = [reservationId: bigint, petId: bigint, quantity: bigint, orderId: bigint | null, allocations: string | null]

const RESERVATION_COLUMNS = 'id, status, expires_at, reference, created_at, updated_at'
const LINE_COLUMNS = `reservation_id, pet_id, quantity, order_id,
  (SELECT json_group_array(json_array(a.location_id, a.quantity)) FROM reservation_allocations AS a
     WHERE a.reservation_id = l.reservation_id AND a.line = l.line HAVING count(*) > 0)`

/** Holds of the given rows, each with its lines in line order, in the rows' order. */
function withLines(conn: SqliteConnection, rows: ReservationRow[]): Reservation[] {
  if (rows.length === 0) return []
  const lines = conn
    .query(
      `SELECT ${LINE_COLUMNS} FROM reservation_lines AS l WHERE reservation_id IN (SELECT value FROM json_each(?)) ORDER BY reservation_id, line`,
    )
    .all(`[${rows.map((r) => r[0]).join(',')}]`) as LineRow[]
  const byHold = new Map<bigint, Reservation['lines']>()
  for (const [reservationId, petId, quantity, orderId, allocations] of lines) {
    let list = byHold.get(reservationId)
    if (!list) {
      list = []
      byHold.set(reservationId, list)
    }
    const taken = toAllocations(allocations)
    list.push(taken ? { petId, quantity: Number(quantity), orderId, allocations: taken } : { petId, quantity: Number(quantity), orderId })
  }
  return rows.map(([id, status, expiresAt, reference, createdAt, updatedAt]) => ({
    id,
    status: status as ReservationStatus,
    lines: byHold.get(id) ?? [],
    expiresAt,
    reference,
    createdAt,
    updatedAt,
  }))
}

/** The holds of `ids` that exist, read inside the caller's transaction, into `into`. */
export function readReservations(conn: SqliteConnection, ids: Set<bigint>, into: Map<bigint, Reservation>): void {
  if (ids.size === 0) return
  const rows = conn
    .query(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id IN (SELECT value FROM json_each(?))`)
    .all(`[${[...ids].join(',')}]`) as ReservationRow[]
  for (const r of withLines(conn, rows)) into.set(r.id, r)
}

/** The largest hold id (0 when there is none). */
export function lastReservationId(conn: SqliteConnection): bigint {
  return conn.query('SELECT coalesce(max(id), 0) FROM reservations').pluck().get() as bigint
}

/** Writes a stock batch's holds: those it placed (with their lines), and the existing ones it changed. */
export function writeReservations(conn: SqliteConnection, placed: Reservation[], changed: Reservation[]): void {
  if (placed.length === 0 && changed.length === 0) return
  const insert = conn.statement(`INSERT INTO reservations (${RESERVATION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`)
  const insertLine = conn.statement(
    'INSERT INTO reservation_lines (reservation_id, line, pet_id, quantity, order_id) VALUES (?, ?, ?, ?, ?)',
  )
  const update = conn.statement('UPDATE reservations SET status = ?, expires_at = ?, updated_at = ? WHERE id = ?')
  const confirmLine = conn.statement('UPDATE reservation_lines SET order_id = ? WHERE reservation_id = ? AND line = ?')
  for (const r of placed) {
    insert.run(r.id, r.status, r.expiresAt, r.reference, r.createdAt, r.updatedAt)
    for (const [i, line] of r.lines.entries()) {
      insertLine.run(r.id, i, line.petId, line.quantity, line.orderId)
      if (!line.allocations) continue
      const allocate = conn.statement(
        'INSERT INTO reservation_allocations (reservation_id, line, position, location_id, quantity) VALUES (?, ?, ?, ?, ?)',
      )
      for (const [position, a] of line.allocations.entries()) allocate.run(r.id, i, position, a.locationId, a.quantity)
    }
  }
  for (const r of changed) {
    update.run(r.status, r.expiresAt, r.updatedAt, r.id)
    if (r.status === 'confirmed') for (const [i, line] of r.lines.entries()) confirmLine.run(line.orderId, r.id, i)
  }
}

export function sqliteReservations(conn: SqliteConnection): ReservationReads {
  return {
    getReservation: (id) =>
      conn.retryBusy(() => {
        const found = new Map<bigint, Reservation>()
        readReservations(conn, new Set([id]), found)
        return found.get(id)
      }),
    listReservations: ({ after, limit, status }: ReservationQuery) =>
      conn.retryBusy(() => {
        const sql = `SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id > ? ${status ? 'AND status = ?' : ''} ORDER BY id LIMIT ?`
        const rows = conn.query(sql).all(...(status ? [after, status, limit] : [after, limit])) as ReservationRow[]
        return withLines(conn, rows)
      }),
    dueReservations: (now, limit) =>
      conn.retryBusy(
        () =>
          conn
            .query(
              `SELECT id FROM reservations INDEXED BY reservations_due
               WHERE status = 'active' AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
            )
            .pluck()
            .all(now, limit) as bigint[],
      ),
  }
}
