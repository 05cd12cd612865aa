/**
 * The store's domain types, in one place: storage, services and the HTTP layer all import them
 * from here, and this module imports nothing. The HTTP schemas (src/inventory/inventory.schema.ts)
 * describe these same shapes on the wire.
 */

/** The sales statuses of a pet and its inventory entry, in the spec's order. */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = (typeof PET_STATUSES)[number]

/** Quantities fit a signed 32-bit integer: the spec says "integer", we bound it for every client and backend. */
export const MAX_QUANTITY = 2147483647

/** One pet's stock: petId is an exact int64, carried as a bigint everywhere. */
export interface InventoryItem {
  petId: bigint
  quantity: number
  status: PetStatus
}
