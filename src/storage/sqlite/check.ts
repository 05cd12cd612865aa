import type Database from 'better-sqlite3'
import type { OrderStatus, ReservationStatus } from '../../domain.js'
import {
  allocationsFinding,
  batchFinding,
  ledgerFinding,
  levelsFinding,
  type CheckCounts,
  type DueHold,
  holdFinding,
  type InvariantChecks,
  orderFinding,
  type Report,
} from '../invariants.js'
import { endLongRead, type SqliteConnection } from './connection.js'

/*
 * `petstore check` on SQLite: every query in ONE read transaction of the read-only connection, so all
 * of them see one committed state. A WAL reader never blocks a writer (the server commits on; its
 * checkpoints cannot empty the WAL past the snapshot until the check ends, as during a backup). Rows
 * are streamed (iterate), and what grows with the data (the newest row of each pet, the rows of each
 * order) is grouped by SQLite's sorter, which spills to temporary files past its cache: bounded memory.
 */

/**
 * Each pet's newest ledger row at the default location (the bare quantity is max(seq)'s row's)
 * against its stock there (the entry's quantity less its stock elsewhere), then each newest row at
 * another location against the level there; the last column says whether the pet has an entry.
 */
const ENTRY_VS_LEDGER = `SELECT n.pet_id, NULL, i.quantity - i.elsewhere, n.seq, n.quantity, i.pet_id IS NOT NULL
  FROM (SELECT pet_id, max(seq) AS seq, quantity FROM inventory_changes WHERE location_id IS NULL GROUP BY pet_id) AS n
  LEFT JOIN inventory AS i ON i.pet_id = n.pet_id
  WHERE i.quantity - i.elsewhere IS NOT n.quantity
  UNION ALL
  SELECT n.pet_id, n.location_id, s.quantity, n.seq, n.quantity, i.pet_id IS NOT NULL
  FROM (SELECT pet_id, location_id, max(seq) AS seq, quantity FROM inventory_changes WHERE location_id IS NOT NULL
    GROUP BY pet_id, location_id) AS n
  LEFT JOIN inventory AS i ON i.pet_id = n.pet_id
  LEFT JOIN stock_levels AS s ON s.pet_id = n.pet_id AND s.location_id = n.location_id
  WHERE i.pet_id IS NULL OR s.quantity IS NOT n.quantity`

/** Entries whose stock elsewhere is not the sum of their levels, and levels of pets with no entry. */
const ELSEWHERE_VS_LEVELS = `SELECT i.pet_id, i.elsewhere, coalesce(sum(s.quantity), 0)
  FROM inventory AS i LEFT JOIN stock_levels AS s ON s.pet_id = i.pet_id
  WHERE i.elsewhere <> 0 OR s.pet_id IS NOT NULL GROUP BY i.pet_id HAVING i.elsewhere <> coalesce(sum(s.quantity), 0)
  UNION ALL
  SELECT s.pet_id, NULL, sum(s.quantity) FROM stock_levels AS s WHERE NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.pet_id)
  GROUP BY s.pet_id`

/** Orders and hold lines whose allocations do not add up to their quantity. */
const ALLOCATIONS_WRONG = `SELECT 'order', o.id, NULL, o.quantity, sum(a.quantity)
  FROM orders AS o JOIN order_allocations AS a ON a.order_id = o.id GROUP BY o.id HAVING sum(a.quantity) <> o.quantity
  UNION ALL
  SELECT 'hold', l.reservation_id, l.line, l.quantity, sum(a.quantity)
  FROM reservation_lines AS l JOIN reservation_allocations AS a ON a.reservation_id = l.reservation_id AND a.line = l.line
  GROUP BY l.reservation_id, l.line HAVING sum(a.quantity) <> l.quantity`

const ROWS_IN_JUMPS = `SELECT c.seq, c.pet_id, j.after_seq, j.through_seq
  FROM ledger_jumps AS j JOIN inventory_changes AS c ON c.seq > j.after_seq AND c.seq <= j.through_seq`

const ROWS_PRUNED = `SELECT c.seq, c.pet_id, r.pruned_through
  FROM ledger_retention AS r JOIN inventory_changes AS c ON c.seq <= r.pruned_through`

/** Batches whose rows are not one run of seqs (a suffix of one, after retention, still is). */
const BATCHES_SPLIT = `SELECT batch_id, count(*), min(seq), max(seq) FROM inventory_changes WHERE batch_id IS NOT NULL
  GROUP BY batch_id HAVING max(seq) - min(seq) + 1 <> count(*)`

/** Every order beside the ledger rows that name it, and the rows naming no order. */
const ORDER_MOVES = `WITH moves AS (
    SELECT order_id,
      sum(reason = 'order') AS placements,
      -- An order confirmed from a hold moved no units (a row at each location it took from): its hold's
      -- reservation rows took them.
      sum(iif(reason = 'order' AND reservation_id IS NULL, previous_quantity - quantity, 0))
        + coalesce(max(iif(reason = 'order' AND reservation_id IS NOT NULL, (SELECT sum(l.quantity) FROM reservation_lines AS l
          WHERE l.reservation_id = c.reservation_id AND l.order_id = c.order_id), NULL)), 0) AS taken,
      sum(reason = 'cancellation') AS returns,
      sum(iif(reason = 'cancellation', quantity - previous_quantity, 0)) AS given,
      min(pet_id) AS low_pet, max(pet_id) AS high_pet, min(seq) AS first_seq
    FROM inventory_changes AS c WHERE order_id IS NOT NULL GROUP BY order_id)
  SELECT o.id, o.pet_id, o.status, o.quantity, coalesce(m.placements, 0), coalesce(m.taken, 0),
    coalesce(m.returns, 0), coalesce(m.given, 0), m.low_pet, m.high_pet, NULL,
    max(1, (SELECT count(*) FROM order_allocations AS a WHERE a.order_id = o.id))
  FROM orders AS o LEFT JOIN moves AS m ON m.order_id = o.id
  UNION ALL
  SELECT m.order_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, m.first_seq, NULL
  FROM moves AS m WHERE NOT EXISTS (SELECT 1 FROM orders WHERE id = m.order_id)`

/** Every hold beside its lines and the ledger rows that name it. */
const HOLD_MOVES = `WITH moves AS (
    SELECT reservation_id,
      sum(reason = 'reservation') AS takes, sum(iif(reason = 'reservation', previous_quantity - quantity, 0)) AS taken,
      sum(reason = 'release' OR reason = 'expiry') AS gives,
      sum(iif(reason = 'release' OR reason = 'expiry', quantity - previous_quantity, 0)) AS given,
      sum(reason = 'order') AS confirms
    FROM inventory_changes WHERE reservation_id IS NOT NULL GROUP BY reservation_id),
  held AS (SELECT reservation_id, count(*) AS lines, sum(quantity) AS units, count(order_id) AS ordered,
      sum(max(1, (SELECT count(*) FROM reservation_allocations AS a WHERE a.reservation_id = l.reservation_id AND a.line = l.line))) AS parts
    FROM reservation_lines AS l GROUP BY reservation_id)
  SELECT r.id, r.status, coalesce(h.lines, 0), coalesce(h.units, 0), coalesce(h.ordered, 0), coalesce(m.takes, 0),
    coalesce(m.taken, 0), coalesce(m.gives, 0), coalesce(m.given, 0), coalesce(m.confirms, 0), coalesce(h.parts, 0)
  FROM reservations AS r LEFT JOIN held AS h ON h.reservation_id = r.id LEFT JOIN moves AS m ON m.reservation_id = r.id`

/** Lines of confirmed holds whose order is missing or of another pet or quantity. */
const HOLD_ORDERS_WRONG = `SELECT l.reservation_id, l.line, l.order_id, o.pet_id, o.quantity, l.pet_id, l.quantity
  FROM reservation_lines AS l LEFT JOIN orders AS o ON o.id = l.order_id
  WHERE l.order_id IS NOT NULL AND (o.id IS NULL OR o.pet_id <> l.pet_id OR o.quantity <> l.quantity)`

/** Active holds past their expiry (?), soonest first, with their lines summed. */
const HOLDS_DUE = `SELECT r.id, r.expires_at, count(*), sum(l.quantity)
  FROM reservations AS r INDEXED BY reservations_due JOIN reservation_lines AS l ON l.reservation_id = r.id
  WHERE r.status = 'active' AND r.expires_at <= ? GROUP BY r.id ORDER BY r.expires_at`

const LEDGER_END = `SELECT max(coalesce((SELECT max(seq) FROM inventory_changes), 0), (SELECT pruned_through FROM ledger_retention))`

const KEYS_NOT_HASHED = `SELECT id, name, typeof(key_hash), length(key_hash) FROM api_keys
  WHERE typeof(key_hash) <> 'blob' OR length(key_hash) <> 32`

type Row = unknown[]

function* rows(db: Database.Database, sql: string, ...params: unknown[]): Generator<Row> {
  yield* db
    .prepare(sql)
    .raw()
    .safeIntegers()
    .iterate(...params) as IterableIterator<Row>
}

const count = (db: Database.Database, sql: string) => Number(db.prepare(sql).pluck().safeIntegers().get() as bigint)

export function sqliteCheck(conn: SqliteConnection): InvariantChecks {
  return {
    async checkInvariants(report: Report, due?: (hold: DueHold) => void): Promise<CheckCounts> {
      const db = conn.reader ?? conn.db
      db.exec('BEGIN')
      try {
        return checkAll(db, report, due)
      } finally {
        if (db === conn.db) db.exec('COMMIT')
        else endLongRead(db, conn.db)
      }
    },
  }
}

function checkAll(db: Database.Database, report: Report, due?: (hold: DueHold) => void): CheckCounts {
  const counts: CheckCounts = {
    entries: count(db, 'SELECT count(*) FROM inventory'),
    ledgerRows: count(db, 'SELECT count(*) FROM inventory_changes'),
    orders: 0,
    reservations: 0,
    webhooks: count(db, 'SELECT count(*) FROM webhooks'),
    keys: count(db, 'SELECT count(*) FROM api_keys'),
  }

  for (const [petId, locationId, held, seq, quantity, hasEntry] of rows(db, ENTRY_VS_LEDGER))
    report(
      ledgerFinding(
        petId as bigint,
        locationId === null ? null : Number(locationId),
        held as bigint | null,
        seq as bigint,
        quantity as bigint,
        hasEntry === 1n,
      ),
    )
  for (const [petId, elsewhere, levels] of rows(db, ELSEWHERE_VS_LEVELS))
    report(levelsFinding(petId as bigint, elsewhere as bigint | null, levels as bigint))
  for (const [kind, id, line, quantity, allocated] of rows(db, ALLOCATIONS_WRONG))
    report(allocationsFinding(kind as 'order' | 'hold', id as bigint, line as bigint | null, quantity as bigint, allocated as bigint))

  // SQLite's seq counter is the ledger itself (the largest seq, or the largest jump past it: ledger.ts,
  // lastIssuedSeq), so seq_below_counter holds by construction; rows inside a jump or retention's
  // removed prefix would not.
  for (const [seq, petId, after, through] of rows(db, ROWS_IN_JUMPS))
    report({
      invariant: 'seq_outside_jumps',
      ids: { seq: seq as bigint, pet: petId as bigint },
      found: `the row lies inside the jump from ${after} through ${through}`,
    })
  for (const [seq, petId, pruned] of rows(db, ROWS_PRUNED))
    report({
      invariant: 'seq_after_pruned',
      ids: { seq: seq as bigint, pet: petId as bigint },
      found: `retention removed every row through ${pruned}`,
    })

  for (const [batchId, n, first, last] of rows(db, BATCHES_SPLIT))
    report({
      invariant: 'batch_contiguous',
      ids: { batch: batchId as string },
      found: batchFinding(n as bigint, first as bigint, last as bigint),
    })

  const pruned = (db.prepare('SELECT pruned_through FROM ledger_retention').pluck().safeIntegers().get() as bigint) > 0n
  for (const r of rows(db, ORDER_MOVES)) {
    const [orderId, petId, status, quantity, placements, taken, returns, given, lowPet, highPet, firstSeq, parts] = r
    if (petId === null) {
      report({ invariant: 'ledger_order_exists', ids: { order: orderId as bigint, seq: firstSeq as bigint }, found: 'no such order' })
      continue
    }
    counts.orders++
    const found = orderFinding(
      {
        orderId: orderId as bigint,
        petId: petId as bigint,
        status: status as OrderStatus,
        quantity: Number(quantity),
        parts: Number(parts),
        placements: Number(placements),
        taken: Number(taken),
        returns: Number(returns),
        given: Number(given),
        lowPet: lowPet as bigint | null,
        highPet: highPet as bigint | null,
      },
      pruned,
    )
    if (found) report({ invariant: 'order_stock', ids: { order: orderId as bigint, pet: petId as bigint }, found })
  }

  for (const [id, status, lines, units, ordered, takes, taken, gives, given, confirms, parts] of rows(db, HOLD_MOVES)) {
    counts.reservations++
    const found = holdFinding(
      {
        reservationId: id as bigint,
        status: status as ReservationStatus,
        lines: Number(lines),
        units: Number(units),
        parts: Number(parts),
        ordered: Number(ordered),
        takes: Number(takes),
        taken: Number(taken),
        gives: Number(gives),
        given: Number(given),
        confirms: Number(confirms),
      },
      pruned,
    )
    if (found) report({ invariant: 'hold_stock', ids: { reservation: id as bigint }, found })
  }
  for (const [id, line, orderId, orderPet, orderQuantity, petId, quantity] of rows(db, HOLD_ORDERS_WRONG))
    report({
      invariant: 'hold_orders',
      ids: { reservation: id as bigint, line: line as bigint, order: orderId as bigint },
      found:
        orderPet === null
          ? 'no such order'
          : `the order is of ${orderQuantity} units of pet ${orderPet}, the line of ${quantity} units of pet ${petId}`,
    })
  if (due)
    for (const [id, expiresAt, lines, units] of rows(db, HOLDS_DUE, new Date().toISOString()))
      due({ reservationId: id as bigint, expiresAt: expiresAt as string, lines: Number(lines), units: Number(units) })

  const end = db.prepare(LEDGER_END).pluck().safeIntegers().get() as bigint
  for (const [id, cursor] of rows(db, 'SELECT id, delivered_through FROM webhooks WHERE delivered_through > ?', end))
    report({ invariant: 'webhook_cursor', ids: { webhook: id as bigint }, found: `its cursor ${cursor} is past the ledger's end ${end}` })

  for (const [id, name, type, bytes] of rows(db, KEYS_NOT_HASHED))
    report({
      invariant: 'key_hashed',
      ids: { key: id as bigint, name: name as string },
      found: `key_hash is ${type === 'blob' ? `${bytes} bytes` : `a ${type}`}, not a 32-byte SHA-256 digest`,
    })
  return counts
}
