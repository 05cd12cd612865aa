import { NotFoundError, PreconditionFailedError } from '../errors.js'
import type { InventoryItem, Precondition, Storage } from '../storage/storage.js'

export class InventoryService {
  constructor(private readonly storage: Storage) {}

  /** Every entry, sorted by petId, in pages from one snapshot (see Storage.forEachInventoryPage). */
  forEachPage(pageSize: number, onPage: (items: InventoryItem[]) => void | Promise<void>): Promise<void> {
    return this.storage.forEachInventoryPage(pageSize, onPage)
  }

  async get(petId: bigint): Promise<InventoryItem> {
    const item = await this.storage.getInventoryItem(petId)
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  /** Sets a quantity; with a precondition, only if it holds for the entry when the write applies. */
  async setQuantity(petId: bigint, quantity: number, precondition?: Precondition): Promise<InventoryItem> {
    const result = await this.storage.setQuantity(petId, quantity, precondition)
    if (result === 'not_found') throw new NotFoundError(`No inventory entry for pet ${petId}`)
    if (result === 'precondition_failed') {
      throw new PreconditionFailedError(`The entry for pet ${petId} has changed since the ETag in If-Match was read`)
    }
    return result
  }

  /** Inserts or replaces entries, all or nothing. */
  importItems(items: InventoryItem[]): Promise<void> {
    return this.storage.upsertInventory(items)
  }
}
