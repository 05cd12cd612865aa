import { Type, type Static } from 'typebox'
import { DELTA_REASONS, type DeltaReason, MAX_BATCH_CHANGES } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { BIG_PET_ID, PetIdSchema } from '../http/int64.schema.js'
import type { StockChange } from '../stock/writes.js'
import { ExpectedQuantitySchema, NoteSchema, QuantitySchema, SetReasonSchema } from './inventory.schema.js'
import { AtLocationSchema, LocationIdSchema } from '../http/location-id.schema.js'
import { randomUUID } from 'node:crypto'

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

const DELTA =
  'Units to add (positive) or remove (negative): a non-zero int32. Applied to whatever the entry holds when the change ' +
  'applies, with no read first: never below 0 (409 `insufficient_stock`) nor past 2147483647 (409 `stock_overflow`).'
const deltaSchema = (description: string) => Type.Integer({ minimum: INT32_MIN, maximum: INT32_MAX, description })

const DeltaReasonSchema = Type.Unsafe<DeltaReason>({
  type: 'string',
  enum: [...DELTA_REASONS],
  default: 'adjustment',
  description:
    'Why the quantity moves, recorded on its ledger row: `arrival`, `return`, `damage`, `loss` or `adjustment` (the default). ' +
    '`count` states a whole quantity, so it goes with a set (`quantity`), not a delta.',
})

export const InventoryAdjustmentSchema = Type.Object(
  {
    delta: deltaSchema(DELTA),
    reason: Type.Optional(DeltaReasonSchema),
    note: Type.Optional(NoteSchema),
    locationId: Type.Optional(AtLocationSchema('Add or remove the units at this location (the answer is then that location’s stock)')),
  },
  {
    $id: 'InventoryAdjustment',
    additionalProperties: false,
    description: 'Units added to or removed from one entry (at one location), and why. Unknown fields are rejected.',
    examples: [
      { delta: 12, reason: 'arrival', note: 'Delivery 2026-12-05, 12 bags' },
      { delta: -2, reason: 'damage', note: 'Torn bags' },
    ],
  },
)
export type InventoryAdjustment = Static<typeof InventoryAdjustmentSchema>

/**
 * One change of a batch: a set (`quantity`, with `expectedQuantity` if wanted) or a delta, never
 * both. One object with optional fields rather than a oneOf: the validator then names the field at
 * fault (`body.changes[17].delta must be integer`), and the route names a change with neither or both.
 */
export const InventoryBatchChangeSchema = Type.Object(
  {
    petId: PetIdSchema,
    quantity: Type.Optional({ ...QuantitySchema, description: 'Set the quantity to this (a count, say). Not with `delta`.' }),
    expectedQuantity: Type.Optional(ExpectedQuantitySchema),
    delta: Type.Optional(deltaSchema(`${DELTA} Not with \`quantity\`.`)),
    reason: Type.Optional(SetReasonSchema),
    note: Type.Optional(NoteSchema),
    locationId: Type.Optional(
      AtLocationSchema('The location a set or a delta applies at (its entry in the answer is then that location’s stock)'),
    ),
    fromLocationId: Type.Optional(
      LocationIdSchema('A transfer: `quantity` units leave this location for `toLocationId` (no `delta`, `reason` nor `locationId`).'),
    ),
    toLocationId: Type.Optional(LocationIdSchema('A transfer: where the units arrive, another location than `fromLocationId`.')),
  },
  {
    $id: 'InventoryBatchChange',
    additionalProperties: false,
    description:
      'One change of a batch: exactly one of `quantity` (a set, optionally with `expectedQuantity`) and `delta`, at ' +
      '`locationId` or the default location; or a transfer (`fromLocationId`, `toLocationId` and `quantity`). ' +
      'Unknown fields are rejected.',
  },
)

export const InventoryBatchSchema = Type.Object(
  {
    changes: Type.Array(Type.Ref('InventoryBatchChange'), {
      minItems: 1,
      maxItems: MAX_BATCH_CHANGES,
      description: `1 to ${MAX_BATCH_CHANGES} changes, applied in this order (the same pet may appear more than once).`,
    }),
  },
  {
    $id: 'InventoryBatch',
    additionalProperties: false,
    description: 'Changes applied all or nothing, in one transaction.',
    examples: [
      {
        changes: [
          { petId: BIG_PET_ID, delta: 12, reason: 'arrival', note: 'Delivery 2026-12-05' },
          { petId: 7, quantity: 40, expectedQuantity: 42, reason: 'count' },
          { petId: BIG_PET_ID, delta: -1, reason: 'damage' },
        ],
      },
    ],
  },
)

export const InventoryBatchResultSchema = Type.Object(
  {
    batchId: Type.String({
      format: 'uuid',
      description: "The batch's id, which each of its ledger rows carries (InventoryChange.batchId).",
    }),
    entries: Type.Array(Type.Union([Type.Ref('InventoryItem'), Type.Ref('StockLevel'), Type.Ref('TransferResult')]), {
      description:
        'What each change left, in the order of the changes (a pet named twice appears twice): the pet’s entry for a change ' +
        'at no named location, that location’s stock (StockLevel) for one naming it, both locations for a transfer (TransferResult).',
    }),
  },
  {
    $id: 'InventoryBatchResult',
    additionalProperties: false,
    description: 'A batch applied and committed.',
    examples: [
      {
        batchId: '3f6c2a9e-5b1d-4e7a-8c0f-2d9b7e6a1c54',
        entries: [
          { petId: BIG_PET_ID, quantity: 24, status: 'available' },
          { petId: 7, quantity: 40, status: 'available' },
          { petId: BIG_PET_ID, quantity: 23, status: 'available' },
        ],
      },
    ],
  },
)

/** A batch change as the validator let it through; petId is read exactly by the route. */
type BatchChangeBody = Omit<Static<typeof InventoryBatchChangeSchema>, 'petId'>

/**
 * The rules one object's schema cannot word well, checked after it: exactly one of quantity and
 * delta, a delta not 0, `count` and `expectedQuantity` only with a set. `at` names the change
 * (`body.changes[17]`, or `body` for an adjustment).
 */
export function stockChange(petId: bigint, body: BatchChangeBody, at: string): StockChange {
  const { quantity, expectedQuantity, delta, reason, note, locationId, fromLocationId, toLocationId } = body
  if (fromLocationId !== undefined || toLocationId !== undefined) {
    if (fromLocationId === undefined || toLocationId === undefined)
      throw new InvalidInputError(`${at} must have both fromLocationId and toLocationId`)
    if (fromLocationId === toLocationId) throw new InvalidInputError(`${at}.toLocationId must be another location than fromLocationId`)
    for (const field of ['delta', 'expectedQuantity', 'reason', 'locationId'] as const)
      if (body[field] !== undefined) throw new InvalidInputError(`${at}.${field} does not go with a transfer`)
    if (quantity === undefined) throw new InvalidInputError(`${at} must have the quantity to transfer`)
    if (quantity === 0) throw new InvalidInputError(`${at}.quantity of a transfer must be 1 or more`)
    return { petId, fromLocationId, toLocationId, quantity, note, transferId: randomUUID() }
  }
  const place = locationId === undefined ? {} : { locationId }
  if (delta !== undefined) {
    if (quantity !== undefined) throw new InvalidInputError(`${at} must have quantity or delta, not both`)
    if (delta === 0) throw new InvalidInputError(`${at}.delta must not be 0`)
    if (expectedQuantity !== undefined) throw new InvalidInputError(`${at}.expectedQuantity goes only with quantity, not delta`)
    if (reason === 'count') throw new InvalidInputError(`${at}.reason count goes only with quantity, not delta`)
    return { petId, delta, reason, note, ...place }
  }
  if (quantity === undefined) throw new InvalidInputError(`${at} must have quantity or delta`)
  return { petId, quantity, expectedQuantity, reason, note, ...place }
}
