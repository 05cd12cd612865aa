import { Type } from 'typebox'
import { DEFAULT_LOCATION_ID, LOCATION_LIMITS, MAX_QUANTITY } from '../domain.js'
import { BIG_PET_ID, Int64IdSchema, Int64Schema, PetIdSchema } from '../http/int64.schema.js'
import { NoteSchema, QuantitySchema } from '../inventory/inventory.schema.js'
import { LOCATION_ID, LocationIdSchema } from '../http/location-id.schema.js'

/** Not only spaces (the lookahead), and no control character, NUL or unpaired surrogate anywhere. */
export const LOCATION_NAME_PATTERN = '^(?!\\s*$)[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]+$'

/** A location's name: printable text, no NUL nor unpaired surrogate (as a note), unique without regard to case. */
const LocationNameSchema = Type.String({
  minLength: 1,
  maxLength: LOCATION_LIMITS.nameLength,
  pattern: LOCATION_NAME_PATTERN,
  description: `1 to ${LOCATION_LIMITS.nameLength} characters, not only spaces, no control characters; unique among locations, case aside.`,
})

export const LocationSchema = Type.Object(
  {
    id: Int64IdSchema(`Identifier of the location; ${DEFAULT_LOCATION_ID} is the default location, which every store has.`),
    name: LocationNameSchema,
    active: Type.Boolean({ description: 'An inactive location holds no stock and takes none; only an empty location can be deactivated.' }),
    createdAt: Type.String({ format: 'date-time', description: 'When it was created (RFC 3339, UTC).' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When its name or state last changed (RFC 3339, UTC).' }),
  },
  {
    $id: 'Location',
    additionalProperties: false,
    description:
      'A place that holds stock: a shop, a warehouse. A pet’s stock (InventoryItem.quantity) is the sum of its stock at every location.',
    examples: [
      { id: 4, name: 'Harbour Street', active: true, createdAt: '2026-12-06T09:00:00.000Z', updatedAt: '2026-12-06T09:00:00.000Z' },
    ],
  },
)

export const LocationCreateSchema = Type.Object(
  { name: LocationNameSchema },
  {
    $id: 'LocationCreate',
    additionalProperties: false,
    description: 'A new location, active. Unknown fields are rejected.',
    examples: [{ name: 'Harbour Street' }],
  },
)

export const LocationUpdateSchema = Type.Object(
  {
    name: Type.Optional(LocationNameSchema),
    active: Type.Optional(Type.Boolean({ description: 'false deactivates it (only while it holds nothing), true activates it again.' })),
  },
  {
    $id: 'LocationUpdate',
    additionalProperties: false,
    minProperties: 1,
    description: 'A new name, a new state, or both. Unknown fields are rejected.',
    examples: [{ name: 'Harbour Street (closed)', active: false }],
  },
)

export const StockLevelSchema = Type.Object(
  {
    petId: PetIdSchema,
    locationId: LocationIdSchema(LOCATION_ID),
    quantity: { ...QuantitySchema, description: `Units of the pet at this location, from 0 to ${MAX_QUANTITY}.` },
    status: Type.Ref('PetStatus'),
  },
  {
    $id: 'StockLevel',
    additionalProperties: false,
    description: 'The stock of one pet at one location.',
    examples: [{ petId: BIG_PET_ID, locationId: 4, quantity: 7, status: 'available' }],
  },
)

export const TransferSchema = Type.Object(
  {
    fromLocationId: LocationIdSchema(`Where the units leave. ${LOCATION_ID}`),
    toLocationId: LocationIdSchema(`Where they arrive: another location. ${LOCATION_ID}`),
    quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, description: `Units moved, from 1 to ${MAX_QUANTITY}.` }),
    note: Type.Optional(NoteSchema),
  },
  {
    $id: 'Transfer',
    additionalProperties: false,
    description: 'Units of one pet moved from one location to another. Unknown fields are rejected.',
    examples: [{ fromLocationId: 1, toLocationId: 4, quantity: 6, note: 'Weekly restock, van 2' }],
  },
)

export const TransferResultSchema = Type.Object(
  {
    petId: PetIdSchema,
    locationId: LocationIdSchema('The destination.'),
    quantity: { ...QuantitySchema, description: 'Units at the destination after the transfer.' },
    status: Type.Ref('PetStatus'),
    transferId: Type.String({ format: 'uuid', description: 'The id both ledger rows of the transfer carry (InventoryChange.transferId).' }),
    from: Type.Object(
      {
        locationId: LocationIdSchema('The source.'),
        quantity: { ...QuantitySchema, description: 'Units at the source after the transfer.' },
      },
      { additionalProperties: false },
    ),
  },
  {
    $id: 'TransferResult',
    additionalProperties: false,
    description: 'A transfer committed: its destination’s stock, and its source’s.',
    examples: [
      {
        petId: BIG_PET_ID,
        locationId: 4,
        quantity: 13,
        status: 'available',
        transferId: '7d0b3c1e-2f4a-4b6c-9e8d-1a2b3c4d5e6f',
        from: { locationId: 1, quantity: 30 },
      },
    ],
  },
)

/** The path parameter that names a location: an int64 as every path id is parsed (a larger one than MAX_LOCATION_ID names none). */
export const LocationIdParamsSchema = Type.Object({
  locationId: Int64Schema('The location: a decimal integer.', { examples: [4n] }),
})
