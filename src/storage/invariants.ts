import type { OrderStatus, ReservationStatus } from '../domain.js'

/*
 * What `petstore check` verifies (issue 37), the same for both backends: each backend reads the facts
 * in one snapshot, streamed (sqlite/check.ts, postgres/check.ts), and the judgements that are more
 * than an SQL comparison are made here, once.
 */

/** The invariants, by the name a finding is printed under. */
export const INVARIANTS = {
  entry_matches_ledger: "each entry's quantity is its newest ledger row's",
  ledger_row_has_entry: 'each ledger row names a pet that has an entry',
  seq_below_counter: 'ledger seqs (and jumps) are at or below the seq counter writers number from',
  seq_outside_jumps: 'no ledger row lies inside a jump (a restore, a bump-seq)',
  seq_after_pruned: 'no ledger row lies at or below the seq retention removed through',
  batch_contiguous: "each batch's ledger rows are contiguous in seq order",
  order_stock: "each order's ledger rows agree with its status",
  ledger_order_exists: 'each ledger row of an order names an order that exists',
  hold_stock: "each hold's ledger rows took its lines' units once, and gave them back or confirmed them as its status says",
  hold_orders: "each line of a confirmed hold names an order of the line's pet and quantity",
  webhook_cursor: "each webhook subscription's cursor is at or below the ledger's end",
  key_hashed: 'each API key is stored as its SHA-256 digest, never in plain text',
} as const

export type Invariant = keyof typeof INVARIANTS

/** The finding of a batch whose rows are not contiguous. */
export const batchFinding = (rows: bigint | number | string, first: bigint | number | string, last: bigint | number | string) =>
  `its ${rows} ledger rows lie between seqs ${first} and ${last}, with rows of others among them`

/** One violation: the invariant, the ids involved (name=value), and what was found. */
export interface Violation {
  invariant: Invariant
  ids: Record<string, bigint | number | string>
  found: string
}

/** What a check read: how many of each it looked at. */
export interface CheckCounts {
  entries: number
  ledgerRows: number
  orders: number
  reservations: number
  webhooks: number
  keys: number
}

/** Told each violation as it is found: a check never holds them all. */
export type Report = (violation: Violation) => void

/**
 * An active hold past its expiry, still holding its units: due, not a violation (every instance may
 * be down; the next one to start gives them back within 2 s).
 */
export interface DueHold {
  reservationId: bigint
  expiresAt: string
  lines: number
  units: number
}

export interface InvariantChecks {
  /**
   * Reads the whole database in one snapshot, in bounded memory, without holding any lock a writer
   * waits for, and reports every violation; resolves with what it read.
   */
  checkInvariants(report: Report, due?: (hold: DueHold) => void): Promise<CheckCounts>
}

/** An order and the ledger rows that name it, summed. */
export interface OrderMoves {
  orderId: bigint
  petId: bigint
  status: OrderStatus
  quantity: number
  /** Rows of reason order, the units they took, and the lowest and highest pet they name. */
  placements: number
  taken: number
  /** Rows of reason cancellation and the units they gave back. */
  returns: number
  given: number
  /** The pets the order's rows name (null without rows). */
  lowPet: bigint | null
  highPet: bigint | null
}

/**
 * What is wrong with an order's ledger rows, or undefined: placing it took its quantity from its pet
 * in one row; cancelling it gave the quantity back in one row, after that; no other status gave
 * anything back. Once retention has removed rows (`pruned`), an order without its placement row may
 * have had both its rows removed, so only the rows that are there are judged; an order whose
 * placement row is there has its cancellation row there too (it came later, retention removes the oldest).
 */
export function orderFinding(o: OrderMoves, pruned: boolean): string | undefined {
  const problems: string[] = []
  const mayBeRemoved = pruned && o.placements === 0
  if (o.placements > 1 || (o.placements === 0 && !mayBeRemoved)) problems.push(`${o.placements} placement rows (1 expected)`)
  else if (o.placements === 1 && o.taken !== o.quantity) problems.push(`its placement row took ${o.taken} units, not ${o.quantity}`)
  const returnsExpected = o.status === 'cancelled' ? 1 : 0
  if (o.returns > returnsExpected || (o.returns < returnsExpected && !mayBeRemoved))
    problems.push(`${o.returns} cancellation rows (${returnsExpected} expected for a ${o.status} order)`)
  else if (o.returns === 1 && o.given !== o.quantity) problems.push(`its cancellation row gave back ${o.given} units, not ${o.quantity}`)
  if (o.lowPet !== null && (o.lowPet !== o.petId || o.highPet !== o.petId))
    problems.push(`its ledger rows name pet ${o.lowPet === o.petId ? o.highPet : o.lowPet}`)
  return problems.length === 0 ? undefined : problems.join('; ')
}

/** A hold, its lines summed, and the ledger rows that name it, summed. */
export interface HoldMoves {
  reservationId: bigint
  status: ReservationStatus
  lines: number
  units: number
  /** Lines that name an order. */
  ordered: number
  /** Rows of reason reservation, and the units they took. */
  takes: number
  taken: number
  /** Rows of reason release or expiry, and the units they gave back. */
  gives: number
  given: number
  /** Rows of reason order (its confirmation). */
  confirms: number
}

/**
 * What is wrong with a hold's ledger rows, or undefined: placing it took each line's units in a row
 * a line; releasing or expiring it gave them all back, a row a line; confirming it wrote an order
 * row a line (moving no units) and named an order on each line; an active hold did neither. As for
 * orders, once retention has removed rows a hold without its reservation rows is not judged on rows.
 */
export function holdFinding(h: HoldMoves, pruned: boolean): string | undefined {
  const problems: string[] = []
  if (!(pruned && h.takes === 0)) {
    if (h.takes !== h.lines || h.taken !== h.units)
      problems.push(`its reservation rows took ${h.taken} units in ${h.takes} rows, not ${h.units} in ${h.lines}`)
    const givesBack = h.status === 'released' || h.status === 'expired'
    if (givesBack ? h.gives !== h.lines || h.given !== h.units : h.gives !== 0)
      problems.push(
        `${h.gives} rows gave back ${h.given} units (${givesBack ? `${h.units} in ${h.lines}` : 'none'} expected for a ${h.status} hold)`,
      )
    const confirmed = h.status === 'confirmed'
    if (h.confirms !== (confirmed ? h.lines : 0))
      problems.push(`${h.confirms} order rows (${confirmed ? h.lines : 0} expected for a ${h.status} hold)`)
  }
  if (h.ordered !== (h.status === 'confirmed' ? h.lines : 0))
    problems.push(
      `${h.ordered} of its ${h.lines} lines name an order (${h.status === 'confirmed' ? 'all' : 'none'} expected for a ${h.status} hold)`,
    )
  return problems.length === 0 ? undefined : problems.join('; ')
}
