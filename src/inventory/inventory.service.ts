import { NotFoundError, PreconditionFailedError } from '../errors.js'
import type { Actor, ImportRecord, InventoryChange, InventoryItem, PetStatus, SetReason } from '../domain.js'
import { refusingDuplicates, type ImportSource } from '../import/import-source.js'
import type { Imports, InventoryQuery, InventoryReads, LedgerReads, StockWrites } from '../storage/ports.js'
import type { Precondition } from '../stock/writes.js'

/** How a pet's changes are found without an index by pet: seq windows of the primary key. */
export interface ChangeScan {
  /** Seqs one read covers: a range of the primary key, a few milliseconds of work. */
  window: bigint
  /** Windows one request reads at most, with the event loop turning between them. */
  windows: number
}

export const CHANGE_SCAN: ChangeScan = { window: 10_000n, windows: 10 }

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

export class InventoryService {
  constructor(
    private readonly storage: InventoryReads & StockWrites & LedgerReads & Pick<Imports, 'importInventory'>,
    private readonly scan: ChangeScan = CHANGE_SCAN,
  ) {}

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
    { reason = 'adjustment', note = null }: { reason?: SetReason | undefined; note?: string | null | undefined } = {},
  ): Promise<InventoryItem> {
    const result = await this.storage.writeStock({ kind: 'set', petId, quantity, reason, note, actor, precondition })
    if (result === 'not_found') throw new NotFoundError(`No inventory entry for pet ${petId}`)
    if (result === 'precondition_failed') {
      throw new PreconditionFailedError(`The entry for pet ${petId} has changed since the ETag in If-Match was read`)
    }
    return result
  }

  /**
   * A page of the ledger in seq order after `after`, and the seq the next page continues after, if
   * more may remain. Filtered by pet, a request reads at most `scan.windows` windows of seqs (the
   * ledger has no index by pet, see migration 002/004), so its page may hold fewer than `limit`
   * rows, even none, while a next page exists. The scan ends at most at the last seq read before
   * it: every seq up to there has committed (they become visible in order), so skipping to the end
   * of the scan never skips a row.
   */
  async changesPage(after: bigint, limit: number, petId?: bigint): Promise<{ rows: InventoryChange[]; nextAfter?: bigint }> {
    const full = (rows: InventoryChange[]) =>
      rows.length > limit ? { rows: rows.slice(0, limit), nextAfter: rows[limit - 1]!.seq } : undefined
    if (petId === undefined) {
      const rows = await this.storage.listChanges({ after, limit: limit + 1 })
      return full(rows) ?? { rows }
    }
    const last = await this.storage.lastChangeSeq()
    const rows: InventoryChange[] = []
    let scanned = after
    for (let n = 0; n < this.scan.windows && scanned < last && rows.length <= limit; n++) {
      if (n > 0) await nextTurn()
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min does not take
      const through = scanned + this.scan.window < last ? scanned + this.scan.window : last
      rows.push(...(await this.storage.listChanges({ after: scanned, through, limit: limit + 1 - rows.length, petId })))
      scanned = through
    }
    return full(rows) ?? (scanned < last ? { rows, nextAfter: scanned } : { rows })
  }

  /** One pet's latest `limit` changes, newest first, read window by window back from the end of the ledger. */
  async history(petId: bigint, limit: number): Promise<InventoryChange[]> {
    const { window } = this.scan
    const found: InventoryChange[] = []
    for (let through = await this.storage.lastChangeSeq(); through > 0n && found.length < limit; through -= window) {
      const after = through > window ? through - window : 0n
      found.push(...(await this.storage.listChanges({ after, through, petId, limit: limit - found.length, newestFirst: true })))
    }
    return found
  }

  /**
   * Inserts or replaces the entries of an import file, all or nothing; resolves with their number.
   * A petId named twice is refused, naming both places.
   */
  importFile(source: ImportSource<ImportRecord>): Promise<number> {
    return refusingDuplicates(source, 'petId', () => this.storage.importInventory(source.chunks))
  }
}
