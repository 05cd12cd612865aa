import { Type } from 'typebox'
import { MAX_QUANTITY, ORDER_STATUSES, ORDER_TRANSITIONS, type OrderStatus } from '../domain.js'
import { BIG_PET_ID, Int64Schema, PetIdSchema } from '../http/int64.schema.js'
import { AllocationsSchema, TakeFromLocationSchema } from '../http/location-id.schema.js'

const transitions = ORDER_STATUSES.filter((s) => ORDER_TRANSITIONS[s].length > 0)
  .map((s) => `${s} → ${ORDER_TRANSITIONS[s].join(' or ')}`)
  .join('; ')

export const OrderStatusSchema = Type.Unsafe<OrderStatus>({
  $id: 'OrderStatus',
  type: 'string',
  enum: [...ORDER_STATUSES],
  description: `The status of an order. Transitions: ${transitions}; delivered and cancelled are final.`,
})

const ORDER_ID_EXAMPLE = 48213n
const OrderIdSchema = Int64Schema('Identifier of the order.', { examples: [ORDER_ID_EXAMPLE] })
const OrderQuantitySchema = Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, description: `Units of the pet, from 1 to ${MAX_QUANTITY}.` })

export const OrderSchema = Type.Object(
  {
    id: OrderIdSchema,
    petId: PetIdSchema,
    quantity: OrderQuantitySchema,
    status: Type.Ref('OrderStatus'),
    placedAt: Type.String({ format: 'date-time', description: 'When the order was placed (RFC 3339, UTC).' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When the order last changed status (RFC 3339, UTC).' }),
    allocations: Type.Optional(AllocationsSchema),
  },
  {
    $id: 'Order',
    additionalProperties: false,
    description: 'An order for a quantity of one pet. While placed or approved it holds that quantity out of stock; cancelling returns it.',
    examples: [
      {
        id: ORDER_ID_EXAMPLE,
        petId: BIG_PET_ID,
        quantity: 2,
        status: 'placed',
        placedAt: '2026-11-26T12:00:05.250Z',
        updatedAt: '2026-11-26T12:00:05.250Z',
      },
    ],
  },
)

export const OrderCreateSchema = Type.Object(
  {
    petId: PetIdSchema,
    quantity: OrderQuantitySchema,
    locationId: Type.Optional(TakeFromLocationSchema('order')),
  },
  {
    $id: 'OrderCreate',
    additionalProperties: false,
    description: 'The pet and how many units to reserve. Unknown fields are rejected.',
    examples: [{ petId: BIG_PET_ID, quantity: 2 }],
  },
)

export const OrderUpdateSchema = Type.Object(
  { status: Type.Ref('OrderStatus') },
  { $id: 'OrderUpdate', additionalProperties: false, description: 'The status to move the order to.', examples: [{ status: 'approved' }] },
)

export const OrderIdParamsSchema = Type.Object({
  orderId: Int64Schema('The order: a decimal int64 in canonical form.', { examples: [ORDER_ID_EXAMPLE] }),
})
