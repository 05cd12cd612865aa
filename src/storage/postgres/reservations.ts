import type { Reservation, ReservationStatus } from '../../domain.js'
import type { ReservationQuery, ReservationReads } from '../ports.js'
import { intArray, textArray } from './array-literals.js'
import type { PostgresConnection, Run } from './connection.js'
import { toAllocations } from './rows.js'

/*
 * Holds (migration 020), as SQLite's: a row of reservations each, its lines in reservation_lines.
 * A batch that names holds is planned under the inventory_version lock (stock.ts), so what it reads
 * here stays as read until its commit.
 */

interface ReservationRow {
  id: string
  status: ReservationStatus
  expires_at: Date
  reference: string | null
  created_at: Date
  updated_at: Date
  /** [petId, quantity, orderId, allocations] a line, in line order; ids as text (exact). */
  lines: [string, number, string | null, [number, number][] | null][]
}

/** A hold's columns with its lines aggregated, for `FROM reservations AS r`. */
const RESERVATION_SELECT = `SELECT r.id::text AS id, r.status, r.expires_at, r.reference, r.created_at, r.updated_at,
    (SELECT coalesce(json_agg(json_build_array(l.pet_id::text, l.quantity, l.order_id::text,
         (SELECT json_agg(json_build_array(a.location_id, a.quantity) ORDER BY a.position) FROM reservation_allocations AS a
            WHERE a.reservation_id = l.reservation_id AND a.line = l.line)) ORDER BY l.line), '[]')
       FROM reservation_lines AS l WHERE l.reservation_id = r.id) AS lines
  FROM reservations AS r`

const toReservation = (r: ReservationRow): Reservation => ({
  id: BigInt(r.id),
  status: r.status,
  lines: r.lines.map(([petId, quantity, orderId, allocations]) => {
    const line: Reservation['lines'][number] = { petId: BigInt(petId), quantity, orderId: orderId === null ? null : BigInt(orderId) }
    const taken = toAllocations(allocations)
    if (taken) line.allocations = taken
    return line
  }),
  expiresAt: r.expires_at.toISOString(),
  reference: r.reference,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
})

/** The holds of `ids` that exist, read inside the caller's transaction, into `into`. */
export async function readReservations(run: Run, ids: Set<bigint>, into: Map<bigint, Reservation>): Promise<void> {
  if (ids.size === 0) return
  const rows = await run<ReservationRow>(`${RESERVATION_SELECT} WHERE r.id = ANY($1::bigint[])`, [intArray([...ids])])
  for (const row of rows) into.set(BigInt(row.id), toReservation(row))
}

/** The largest hold id (0 when there is none); under the inventory_version lock, the next one's is above it. */
export async function lastReservationId(run: Run): Promise<bigint> {
  const [row] = await run<{ last: string }>('SELECT coalesce(max(id), 0)::text AS last FROM reservations')
  return BigInt(row!.last)
}

/** Writes a stock batch's holds: those it placed (with their lines), and the existing ones it changed. */
export async function writeReservations(run: Run, placed: Reservation[], changed: Reservation[]): Promise<void> {
  if (placed.length > 0) {
    await run(
      `WITH held AS (
         INSERT INTO reservations (id, status, expires_at, reference, created_at, updated_at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::timestamptz[])
       ), allocated AS (
         INSERT INTO reservation_allocations (reservation_id, line, position, location_id, quantity)
         SELECT * FROM unnest($12::bigint[], $13::integer[], $14::integer[], $15::integer[], $16::integer[])
       )
       INSERT INTO reservation_lines (reservation_id, line, pet_id, quantity, order_id)
       SELECT * FROM unnest($7::bigint[], $8::integer[], $9::bigint[], $10::integer[], $11::bigint[])`,
      [
        intArray(placed.map((r) => r.id)),
        textArray(placed.map((r) => r.status)),
        textArray(placed.map((r) => r.expiresAt)),
        textArray(placed.map((r) => r.reference)),
        textArray(placed.map((r) => r.createdAt)),
        textArray(placed.map((r) => r.updatedAt)),
        ...lineArrays(placed),
        ...allocationArrays(placed),
      ],
    )
  }
  if (changed.length > 0) {
    const confirmed = changed.filter((r) => r.status === 'confirmed')
    await run(
      `WITH moved AS (
         UPDATE reservations AS r SET status = v.status, expires_at = v.expires_at, updated_at = v.updated_at
         FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[]) AS v(id, status, expires_at, updated_at)
         WHERE r.id = v.id
       )
       UPDATE reservation_lines AS l SET order_id = v.order_id
       FROM unnest($5::bigint[], $6::integer[], $7::bigint[], $8::integer[], $9::bigint[]) AS v(reservation_id, line, pet_id, quantity, order_id)
       WHERE l.reservation_id = v.reservation_id AND l.line = v.line`,
      [
        intArray(changed.map((r) => r.id)),
        textArray(changed.map((r) => r.status)),
        textArray(changed.map((r) => r.expiresAt)),
        textArray(changed.map((r) => r.updatedAt)),
        ...lineArrays(confirmed),
      ],
    )
  }
}

/** The lines of `holds` as one array per column of reservation_lines. */
function lineArrays(holds: Reservation[]): string[] {
  const lines = holds.flatMap((r) => r.lines.map((line, i) => ({ ...line, reservationId: r.id, line: i })))
  return [
    intArray(lines.map((l) => l.reservationId)),
    intArray(lines.map((l) => l.line)),
    intArray(lines.map((l) => l.petId)),
    intArray(lines.map((l) => l.quantity)),
    intArray(lines.map((l) => l.orderId)),
  ]
}

/** The allocations of `holds`' lines as one array per column of reservation_allocations. */
function allocationArrays(holds: Reservation[]): string[] {
  const rows = holds.flatMap((r) =>
    r.lines.flatMap((line, i) => (line.allocations ?? []).map((a, position) => ({ reservationId: r.id, line: i, position, ...a }))),
  )
  return [
    intArray(rows.map((a) => a.reservationId)),
    intArray(rows.map((a) => a.line)),
    intArray(rows.map((a) => a.position)),
    intArray(rows.map((a) => a.locationId)),
    intArray(rows.map((a) => a.quantity)),
  ]
}

export function postgresReservations(db: PostgresConnection): ReservationReads {
  return {
    async getReservation(id) {
      const rows = await db.query<ReservationRow>(`${RESERVATION_SELECT} WHERE r.id = $1`, [String(id)])
      return rows[0] && toReservation(rows[0])
    },
    async listReservations({ after, limit, status }: ReservationQuery) {
      const rows = await db.query<ReservationRow>(
        `${RESERVATION_SELECT} WHERE r.id > $1 AND ($2::text IS NULL OR r.status = $2) ORDER BY r.id LIMIT $3`,
        [String(after), status ?? null, limit],
      )
      return rows.map(toReservation)
    },
    async dueReservations(now, limit) {
      const rows = await db.query<{ id: string }>(
        `SELECT id::text AS id FROM reservations WHERE status = 'active' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
        [now, limit],
      )
      return rows.map((r) => BigInt(r.id))
    },
  }
}
