import { Type } from 'typebox'
import { MAX_QUANTITY, RESERVATION_LIMITS, RESERVATION_STATUSES, type ReservationStatus } from '../domain.js'
import { BIG_PET_ID, Int64Schema, PetIdSchema } from '../http/int64.schema.js'
import { AllocationsSchema, TakeFromLocationSchema } from '../http/location-id.schema.js'

const { lines: MAX_LINES, minSeconds, maxSeconds, defaultSeconds, referenceLength } = RESERVATION_LIMITS

export const ReservationStatusSchema = Type.Unsafe<ReservationStatus>({
  $id: 'ReservationStatus',
  type: 'string',
  enum: [...RESERVATION_STATUSES],
  description:
    'The status of a hold: `active` while it holds its units; then `confirmed` (its lines became orders), `released` ' +
    '(a client gave the units back) or `expired` (they came back by themselves at `expiresAt`). Only active is not final.',
})

const RESERVATION_ID_EXAMPLE = 3107n
const ReservationIdSchema = Int64Schema('Identifier of the hold.', { examples: [RESERVATION_ID_EXAMPLE] })
const LineQuantitySchema = Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, description: `Units of the pet, from 1 to ${MAX_QUANTITY}.` })

const EXPIRES_IN = `Seconds from now until the hold gives its units back by itself: ${minSeconds} to ${maxSeconds} (4 hours).`
export const ExpiresInSecondsSchema = Type.Integer({ minimum: minSeconds, maximum: maxSeconds, description: EXPIRES_IN })

export const ReservationLineSchema = Type.Object(
  {
    petId: PetIdSchema,
    quantity: LineQuantitySchema,
    orderId: Type.Union([Int64Schema('The order.'), Type.Null()], {
      description: 'The order the line became when the hold was confirmed; null before.',
    }),
    allocations: Type.Optional(AllocationsSchema),
  },
  { $id: 'ReservationLine', additionalProperties: false, description: 'Units of one pet held by a hold.' },
)

const AT_EXAMPLE = '2026-11-26T12:00:05.250Z'

export const ReservationSchema = Type.Object(
  {
    id: ReservationIdSchema,
    status: Type.Ref('ReservationStatus'),
    lines: Type.Array(Type.Ref('ReservationLine'), {
      minItems: 1,
      maxItems: MAX_LINES,
      description: 'What the hold holds, in the order asked.',
    }),
    expiresAt: Type.String({
      format: 'date-time',
      description: 'When an active hold gives its units back by itself (RFC 3339, UTC, milliseconds); they are back within 2 s of it.',
    }),
    reference: Type.Union([Type.String({ maxLength: referenceLength }), Type.Null()], {
      description: "The caller's own reference (a cart id, say), as given; null when none was.",
    }),
    createdAt: Type.String({ format: 'date-time', description: 'When the hold was placed (RFC 3339, UTC, milliseconds).' }),
    updatedAt: Type.String({
      format: 'date-time',
      description: 'When the hold last changed: extended, confirmed, released or expired (RFC 3339, UTC, milliseconds).',
    }),
  },
  {
    $id: 'Reservation',
    additionalProperties: false,
    description:
      "A hold of stock for a checkout: its units left each line's entry when it was placed (so the inventory shows what can " +
      'still be sold) and stay out until it is confirmed (they become orders), released, or expires.',
    examples: [
      {
        id: RESERVATION_ID_EXAMPLE,
        status: 'active',
        lines: [{ petId: BIG_PET_ID, quantity: 2, orderId: null }],
        expiresAt: '2026-11-26T12:15:05.250Z',
        reference: 'cart-8f14e45f',
        createdAt: AT_EXAMPLE,
        updatedAt: AT_EXAMPLE,
      },
    ],
  },
)

export const ReservationCreateSchema = Type.Object(
  {
    lines: Type.Array(
      Type.Object(
        {
          petId: PetIdSchema,
          quantity: LineQuantitySchema,
          locationId: Type.Optional(TakeFromLocationSchema('line')),
        },
        { additionalProperties: false, description: 'Units of one pet to hold.' },
      ),
      {
        minItems: 1,
        maxItems: MAX_LINES,
        description: `1 to ${MAX_LINES} lines, each of a different pet (a pet on two lines is 400): all are held or none is.`,
      },
    ),
    expiresInSeconds: Type.Optional(
      Type.Integer({
        minimum: minSeconds,
        maximum: maxSeconds,
        default: defaultSeconds,
        description: `${EXPIRES_IN} Default ${defaultSeconds} (15 minutes).`,
      }),
    ),
    reference: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: referenceLength,
        description: `Your own reference (a cart id, say), 1 to ${referenceLength} characters.`,
      }),
    ),
  },
  {
    $id: 'ReservationCreate',
    additionalProperties: false,
    description: 'What to hold, and for how long. Unknown fields are rejected.',
    examples: [{ lines: [{ petId: BIG_PET_ID, quantity: 2 }], expiresInSeconds: 900, reference: 'cart-8f14e45f' }],
  },
)

export const ReservationExtendSchema = Type.Object(
  { expiresInSeconds: ExpiresInSecondsSchema },
  {
    $id: 'ReservationExtend',
    additionalProperties: false,
    description: 'The new expiry, counted from now.',
    examples: [{ expiresInSeconds: 600 }],
  },
)

export const ReservationIdParamsSchema = Type.Object({
  reservationId: Int64Schema('The hold: a decimal int64 in canonical form.', { examples: [RESERVATION_ID_EXAMPLE] }),
})
