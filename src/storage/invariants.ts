import type { OrderStatus, ReservationStatus } from '../domain.js'

/*
 * What `petstore check` verifies (issue 37), the same for both backends: each backend reads the facts
 * in one snapshot, streamed (sqlite/check.ts, postgres/check.ts), and the judgements that are more
 * than an SQL comparison are made here, once.
 */

/** The invariants, by the name a finding is printed under. */
export const INVARIANTS = {
  entry_matches_ledger: "each location's quantity of a pet is its newest ledger row's there",
  entry_sums_locations: "each entry's quantity is the sum of its quantities at the locations",
  allocations_sum: "each order's and hold line's allocations add up to its quantity",
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

type Id = bigint | number | string

/**
 * A pet's newest ledger row at a location (null: the default one) against its stock there (`held`,
 * null when no level is stored); or a row of a pet with no entry.
 */
export function ledgerFinding(pet: Id, location: Id | null, held: Id | null, seq: Id, quantity: Id, hasEntry: boolean): Violation {
  if (!hasEntry) return { invariant: 'ledger_row_has_entry', ids: { pet, seq }, found: 'the pet has no entry' }
  // At the default location a store with one location words it as before locations existed.
  if (location === null)
    return {
      invariant: 'entry_matches_ledger',
      ids: { pet, seq },
      found: `the entry holds ${held}, its newest ledger row says ${quantity}`,
    }
  return {
    invariant: 'entry_matches_ledger',
    ids: { pet, location, seq },
    found: `${held === null ? 'no stock is stored there' : `it holds ${held} there`}, its newest ledger row there says ${quantity}`,
  }
}

/** An entry whose stock elsewhere (null: it has no entry) is not the sum of its levels. */
export function levelsFinding(pet: Id, elsewhere: Id | null, levels: Id): Violation {
  return {
    invariant: 'entry_sums_locations',
    ids: { pet },
    found:
      elsewhere === null
        ? `${levels} units are stored at locations for a pet with no entry`
        : `the entry counts ${elsewhere} units at the other locations than the default one, their levels add up to ${levels}`,
  }
}

/** An order's or a hold line's allocations that do not add up to its quantity. */
export function allocationsFinding(kind: 'order' | 'hold', id: Id, line: Id | null, quantity: Id, allocated: Id): Violation {
  return {
    invariant: 'allocations_sum',
    ids: kind === 'order' ? { order: id } : { reservation: id, line: line! },
    found: `its allocations add up to ${allocated} units, not ${quantity}`,
  }
}

/** An order and the ledger rows that name it, summed. */
export interface OrderMoves {
  orderId: bigint
  petId: bigint
  status: OrderStatus
  quantity: number
  /** The locations it took units from: a row at each when it was placed (and when cancelled). */
  parts: number
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
  const rows = (n: number, what: string) => `${what} row${n === 1 ? '' : 's'}`
  if (o.placements > o.parts || (o.placements < o.parts && !mayBeRemoved))
    problems.push(`${o.placements} placement rows (${o.parts} expected)`)
  else if (o.placements === o.parts && o.taken !== o.quantity)
    problems.push(`its ${rows(o.parts, 'placement')} took ${o.taken} units, not ${o.quantity}`)
  const returnsExpected = o.status === 'cancelled' ? o.parts : 0
  if (o.returns > returnsExpected || (o.returns < returnsExpected && !mayBeRemoved))
    problems.push(`${o.returns} cancellation rows (${returnsExpected} expected for a ${o.status} order)`)
  else if (o.returns > 0 && o.returns === returnsExpected && o.given !== o.quantity)
    problems.push(`its ${rows(o.parts, 'cancellation')} gave back ${o.given} units, not ${o.quantity}`)
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
  /** The locations its lines took units from, counted line by line: a row at each when placed, given back, confirmed. */
  parts: number
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
    if (h.takes !== h.parts || h.taken !== h.units)
      problems.push(`its reservation rows took ${h.taken} units in ${h.takes} rows, not ${h.units} in ${h.parts}`)
    const givesBack = h.status === 'released' || h.status === 'expired'
    if (givesBack ? h.gives !== h.parts || h.given !== h.units : h.gives !== 0)
      problems.push(
        `${h.gives} rows gave back ${h.given} units (${givesBack ? `${h.units} in ${h.parts}` : 'none'} expected for a ${h.status} hold)`,
      )
    const confirmed = h.status === 'confirmed'
    if (h.confirms !== (confirmed ? h.parts : 0))
      problems.push(`${h.confirms} order rows (${confirmed ? h.parts : 0} expected for a ${h.status} hold)`)
  }
  if (h.ordered !== (h.status === 'confirmed' ? h.lines : 0))
    problems.push(
      `${h.ordered} of its ${h.lines} lines name an order (${h.status === 'confirmed' ? 'all' : 'none'} expected for a ${h.status} hold)`,
    )
  return problems.length === 0 ? undefined : problems.join('; ')
}
