import { parse, stringify } from 'lossless-json'
import type { Pet, PetStatus, Tag } from '../domain.js'

/**
 * A pet's row, the same on SQLite and PostgreSQL. photoUrls and tags are kept as JSON arrays in their
 * row, since they are only ever read and written with their pet; the tags' int64 ids are written digit
 * for digit and read back exactly. The status is not the pet's: it is read from the inventory.
 */
export interface PetRow {
  id: bigint | string
  name: string
  category_id: bigint | string | null
  category_name: string | null
  photo_urls: string
  tags: string
  /** The inventory entry's, joined in; null when the pet has none. */
  status: string | null
}

/** The stored columns of a pet, in table order: id, name, category_id, category_name, photo_urls, tags. */
export function petColumns(pet: Pet): [bigint, string, bigint | null, string | null, string, string] {
  const tags = stringify(pet.tags.map((t) => ({ id: t.id, name: t.name })))!
  return [pet.id, pet.name, pet.category?.id ?? null, pet.category?.name ?? null, JSON.stringify(pet.photoUrls), tags]
}

export function rowToPet(row: PetRow): Pet {
  const pet: Pet = {
    id: BigInt(row.id),
    name: row.name,
    photoUrls: JSON.parse(row.photo_urls) as string[],
    // Every number in the tags is an id.
    tags: parse(row.tags, null, (digits) => BigInt(digits)) as Tag[],
  }
  if (row.category_id !== null) pet.category = { id: BigInt(row.category_id), name: row.category_name! }
  if (row.status !== null) pet.status = row.status as PetStatus
  return pet
}
