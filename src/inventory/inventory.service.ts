import { NotFoundError, PreconditionFailedError } from '../errors.js'
import type { Actor, InventoryChange, InventoryItem } from '../domain.js'
import { refusingDuplicates, type ImportSource } from '../import/import-source.js'
import type { ChangeQuery, ImportRecord, Precondition, SetResult, Storage } from '../storage/storage.js'

export class InventoryService {
  constructor(private readonly storage: Storage) {}

  /** Every entry as the list's JSON, in pieces from one snapshot (see Storage.forEachInventoryJson). */
  forEachJsonPiece(onPiece: (json: Buffer, entries: number) => Promise<void>): Promise<void> {
    return this.storage.forEachInventoryJson(onPiece)
  }

  async get(petId: bigint): Promise<InventoryItem> {
    const item = await this.storage.getInventoryItem(petId)
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  /** Sets a quantity; with a precondition, only if it holds for the entry when the write applies. */
  async setQuantity(petId: bigint, quantity: number, actor: Actor, precondition?: Precondition): Promise<InventoryItem> {
    const result = (await this.storage.writeStock({ kind: 'set', petId, quantity, actor, precondition })) as SetResult
    if (result === 'not_found') throw new NotFoundError(`No inventory entry for pet ${petId}`)
    if (result === 'precondition_failed') {
      throw new PreconditionFailedError(`The entry for pet ${petId} has changed since the ETag in If-Match was read`)
    }
    return result
  }

  /** A page of the ledger (see Storage.listChanges). */
  changes(query: ChangeQuery): Promise<InventoryChange[]> {
    return this.storage.listChanges(query)
  }

  /**
   * Inserts or replaces the entries of an import file, all or nothing; resolves with their number.
   * A petId named twice is refused, naming both places.
   */
  importFile(source: ImportSource<ImportRecord>): Promise<number> {
    return refusingDuplicates(source, 'petId', () => this.storage.importInventory(source.chunks))
  }
}
