import type { OrderStatus } from '../domain.js'

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
  webhooks: number
  keys: number
}

/** Told each violation as it is found: a check never holds them all. */
export type Report = (violation: Violation) => void

export interface InvariantChecks {
  /**
   * Reads the whole database in one snapshot, in bounded memory, without holding any lock a writer
   * waits for, and reports every violation; resolves with what it read.
   */
  checkInvariants(report: Report): Promise<CheckCounts>
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
