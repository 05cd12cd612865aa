import { Type, type Static, type TSchema } from 'typebox'
import {
  CHANGE_REASONS,
  MAX_QUANTITY,
  NOTE_MAX_LENGTH,
  PET_STATUSES,
  SET_REASONS,
  type ChangeReason,
  type InventoryChange,
  type PetStatus,
  type SetReason,
} from '../domain.js'
import { AtLocationSchema, LocationIdSchema } from '../http/location-id.schema.js'
import { BIG_PET_ID, Int64IdSchema, Int64Schema, PetIdSchema } from '../http/int64.schema.js'
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../paging.js'

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  $id: 'PetStatus',
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Sales status of an inventory entry.',
})

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
  {
    $id: 'InventoryItem',
    additionalProperties: false,
    description: 'The stock level of one pet.',
    examples: [{ petId: BIG_PET_ID, quantity: 12, status: 'available' }],
  },
)

/**
 * No NUL (PostgreSQL's text cannot hold one) and no unpaired surrogate (UTF-8 cannot encode one, so
 * it would come back as U+FFFD): what is refused here is what could not be recorded exactly. Ajv
 * compiles patterns with the `u` flag, where a surrogate pair is one code point, outside the range.
 */
export const NOTE_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$'

/** Why a quantity is set, as a client may say it (updateInventory, a set in applyInventoryBatch). */
export const SetReasonSchema = Type.Unsafe<SetReason>({
  type: 'string',
  enum: [...SET_REASONS],
  default: 'adjustment',
  description:
    'Why the quantity is set, recorded on its ledger row: `arrival` (stock arrived), `return` (stock came back), ' +
    '`count` (a physical count), `damage` (units damaged), `loss` (units lost: theft, expiry, a miscount found), ' +
    "`adjustment` (anything else; the default). The store's own reasons, `order`, `cancellation` and `import`, cannot be given.",
})

export const NoteSchema = Type.String({
  maxLength: NOTE_MAX_LENGTH,
  pattern: NOTE_PATTERN,
  description:
    `Free text recorded on the ledger row as given, up to ${NOTE_MAX_LENGTH} characters (Unicode code points: ` +
    'an emoji outside the Basic Multilingual Plane counts as one). NUL (U+0000) and unpaired surrogates are refused. ' +
    'Omit it for no note.',
})

/** A compare quantity: the set applies only if the entry holds it (Shopify's compareQuantity). */
export const ExpectedQuantitySchema = Type.Integer({
  minimum: 0,
  maximum: MAX_QUANTITY,
  description:
    'Set only if the entry holds exactly this quantity when the change applies; otherwise 409 `quantity_mismatch`, whose ' +
    'message names the quantity found, and nothing changes. A compare-and-set by value, without reading the ETag first.',
})

export const InventoryUpdateSchema = Type.Object(
  {
    quantity: QuantitySchema,
    expectedQuantity: Type.Optional(ExpectedQuantitySchema),
    reason: Type.Optional(SetReasonSchema),
    note: Type.Optional(NoteSchema),
    locationId: Type.Optional(AtLocationSchema('Set the stock at this location')),
  },
  {
    $id: 'InventoryUpdate',
    additionalProperties: false,
    description:
      'The new stock count, and why, at one location (the default one unless `locationId` names another): the answer is the ' +
      'pet’s entry, its quantity the sum over every location. Unknown fields are rejected.',
    examples: [
      { quantity: 20, reason: 'arrival', note: 'Delivery 2026-11-26, pallet 3' },
      { quantity: 7 },
      { quantity: 11, expectedQuantity: 12, reason: 'count', note: 'Shelf count, aisle 4' },
    ],
  },
)
export type InventoryUpdate = Static<typeof InventoryUpdateSchema>

/**
 * listInventory's query. Without `limit` and `after` the answer is the whole list (of one status,
 * with `status`), as before paging existed; either one makes it a page. Neither has a default, so
 * the route can tell them absent.
 */
export const InventoryListQuerySchema = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PAGE_SIZE,
        description:
          `Page through the list: at most this many entries, from 1 to ${MAX_PAGE_SIZE}. ` +
          `Without it, a request with \`after\` gets pages of ${DEFAULT_PAGE_SIZE}; without either, the whole list.`,
      }),
    ),
    after: Type.Optional(
      Int64Schema(
        'Page through the list: entries with a petId above this one (a canonical decimal int64, negative ones included). ' +
          'The next page continues after the last petId of this one. Without it, a paged request starts at the smallest petId.',
        { examples: [BIG_PET_ID] },
      ),
    ),
    status: Type.Optional(
      Type.Unsafe<PetStatus>({
        type: 'string',
        enum: [...PET_STATUSES],
        description: 'Only the entries with this status: the whole filtered list, or with `limit` or `after`, a page of it.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type InventoryListQuery = { limit?: number; after?: bigint; status?: PetStatus }

/** A row of an import file, checked with the same validator as request bodies (petId is parsed separately). */
export const InventoryRecordSchema = Type.Object(
  { quantity: QuantitySchema, status: Type.Ref('PetStatus') },
  { additionalProperties: false },
)

export const ChangeReasonSchema = Type.Unsafe<ChangeReason>({
  $id: 'ChangeReason',
  type: 'string',
  enum: [...CHANGE_REASONS],
  description:
    'Why the quantity changed: `adjustment`, `arrival`, `return`, `count`, `damage` or `loss` (updateInventory, ' +
    'adjustInventory or applyInventoryBatch, as its `reason` said; `adjustment` by default), ' +
    "`import` (the operator's `petstore import inventory`), " +
    '`order` (placeOrder took the stock, or confirmReservation turned held units into an order, moving none), ' +
    '`cancellation` (a cancelled order gave it back), `reservation` (createReservation held the units), ' +
    '`release` (releaseReservation gave them back), `expiry` (the hold expired and gave them back by itself), ' +
    '`transfer` (transferInventory, or a transfer in a batch: a row out of one location and one into another).',
})

/**
 * Two rows in a row: an arrival, then an order of that stock. The examples of a ledger row, and of
 * the stream's events (changes/stream.routes.ts), so the feed and the stream show the same changes.
 */
export const CHANGE_EXAMPLES: readonly [InventoryChange, InventoryChange] = [
  {
    seq: 1043n,
    petId: BIG_PET_ID,
    previousQuantity: 12,
    quantity: 20,
    reason: 'arrival',
    note: 'Delivery 2026-11-26, pallet 3',
    orderId: null,
    batchId: '3f6c2a9e-5b1d-4e7a-8c0f-2d9b7e6a1c54',
    keyId: 2,
    requestId: '0b9c2f5e-4d1a-4c8e-9f3b-7a6d5e4c3b2a',
    at: '2026-11-26T12:00:00.000Z',
  },
  {
    seq: 1044n,
    petId: BIG_PET_ID,
    previousQuantity: 20,
    quantity: 18,
    reason: 'order',
    note: null,
    orderId: 48213n,
    batchId: null,
    keyId: 3,
    requestId: 'checkout-7f3a9c',
    at: '2026-11-26T12:00:05.250Z',
  },
]

const nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })

export const InventoryChangeSchema = Type.Object(
  {
    seq: Int64Schema(
      'Position in the ledger: increases with every change, in commit order, across all instances. ' +
        'A reader that asks for `after=<the last seq it saw>` never misses or repeats a change.',
    ),
    petId: PetIdSchema,
    previousQuantity: nullable(QuantitySchema, 'The quantity before the change; null when the change created the entry.'),
    quantity: QuantitySchema,
    reason: Type.Ref('ChangeReason'),
    note: nullable(Type.String(), 'The note updateInventory was given, exactly; null when it gave none, and for every other reason.'),
    orderId: nullable(Int64Schema('The order.'), 'The order, for reasons `order` and `cancellation`; otherwise null.'),
    batchId: nullable(
      Type.String({ format: 'uuid', description: 'The batch.' }),
      'The batch the change was part of (applyInventoryBatch): every change of one batch carries its id, and their rows are ' +
        'contiguous in `seq`, so a consumer can tell one batch of 400 changes from 400 changes. Null for a change made alone.',
    ),
    keyId: nullable(
      Int64IdSchema('The API key.'),
      'The id of the API key that made the change (as `petstore keys list` shows it); null for the CLI.',
    ),
    requestId: nullable(Type.String(), "The request's id (its X-Request-Id response header); null for the CLI."),
    at: Type.String({ format: 'date-time', description: 'When the change was committed (RFC 3339, UTC, milliseconds).' }),
    reservationId: Type.Optional(
      Int64Schema(
        'The hold the change is of: present only on the rows of reasons `reservation`, `release` and `expiry`, and on the ' +
          '`order` rows of a confirmed hold; absent on every other row.',
      ),
    ),
    locationId: Type.Optional(
      LocationIdSchema(
        'The location whose stock changed, when it is not the default one: then `previousQuantity` and `quantity` are that ' +
          'location’s. Absent at the default location, whose stock is the entry’s quantity while it is the only one holding any.',
      ),
    ),
    transferId: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'The transfer the row is half of (reason `transfer`): its other row, at the other location, has the same id.',
      }),
    ),
  },
  {
    $id: 'InventoryChange',
    additionalProperties: false,
    description: 'One row of the ledger: every change to a quantity has exactly one, written in the same transaction.',
    examples: [...CHANGE_EXAMPLES],
  },
)
