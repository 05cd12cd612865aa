import { stringify } from 'lossless-json'
import type { DeprecatedCalls, Pet } from '../domain.js'

/**
 * A Pet's JSON, its int64 ids as numbers digit for digit (JSON.stringify cannot write a bigint), in
 * the contract's field order; category and status are left out when the pet has none.
 */
export function petJson(pet: Pet): string {
  return stringify({
    id: pet.id,
    name: pet.name,
    category: pet.category && { id: pet.category.id, name: pet.category.name },
    photoUrls: pet.photoUrls,
    tags: pet.tags.map((t) => ({ id: t.id, name: t.name })),
    status: pet.status,
  })!
}

/** One key's calls of the deprecated lookup, as the report shows them (the API and `petstore deprecations --json`). */
export function deprecatedCallsJson({ keyId, name, calls, firstCall, lastCall }: DeprecatedCalls & { name: string }) {
  return { keyId, name, calls, firstCall, lastCall }
}
