import { Type } from 'typebox'
import { MAX_QUANTITY, ORDER_STATUSES, ORDER_TRANSITIONS, type OrderStatus } from '../domain.js'
import { PetIdSchema } from '../inventory/inventory.schema.js'

const transitions = ORDER_STATUSES.filter((s) => ORDER_TRANSITIONS[s].length > 0)
  .map((s) => `${s} → ${ORDER_TRANSITIONS[s].join(' or ')}`)
  .join('; ')

export const OrderStatusSchema = Type.Unsafe<OrderStatus>({
  $id: 'OrderStatus',
  type: 'string',
  enum: [...ORDER_STATUSES],
  description: `The status of an order. Transitions: ${transitions}; delivered and cancelled are final.`,
})

const OrderIdSchema = Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description: 'Identifier of the order.' })
const OrderQuantitySchema = Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, description: `Units of the pet, from 1 to ${MAX_QUANTITY}.` })

export const OrderSchema = Type.Object(
  {
    id: OrderIdSchema,
    petId: PetIdSchema,
    quantity: OrderQuantitySchema,
    status: Type.Ref('OrderStatus'),
    placedAt: Type.String({ format: 'date-time', description: 'When the order was placed (RFC 3339, UTC).' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When the order last changed status (RFC 3339, UTC).' }),
  },
  {
    $id: 'Order',
    additionalProperties: false,
    description: 'An order for a quantity of one pet. While placed or approved it holds that quantity out of stock; cancelling returns it.',
  },
)

export const OrderCreateSchema = Type.Object(
  { petId: PetIdSchema, quantity: OrderQuantitySchema },
  { $id: 'OrderCreate', additionalProperties: false, description: 'The pet and how many units to reserve. Unknown fields are rejected.' },
)

export const OrderUpdateSchema = Type.Object(
  { status: Type.Ref('OrderStatus') },
  { $id: 'OrderUpdate', additionalProperties: false, description: 'The status to move the order to.' },
)

export const OrderIdParamsSchema = Type.Object({
  orderId: Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description: 'The order: a decimal int64 in canonical form.' }),
})

/** Idempotency-Key: printable ASCII, as a client generates it (a UUID, typically). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/
