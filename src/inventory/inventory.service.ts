import { randomUUID } from 'node:crypto'
import {
  ConflictError,
  CursorExpiredError,
  type DomainError,
  InvalidInputError,
  jumpedOver,
  NotFoundError,
  PreconditionFailedError,
} from '../errors.js'
import {
  type Actor,
  type DeltaReason,
  type ImportRecord,
  type InventoryChange,
  type InventoryItem,
  MAX_QUANTITY,
  type PetStatus,
  type SetReason,
} from '../domain.js'
import { refusingDuplicates, type ImportSource } from '../import/import-source.js'
import type {
  ChangeQuery,
  Imports,
  InventoryQuery,
  InventoryReads,
  LocationStore,
  LedgerJumps,
  LedgerReads,
  LedgerRetention,
  StockWrites,
} from '../storage/ports.js'
import { isLocationRefusal, locationRefusalError } from '../stock/location-refusal.js'
import type { ChangedEntry, Precondition, StockChange } from '../stock/writes.js'
import { itemJson } from './inventory.json.js'
import { changesFingerprint, refusalError } from './stock-moves.js'

/** Entries read a statement at a time for a key held to locations (reachablePieces). */
const READ_PAGE = 2000

/**
 * What changes applied all or nothing answered: the resulting entries (in the order of the changes)
 * and the batch's id, or the error of the change that could not apply; and whether it repeats an
 * earlier request's answer (same Idempotency-Key), in which case nothing was applied now.
 */
export type ChangesOutcome = { replayed: boolean } & (
  | { entries: ChangedEntry[]; batchId: string | null; error?: undefined }
  | { entries?: undefined; error: DomainError }
)

/** What tells whether a cursor is still in the ledger's history. */
export type CursorChecks = LedgerReads & LedgerRetention & Pick<LedgerJumps, 'jumpOver'>

/**
 * Throws CursorExpiredError when retention removed rows after `after`, or when `after` is in the
 * seqs a restore or a bump skipped (a seq of the history before it). Called after the rows were
 * read: prunedThrough only grows, so a value at or below `after` now was so when they were read; a
 * jump is made above every row there is, so none of the rows read can be past one `after` is in.
 */
export async function assertCursorKept(ledger: CursorChecks, after: bigint): Promise<void> {
  const [pruned, jump] = await Promise.all([ledger.prunedThrough(), ledger.jumpOver(after)])
  if (after < pruned) throw new CursorExpiredError(after, `retention removed every change up to ${pruned}`, await ledger.lastChangeSeq())
  if (jump) throw new CursorExpiredError(after, jumpedOver(jump), await ledger.lastChangeSeq())
}

/** Which rows of the ledger a page holds: one pet's, one reason's, or both. */
export type ChangeFilter = Pick<ChangeQuery, 'petId' | 'reason'>

export class InventoryService {
  constructor(
    private readonly storage: InventoryReads &
      StockWrites &
      CursorChecks &
      Pick<Imports, 'importInventory'> &
      Pick<LocationStore, 'listReachableInventory'>,
  ) {}

  /**
   * The list as a key held to `reach` sees it (each quantity the sum over those locations), as JSON
   * pieces of READ_PAGE entries, each page read by keyset in a statement of its own: not one snapshot
   * as the whole list is, and never cached (it is that key's alone).
   */
  reachablePieces(reach: readonly number[]): { forEachJsonPiece: InventoryService['forEachJsonPiece'] } {
    return {
      forEachJsonPiece: async (onPiece, status) => {
        for (let after: bigint | undefined, first = true; ; first = false) {
          const page = await this.storage.listReachableInventory(reach, { after, limit: READ_PAGE, status })
          if (page.length > 0) await onPiece(Buffer.from(`${first ? '' : ','}${page.map(itemJson).join(',')}`), page.length)
          if (page.length < READ_PAGE) return
          after = page[page.length - 1]!.petId
        }
      },
    }
  }

  /** A page of the list as a key held to `reach` sees it. */
  listReachable(reach: readonly number[], query: InventoryQuery): Promise<InventoryItem[]> {
    return this.storage.listReachableInventory(reach, query)
  }

  /** One entry as a key held to `reach` sees it. */
  async getReachable(reach: readonly number[], petId: bigint): Promise<InventoryItem> {
    const [item] = await this.storage.listReachableInventory(reach, { petId, limit: 1 })
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  /** Every entry (or those of one status) as the list's JSON, in pieces from one snapshot (see Storage.forEachInventoryJson). */
  forEachJsonPiece(onPiece: (json: Buffer, entries: number) => Promise<void>, status?: PetStatus): Promise<void> {
    return this.storage.forEachInventoryJson(onPiece, status)
  }

  /** Up to `limit` entries by petId above `after` (from the smallest without it), optionally of one status, from one snapshot. */
  list(query: InventoryQuery): Promise<InventoryItem[]> {
    return this.storage.listInventory(query)
  }

  async get(petId: bigint): Promise<InventoryItem> {
    const item = await this.storage.getInventoryItem(petId)
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  /**
   * Sets a quantity; with a precondition, only if it holds for the entry when the write applies. Its
   * ledger row records the reason (adjustment when none is given) and the note (null when none).
   */
  async setQuantity(
    petId: bigint,
    quantity: number,
    actor: Actor,
    precondition?: Precondition,
    {
      reason = 'adjustment',
      note = null,
      expectedQuantity,
      locationId,
    }: {
      reason?: SetReason | undefined
      note?: string | null | undefined
      expectedQuantity?: number | undefined
      locationId?: number | undefined
    } = {},
  ): Promise<InventoryItem> {
    const result = await this.storage.writeStock({
      kind: 'set',
      petId,
      quantity,
      expectedQuantity,
      reason,
      note,
      actor,
      precondition,
      locationId,
    })
    if (result === 'not_found') throw new NotFoundError(`No inventory entry for pet ${petId}`)
    if (isLocationRefusal(result)) throw locationRefusalError(result)
    if (result === 'precondition_failed') {
      throw new PreconditionFailedError(`The entry for pet ${petId} has changed since the ETag in If-Match was read`)
    }
    if ('refused' in result) throw refusalError({ petId, quantity, expectedQuantity, locationId }, result)
    return result
  }

  /**
   * Adds `delta` (negative: removes) to what the entry holds when the write applies, with no read
   * before it: refused when it would take the quantity below zero or past the maximum.
   */
  adjust(
    petId: bigint,
    delta: number,
    actor: Actor,
    {
      reason,
      note,
      locationId,
    }: { reason?: DeltaReason | undefined; note?: string | null | undefined; locationId?: number | undefined } = {},
    idempotencyKey?: string,
  ): Promise<ChangesOutcome> {
    return this.applyChanges(
      null,
      [{ petId, delta, reason, note, ...(locationId === undefined ? {} : { locationId }) }],
      actor,
      idempotencyKey,
    )
  }

  /** Moves `quantity` of a pet from one location to another, in one transaction: a ledger row at each, sharing a transfer id. */
  transfer(
    petId: bigint,
    move: { fromLocationId: number; toLocationId: number; quantity: number; note?: string | null | undefined },
    actor: Actor,
    idempotencyKey?: string,
  ): Promise<ChangesOutcome> {
    // The HTTP schema says the same; the CLI comes here directly.
    if (move.fromLocationId === move.toLocationId) throw new InvalidInputError('toLocationId must be another location than fromLocationId')
    if (!Number.isSafeInteger(move.quantity) || move.quantity < 1 || move.quantity > MAX_QUANTITY)
      throw new InvalidInputError(`quantity must be an integer from 1 to ${MAX_QUANTITY}`)
    return this.applyChanges(null, [{ petId, ...move, transferId: randomUUID() }], actor, idempotencyKey, 'transfer')
  }

  /**
   * Applies changes in order, all or nothing, in one transaction; their ledger rows are contiguous
   * and carry one new batch id. A change that cannot apply is named by its index, and nothing is written.
   */
  batch(changes: StockChange[], actor: Actor, idempotencyKey?: string): Promise<ChangesOutcome> {
    return this.applyChanges(randomUUID(), changes, actor, idempotencyKey)
  }

  private async applyChanges(
    batchId: string | null,
    changes: StockChange[],
    actor: Actor,
    idempotencyKey: string | undefined,
    kind: 'adjust' | 'batch' | 'transfer' = batchId === null ? 'adjust' : 'batch',
  ): Promise<ChangesOutcome> {
    const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, fingerprint: changesFingerprint(kind, changes) }
    const result = await this.storage.writeStock({ kind: 'changes', batchId, changes, actor, idempotency })
    if (result === 'idempotency_key_reused') {
      throw new ConflictError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with another request (another body or another pet); use a new key for new changes',
      )
    }
    const { replayed } = result
    if (result.outcome === 'applied') return { entries: result.entries, batchId: result.batchId, replayed }
    const index = batchId === null ? undefined : result.index
    return { error: refusalError(changes[result.index]!, result.refusal, index), replayed }
  }

  /**
   * A page of the ledger in seq order after `after` (of one pet or one reason, when given: read by
   * the ledger's index by pet or by reason), and the seq the next page continues after when more rows remain: a page is full
   * unless it is the last, and a next page never comes back empty. A cursor before rows that
   * retention removed, or in a jump's seqs, is refused (CursorExpiredError) rather than answered with a gap.
   */
  async changesPage(after: bigint, limit: number, filter: ChangeFilter = {}): Promise<{ rows: InventoryChange[]; nextAfter?: bigint }> {
    const rows = await this.storage.listChanges({ after, limit: limit + 1, ...filter })
    await assertCursorKept(this.storage, after)
    return rows.length > limit ? { rows: rows.slice(0, limit), nextAfter: rows[limit - 1]!.seq } : { rows }
  }

  /**
   * A page of the ledger newest first, below `before` (of one pet, when given: by the same index,
   * read backwards), and the seq the next page continues below when older rows remain: full pages
   * as changesPage's. No cursor expires: retention removes only a prefix of the ledger, and every row
   * written later is above the cursor, so a walk down never skips a row; it ends at the oldest row
   * kept (a page past it, whose rows were removed after the Link to it was sent, is short or empty).
   */
  async changesPageBefore(
    before: bigint,
    limit: number,
    filter: ChangeFilter = {},
  ): Promise<{ rows: InventoryChange[]; nextBefore?: bigint }> {
    const rows = await this.storage.listChanges({ after: 0n, through: before - 1n, limit: limit + 1, ...filter, newestFirst: true })
    return rows.length > limit ? { rows: rows.slice(0, limit), nextBefore: rows[limit - 1]!.seq } : { rows }
  }

  /** One pet's latest `limit` changes, newest first. */
  history(petId: bigint, limit: number): Promise<InventoryChange[]> {
    return this.storage.listChanges({ after: 0n, petId, limit, newestFirst: true })
  }

  /**
   * Inserts or replaces the entries of an import file, all or nothing; resolves with their number.
   * A petId named twice is refused, naming both places.
   */
  importFile(source: ImportSource<ImportRecord>): Promise<number> {
    return refusingDuplicates(source, 'petId', () => this.storage.importInventory(source.chunks))
  }
}
