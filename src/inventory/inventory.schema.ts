import { Type, type Static } from 'typebox'
import { MAX_QUANTITY, PET_STATUSES, type PetStatus } from '../domain.js'

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  $id: 'PetStatus',
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Sales status of an inventory entry.',
})

/** Exact int64 everywhere: the JSON number is emitted digit for digit, and parsed to a bigint on input. */
export const Int64Schema = (description: string) => Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description })

export const PetIdSchema = Int64Schema('Identifier of the pet (a signed 64-bit integer, exact over the whole range).')

export const QuantitySchema = Type.Integer({
  minimum: 0,
  maximum: MAX_QUANTITY,
  description: `Stock count, an integer from 0 to ${MAX_QUANTITY}.`,
})

export const InventoryItemSchema = Type.Object(
  {
    petId: PetIdSchema,
    quantity: QuantitySchema,
    status: Type.Ref('PetStatus'),
  },
  { $id: 'InventoryItem', additionalProperties: false, description: 'The stock level of one pet.' },
)

export const InventoryUpdateSchema = Type.Object(
  { quantity: QuantitySchema },
  {
    $id: 'InventoryUpdate',
    additionalProperties: false,
    description: 'The new stock count. Unknown fields are rejected.',
  },
)
export type InventoryUpdate = Static<typeof InventoryUpdateSchema>

export const PetIdParamsSchema = Type.Object({
  petId: Int64Schema('The pet: a decimal int64 in canonical form (no leading zeros, no exponent).'),
})

/** A row of an import file, checked with the same validator as request bodies (petId is parsed separately). */
export const InventoryRecordSchema = Type.Object(
  { quantity: QuantitySchema, status: Type.Ref('PetStatus') },
  { additionalProperties: false },
)
