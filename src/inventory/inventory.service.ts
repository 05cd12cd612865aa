import { NotFoundError } from '../errors.js'
import type { InventoryItem, Storage } from '../storage/storage.js'

export class InventoryService {
  constructor(private readonly storage: Storage) {}

  /** Every entry, sorted by petId. */
  list(): Promise<InventoryItem[]> {
    return this.storage.listInventory()
  }

  async get(petId: bigint): Promise<InventoryItem> {
    const item = await this.storage.getInventoryItem(petId)
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  async setQuantity(petId: bigint, quantity: number): Promise<InventoryItem> {
    const item = await this.storage.setQuantity(petId, quantity)
    if (!item) throw new NotFoundError(`No inventory entry for pet ${petId}`)
    return item
  }

  /** Inserts or replaces entries, all or nothing. */
  importItems(items: InventoryItem[]): Promise<void> {
    return this.storage.upsertInventory(items)
  }
}
