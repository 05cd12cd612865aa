import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { ORDER_STATUSES, type OrderStatus } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { idempotencyHeaders, REPLAYED_HEADER } from '../http/idempotency.js'
import { exactInt64, registerExactJsonParser } from '../http/exact-json.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, PageLimitSchema, page } from '../http/paging.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { orderJson } from './order.json.js'
import { Int64Schema } from '../http/int64.schema.js'
import { OrderIdParamsSchema } from './order.schema.js'
import type { OrdersService } from './orders.service.js'
import { requires } from '../http/scopes.js'

const ORDERS_PATH = `${API_PREFIX}/store/orders`

const conflict = (description: string) => ({ 409: Type.Ref('Error', { description }) })

const PlaceHeadersSchema = idempotencyHeaders('places nothing')

const ListQuerySchema = Type.Object(
  {
    status: Type.Optional(
      Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES], description: 'Only orders with this status.' }),
    ),
    // Optional with a default: a client may leave them out, and the validator fills them in.
    limit: Type.Optional(PageLimitSchema),
    // Order ids start at 1: a negative cursor is a client's mistake, refused like the feed's.
    after: Type.Optional(
      Int64Schema(
        'Return orders with an id above this one, from 0 (default 0: from the first). The next page continues after the last id of this one.',
        { minimum: 0, default: 0, examples: [48213n] },
      ),
    ),
  },
  { additionalProperties: false },
)

export interface OrdersRoutesOptions {
  orders: OrdersService
}

/** The store's orders; registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<OrdersRoutesOptions> = async (app, { orders }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  // Only these routes take an int64 in a body; the others keep Fastify's faster parser.
  registerExactJsonParser(app)
  app.post(
    '/store/orders',
    {
      schema: {
        operationId: 'placeOrder',
        security: requires('orders:write'),
        summary: 'Place an order, reserving stock (experimental)',
        description:
          "Places an order for `quantity` units of a pet and takes them from the pet's stock in the same transaction: " +
          'the stock never goes below zero, whatever the concurrency, across all instances. The 201 is sent only after the ' +
          'order is committed durably; the change appears in the ledger (reason `order`).\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['store'],
        'x-stability': 'experimental',
        headers: PlaceHeadersSchema,
        body: Type.Ref('OrderCreate'),
        response: {
          201: Type.Ref('Order', {
            description: 'The order, placed and committed.',
            headers: {
              Location: Type.String({ description: "The order's URL, path-absolute: `/v1/store/orders/{orderId}`." }),
              ...REPLAYED_HEADER,
            },
          }),
          ...errorResponses(400, 401, 403, 404, 413, 415, 500, 503),
          ...conflict(
            '`insufficient_stock`: the entry holds fewer units than asked (nothing changed); `idempotency_key_reused`: the Idempotency-Key was used with another body.',
          ),
        },
      },
    },
    async (request, reply) => {
      const { quantity, locationId } = request.body as { quantity: number; locationId?: number }
      const petId = exactInt64(request.body as object, 'petId')
      if (petId === undefined) throw new InvalidInputError('body.petId must be a decimal int64 integer (no fraction or exponent)')
      const answer = await orders.place(petId, quantity, requestActor(request), request.headers['idempotency-key'], locationId)
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      if (answer.error) throw answer.error
      return sendJsonText(reply.code(201).header('location', `${ORDERS_PATH}/${answer.order.id}`), orderJson(answer.order))
    },
  )

  app.get(
    '/store/orders',
    {
      schema: {
        operationId: 'listOrders',
        security: requires('orders:read'),
        summary: 'List orders',
        description: 'The store\'s orders, by id ascending, a page at a time; a `Link` header with rel="next" is sent while more remain.',
        tags: ['store'],
        querystring: ListQuerySchema,
        response: {
          200: Type.Array(Type.Ref('Order'), { description: 'Up to `limit` orders, by id.', headers: NEXT_LINK_HEADER }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { status, limit, after } = request.query as { status?: OrderStatus; limit: number; after: bigint }
      const rows = await orders.list({ after, limit: limit + 1, status })
      const items = page(reply, rows, limit, ORDERS_PATH, (o) => o.id, { status })
      return sendJsonText(reply, `[${items.map(orderJson).join(',')}]`)
    },
  )

  app.get(
    '/store/orders/:orderId',
    {
      schema: {
        operationId: 'getOrder',
        security: requires('orders:read'),
        summary: 'Get one order',
        description:
          'One order, with its current status; every key that may read orders sees every order. An id that names no order is 404.',
        tags: ['store'],
        params: OrderIdParamsSchema,
        response: { 200: Type.Ref('Order', { description: 'The order.' }), ...errorResponses(400, 401, 403, 404, 414, 500, 503) },
      },
    },
    async (request, reply) => sendJsonText(reply, orderJson(await orders.get(request.params.orderId))),
  )

  app.patch(
    '/store/orders/:orderId',
    {
      schema: {
        operationId: 'updateOrder',
        security: requires('orders:write'),
        summary: "Change an order's status",
        description:
          'Moves the order along its transitions: placed → approved → delivered, and cancelled from placed or approved. ' +
          'Cancelling returns the quantity to stock in the same transaction (ledger reason `cancellation`). ' +
          'The 200 is sent only after the change is committed durably.',
        tags: ['store'],
        params: OrderIdParamsSchema,
        body: Type.Ref('OrderUpdate'),
        response: {
          200: Type.Ref('Order', { description: 'The order with its new status.' }),
          ...errorResponses(400, 401, 403, 404, 413, 414, 415, 500, 503),
          ...conflict(
            '`invalid_transition`: the order cannot move from its status to the one asked (the same status included). Nothing changed.',
          ),
        },
      },
    },
    async (request, reply) => {
      const { status } = request.body as { status: OrderStatus }
      const order = await orders.transition(request.params.orderId, status, requestActor(request))
      return sendJsonText(reply, orderJson(order))
    },
  )
}

export const ordersRoutes = fp(routes, {
  name: 'petstore-orders-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
