import { NotFoundError } from '../errors.js'
import type { InventoryItem, Storage } from '../storage/storage.js'

export interface InventorySnapshot {
  version: string
  items: InventoryItem[]
}

export class InventoryService {
  constructor(private readonly storage: Storage) {}

  /** The version is read first, so a snapshot is never older than the version it is filed under. */
  async snapshot(): Promise<InventorySnapshot> {
    const { inventory: version } = await this.storage.versions()
    return { version, items: await this.storage.listInventory() }
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
