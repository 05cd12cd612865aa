import { Type } from 'typebox'

// The API's exact 64-bit integers, one place for every resource's schemas: how an int64 is written
// in the OpenAPI document, the pet id, and the path parameter that names a pet.

/**
 * Said on every int64 of the document: generators map `format: int64` to a double unless told
 * otherwise, and no vendor extension tells them (see docs/api.md, "Exact 64-bit integers").
 */
export const INT64_NOTE =
  "An int64, which may exceed 2^53: read and write it exactly, never as a double (JavaScript's JSON.parse rounds it)."

/** A pet id above 2^53 (2^53 + 1, which a double rounds to 2^53): the examples show that ids are exact. */
export const BIG_PET_ID = 9007199254740993n

interface Int64Options {
  minimum?: number
  default?: number
  /** bigint, so that the document writes them digit for digit (see http/openapi-document.ts). */
  examples?: bigint[]
}

/** Exact int64 everywhere: the JSON number is emitted digit for digit, and parsed to a bigint on input. */
export const Int64Schema = (description: string, options: Int64Options = {}) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', ...options, description: `${description} ${INT64_NOTE}` })

/**
 * An id the service numbers from 1 in a 32-bit column today (API keys, webhook subscriptions),
 * documented as an int64 like every other id, so that clients read all ids alike and a wider column
 * later breaks none of them. Its handlers produce numbers, hence Type.Integer.
 */
export const Int64IdSchema = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, description: `${description} ${INT64_NOTE}` })

export const PetIdSchema = Int64Schema('Identifier of the pet (a signed 64-bit integer, exact over the whole range).', {
  examples: [BIG_PET_ID],
})

/** The path parameter that names a pet. */
export const PetIdParamsSchema = Type.Object({
  petId: Int64Schema('The pet: a decimal int64 in canonical form (no leading zeros, no exponent).', { examples: [BIG_PET_ID] }),
})
