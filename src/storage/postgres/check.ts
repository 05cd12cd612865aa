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
import type { PostgresConnection, Run } from './connection.js'

/*
 * `petstore check` on PostgreSQL: every query in ONE read-only REPEATABLE READ transaction, so all of
 * them see one snapshot, and none takes a lock a writer waits for (MVCC: writers commit on meanwhile).
 * Each query is read through a cursor, FETCH_ROWS at a time: bounded memory here; the server groups
 * and sorts within work_mem, spilling to disk past it.
 */

const FETCH_ROWS = 1000

/**
 * Each pet's newest ledger row against its entry: the (pet_id, seq) index read backwards gives each
 * pet's rows newest first, so DISTINCT ON keeps the newest without sorting the ledger.
 */
const ENTRY_VS_LEDGER = `SELECT n.pet_id::text AS pet, NULL::integer AS location, i.quantity - i.elsewhere AS held, n.seq::text AS seq,
    n.quantity, i.pet_id IS NOT NULL AS has_entry
  FROM (SELECT DISTINCT ON (pet_id) pet_id, seq, quantity FROM inventory_changes WHERE location_id IS NULL
    ORDER BY pet_id DESC, seq DESC) AS n
  LEFT JOIN inventory AS i ON i.pet_id = n.pet_id
  WHERE i.quantity - i.elsewhere IS DISTINCT FROM n.quantity
  UNION ALL
  SELECT n.pet_id::text, n.location_id, s.quantity, n.seq::text, n.quantity, i.pet_id IS NOT NULL
  FROM (SELECT DISTINCT ON (pet_id, location_id) pet_id, location_id, seq, quantity FROM inventory_changes
    WHERE location_id IS NOT NULL ORDER BY pet_id, location_id, seq DESC) AS n
  LEFT JOIN inventory AS i ON i.pet_id = n.pet_id
  LEFT JOIN stock_levels AS s ON s.pet_id = n.pet_id AND s.location_id = n.location_id
  WHERE i.pet_id IS NULL OR s.quantity IS DISTINCT FROM n.quantity`

/** Entries whose stock elsewhere is not the sum of their levels, and levels of pets with no entry. */
const ELSEWHERE_VS_LEVELS = `SELECT i.pet_id::text AS pet, i.elsewhere, coalesce(sum(s.quantity), 0)::bigint::text AS levels
  FROM inventory AS i LEFT JOIN stock_levels AS s ON s.pet_id = i.pet_id
  WHERE i.elsewhere <> 0 OR s.pet_id IS NOT NULL GROUP BY i.pet_id HAVING i.elsewhere <> coalesce(sum(s.quantity), 0)
  UNION ALL
  SELECT s.pet_id::text, NULL, sum(s.quantity)::bigint::text FROM stock_levels AS s
  WHERE NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.pet_id) GROUP BY s.pet_id`

/** Orders and hold lines whose allocations do not add up to their quantity. */
const ALLOCATIONS_WRONG = `SELECT 'order' AS kind, o.id::text AS id, NULL::integer AS line, o.quantity, sum(a.quantity)::bigint::text AS allocated
  FROM orders AS o JOIN order_allocations AS a ON a.order_id = o.id GROUP BY o.id HAVING sum(a.quantity) <> o.quantity
  UNION ALL
  SELECT 'hold', l.reservation_id::text, l.line, l.quantity, sum(a.quantity)::bigint::text
  FROM reservation_lines AS l JOIN reservation_allocations AS a ON a.reservation_id = l.reservation_id AND a.line = l.line
  GROUP BY l.reservation_id, l.line HAVING sum(a.quantity) <> l.quantity`

/** Rows and jumps past the counter every writer numbers from (inventory_version.last_change). */
const PAST_COUNTER = `SELECT 'row' AS what, c.seq::text AS seq, c.pet_id::text AS pet, v.last_change::text AS counter
    FROM inventory_version AS v JOIN inventory_changes AS c ON c.seq > v.last_change
  UNION ALL
  SELECT 'jump', j.through_seq::text, NULL, v.last_change::text
    FROM inventory_version AS v JOIN ledger_jumps AS j ON j.through_seq > v.last_change`

const ROWS_IN_JUMPS = `SELECT c.seq::text AS seq, c.pet_id::text AS pet, j.after_seq::text AS after, j.through_seq::text AS through
  FROM ledger_jumps AS j JOIN inventory_changes AS c ON c.seq > j.after_seq AND c.seq <= j.through_seq`

const ROWS_PRUNED = `SELECT c.seq::text AS seq, c.pet_id::text AS pet, r.pruned_through::text AS pruned
  FROM ledger_retention AS r JOIN inventory_changes AS c ON c.seq <= r.pruned_through`

/** Every order beside the ledger rows that name it, and the rows naming no order. */
const ORDER_MOVES = `WITH moves AS (
    SELECT order_id,
      count(*) FILTER (WHERE reason = 'order') AS placements,
      -- An order confirmed from a hold moved no units (a row at each location it took from): its hold's
      -- reservation rows took them.
      coalesce(sum(previous_quantity - quantity) FILTER (WHERE reason = 'order' AND reservation_id IS NULL), 0)
        + coalesce(max((SELECT sum(l.quantity) FROM reservation_lines AS l WHERE l.reservation_id = c.reservation_id
          AND l.order_id = c.order_id)) FILTER (WHERE reason = 'order' AND reservation_id IS NOT NULL), 0) AS taken,
      count(*) FILTER (WHERE reason = 'cancellation') AS returns,
      coalesce(sum(quantity - previous_quantity) FILTER (WHERE reason = 'cancellation'), 0) AS given,
      min(pet_id) AS low_pet, max(pet_id) AS high_pet, min(seq) AS first_seq
    FROM inventory_changes AS c WHERE order_id IS NOT NULL GROUP BY order_id)
  SELECT o.id::text AS id, o.pet_id::text AS pet, o.status, o.quantity, coalesce(m.placements, 0)::int AS placements,
    coalesce(m.taken, 0)::bigint::text AS taken, coalesce(m.returns, 0)::int AS returns, coalesce(m.given, 0)::bigint::text AS given,
    m.low_pet::text AS low_pet, m.high_pet::text AS high_pet, NULL AS first_seq,
    greatest(1, (SELECT count(*) FROM order_allocations AS a WHERE a.order_id = o.id))::int AS parts
  FROM orders AS o LEFT JOIN moves AS m ON m.order_id = o.id
  UNION ALL
  SELECT m.order_id::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, m.first_seq::text, NULL
  FROM moves AS m WHERE NOT EXISTS (SELECT 1 FROM orders WHERE id = m.order_id)`

/** Batches whose rows are not one run of seqs (a suffix of one, after retention, still is). */
const BATCHES_SPLIT = `SELECT batch_id, count(*)::text AS n, min(seq)::text AS first, max(seq)::text AS last
  FROM inventory_changes WHERE batch_id IS NOT NULL GROUP BY batch_id HAVING max(seq) - min(seq) + 1 <> count(*)`

/** Every hold beside its lines and the ledger rows that name it. */
const HOLD_MOVES = `WITH moves AS (
    SELECT reservation_id,
      count(*) FILTER (WHERE reason = 'reservation') AS takes,
      coalesce(sum(previous_quantity - quantity) FILTER (WHERE reason = 'reservation'), 0) AS taken,
      count(*) FILTER (WHERE reason IN ('release', 'expiry')) AS gives,
      coalesce(sum(quantity - previous_quantity) FILTER (WHERE reason IN ('release', 'expiry')), 0) AS given,
      count(*) FILTER (WHERE reason = 'order') AS confirms
    FROM inventory_changes WHERE reservation_id IS NOT NULL GROUP BY reservation_id),
  held AS (SELECT reservation_id, count(*) AS lines, sum(quantity) AS units, count(order_id) AS ordered,
      sum(greatest(1, (SELECT count(*) FROM reservation_allocations AS a WHERE a.reservation_id = l.reservation_id AND a.line = l.line)))
        AS parts
    FROM reservation_lines AS l GROUP BY reservation_id)
  SELECT r.id::text AS id, r.status, coalesce(h.lines, 0)::int AS lines, coalesce(h.units, 0)::bigint::text AS units,
    coalesce(h.ordered, 0)::int AS ordered, coalesce(m.takes, 0)::int AS takes, coalesce(m.taken, 0)::bigint::text AS taken,
    coalesce(m.gives, 0)::int AS gives, coalesce(m.given, 0)::bigint::text AS given, coalesce(m.confirms, 0)::int AS confirms,
    coalesce(h.parts, 0)::int AS parts
  FROM reservations AS r LEFT JOIN held AS h ON h.reservation_id = r.id LEFT JOIN moves AS m ON m.reservation_id = r.id`

/** Lines of confirmed holds whose order is missing or of another pet or quantity. */
const HOLD_ORDERS_WRONG = `SELECT l.reservation_id::text AS id, l.line, l.order_id::text AS order_id, o.pet_id::text AS order_pet,
    o.quantity AS order_quantity, l.pet_id::text AS pet, l.quantity
  FROM reservation_lines AS l LEFT JOIN orders AS o ON o.id = l.order_id
  WHERE l.order_id IS NOT NULL AND (o.id IS NULL OR o.pet_id <> l.pet_id OR o.quantity <> l.quantity)`

/** Active holds past their expiry (now), soonest first, with their lines summed. */
const HOLDS_DUE = `SELECT r.id::text AS id, r.expires_at, count(*)::int AS lines, sum(l.quantity)::bigint::text AS units
  FROM reservations AS r JOIN reservation_lines AS l ON l.reservation_id = r.id
  WHERE r.status = 'active' AND r.expires_at <= clock_timestamp() GROUP BY r.id ORDER BY r.expires_at`

const WEBHOOKS_PAST_END = `WITH e AS (SELECT greatest(coalesce((SELECT max(seq) FROM inventory_changes), 0),
    (SELECT pruned_through FROM ledger_retention)) AS seq)
  SELECT w.id, w.delivered_through::text AS cursor, e.seq::text AS end FROM webhooks AS w, e WHERE w.delivered_through > e.seq`

const KEYS_NOT_HASHED = 'SELECT id, name, octet_length(key_hash) AS bytes FROM api_keys WHERE octet_length(key_hash) <> 32'

type Row = Record<string, string | number | null>

/** The rows of `sql` through a cursor, a page at a time, inside the caller's transaction. */
async function* cursorRows(run: Run, sql: string): AsyncGenerator<Row> {
  await run(`DECLARE check_rows NO SCROLL CURSOR FOR ${sql}`)
  for (;;) {
    const page = await run<Row>(`FETCH ${FETCH_ROWS} FROM check_rows`)
    yield* page
    if (page.length < FETCH_ROWS) break
  }
  await run('CLOSE check_rows')
}

const big = (value: string | number | null | undefined) => BigInt(value as string)

export function postgresCheck(db: PostgresConnection): InvariantChecks {
  return {
    checkInvariants: (report, due) =>
      // One connection for the whole check, bounded by DB_MIGRATION_TIMEOUT_MS as an operator's bulk job is.
      db.withConnection(
        Date.now() + db.bulkTimeoutMs,
        async (run) => {
          await run('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
          const counts = await checkAll(run, report, due)
          await run('COMMIT')
          return counts
        },
        db.bulkTimeoutMs,
      ),
  }
}

async function checkAll(run: Run, report: Report, due?: (hold: DueHold) => void): Promise<CheckCounts> {
  const [sizes] = await run<Record<string, string>>(`SELECT
    (SELECT count(*) FROM inventory)::text AS entries, (SELECT count(*) FROM inventory_changes)::text AS ledger,
    (SELECT count(*) FROM webhooks)::text AS webhooks, (SELECT count(*) FROM api_keys)::text AS keys,
    (SELECT pruned_through > 0 FROM ledger_retention)::text AS pruned`)
  const counts: CheckCounts = {
    entries: Number(sizes!.entries),
    ledgerRows: Number(sizes!.ledger),
    orders: 0,
    reservations: 0,
    webhooks: Number(sizes!.webhooks),
    keys: Number(sizes!.keys),
  }

  for await (const r of cursorRows(run, ENTRY_VS_LEDGER))
    report(ledgerFinding(big(r.pet), r.location ?? null, r.held ?? null, big(r.seq), Number(r.quantity), r.has_entry as unknown as boolean))
  for await (const r of cursorRows(run, ELSEWHERE_VS_LEVELS)) report(levelsFinding(big(r.pet), r.elsewhere ?? null, String(r.levels)))
  for await (const r of cursorRows(run, ALLOCATIONS_WRONG))
    report(allocationsFinding(r.kind as 'order' | 'hold', big(r.id), r.line ?? null, Number(r.quantity), String(r.allocated)))

  for await (const r of cursorRows(run, PAST_COUNTER))
    report({
      invariant: 'seq_below_counter',
      ids: r.what === 'row' ? { seq: big(r.seq), pet: big(r.pet) } : { jump_through: big(r.seq) },
      found: `${r.what === 'row' ? 'the row' : 'the jump'} is past the seq counter ${r.counter}`,
    })
  for await (const r of cursorRows(run, ROWS_IN_JUMPS))
    report({
      invariant: 'seq_outside_jumps',
      ids: { seq: big(r.seq), pet: big(r.pet) },
      found: `the row lies inside the jump from ${r.after} through ${r.through}`,
    })
  for await (const r of cursorRows(run, ROWS_PRUNED))
    report({
      invariant: 'seq_after_pruned',
      ids: { seq: big(r.seq), pet: big(r.pet) },
      found: `retention removed every row through ${r.pruned}`,
    })

  for await (const r of cursorRows(run, BATCHES_SPLIT))
    report({
      invariant: 'batch_contiguous',
      ids: { batch: String(r.batch_id) },
      found: batchFinding(String(r.n), String(r.first), String(r.last)),
    })

  const pruned = sizes!.pruned === 'true'
  for await (const r of cursorRows(run, ORDER_MOVES)) {
    if (r.pet === null) {
      report({ invariant: 'ledger_order_exists', ids: { order: big(r.id), seq: big(r.first_seq) }, found: 'no such order' })
      continue
    }
    counts.orders++
    const found = orderFinding(
      {
        orderId: big(r.id),
        petId: big(r.pet),
        status: r.status as OrderStatus,
        quantity: Number(r.quantity),
        parts: Number(r.parts),
        placements: Number(r.placements),
        taken: Number(r.taken),
        returns: Number(r.returns),
        given: Number(r.given),
        lowPet: r.low_pet === null ? null : big(r.low_pet),
        highPet: r.high_pet === null ? null : big(r.high_pet),
      },
      pruned,
    )
    if (found) report({ invariant: 'order_stock', ids: { order: big(r.id), pet: big(r.pet) }, found })
  }

  for await (const r of cursorRows(run, HOLD_MOVES)) {
    counts.reservations++
    const found = holdFinding(
      {
        reservationId: big(r.id),
        status: r.status as ReservationStatus,
        lines: Number(r.lines),
        units: Number(r.units),
        parts: Number(r.parts),
        ordered: Number(r.ordered),
        takes: Number(r.takes),
        taken: Number(r.taken),
        gives: Number(r.gives),
        given: Number(r.given),
        confirms: Number(r.confirms),
      },
      pruned,
    )
    if (found) report({ invariant: 'hold_stock', ids: { reservation: big(r.id) }, found })
  }
  for await (const r of cursorRows(run, HOLD_ORDERS_WRONG))
    report({
      invariant: 'hold_orders',
      ids: { reservation: big(r.id), line: Number(r.line), order: big(r.order_id) },
      found:
        r.order_pet === null
          ? 'no such order'
          : `the order is of ${r.order_quantity} units of pet ${r.order_pet}, the line of ${r.quantity} units of pet ${r.pet}`,
    })
  if (due)
    for await (const r of cursorRows(run, HOLDS_DUE))
      due({
        reservationId: big(r.id),
        expiresAt: (r.expires_at as unknown as Date).toISOString(),
        lines: Number(r.lines),
        units: Number(r.units),
      })

  for await (const r of cursorRows(run, WEBHOOKS_PAST_END))
    report({
      invariant: 'webhook_cursor',
      ids: { webhook: Number(r.id) },
      found: `its cursor ${r.cursor} is past the ledger's end ${r.end}`,
    })

  for await (const r of cursorRows(run, KEYS_NOT_HASHED))
    report({
      invariant: 'key_hashed',
      ids: { key: Number(r.id), name: String(r.name) },
      found: `key_hash is ${r.bytes} bytes, not a 32-byte SHA-256 digest`,
    })
  return counts
}
