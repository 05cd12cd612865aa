import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { CURSOR_EXPIRED_RESPONSE, errorResponses } from '../http/error.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, PageLimitSchema, nextLink } from '../http/paging.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { changeJson } from './inventory.json.js'
import { BIG_PET_ID, Int64Schema } from './inventory.schema.js'
import type { InventoryService } from './inventory.service.js'
import { requires } from '../http/scopes.js'

const ChangesQuerySchema = Type.Object(
  {
    // Optional with a default: a client may leave them out, and the validator fills them in.
    after: Type.Optional(
      Int64Schema('Return changes with a seq above this one, from 0 (default 0: from the start). Pass the last seq you saw.', {
        minimum: 0,
        default: 0,
        examples: [1043n],
      }),
    ),
    limit: Type.Optional(PageLimitSchema),
    petId: Type.Optional(Int64Schema("Only this pet's changes.", { examples: [BIG_PET_ID] })),
  },
  { additionalProperties: false },
)

export interface ChangesRoutesOptions {
  inventory: InventoryService
}

/** The ledger, read as a feed; registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<ChangesRoutesOptions> = async (app, { inventory }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  app.get(
    '/inventory/changes',
    {
      schema: {
        operationId: 'listInventoryChanges',
        security: requires('inventory:read'),
        summary: 'Read the ledger of stock changes',
        description:
          'Every change to a quantity (updateInventory, an import, an order placed or cancelled) has one row, written in the ' +
          'same transaction as the change, in seq order. Poll with `after` set to the last seq you saw: seqs become visible ' +
          'in increasing order, across all instances, so a reader never misses or repeats a change. ' +
          'A `Link` header with rel="next" is sent while more rows remain: every page but the last holds `limit` rows, ' +
          "with `petId` too (one pet's rows are read by an index, in time independent of the ledger's size).",
        tags: ['inventory'],
        querystring: ChangesQuerySchema,
        response: {
          200: Type.Array(Type.Ref('InventoryChange'), { description: 'Up to `limit` rows, by seq.', headers: NEXT_LINK_HEADER }),
          ...errorResponses(400, 401, 403, 500, 503),
          ...CURSOR_EXPIRED_RESPONSE,
        },
      },
    },
    async (request, reply) => {
      const { after, limit, petId } = request.query as { after: bigint; limit: number; petId?: bigint }
      const { rows, nextAfter } = await inventory.changesPage(after, limit, petId)
      if (nextAfter !== undefined) reply.header('link', nextLink(`${API_PREFIX}/inventory/changes`, nextAfter, limit, { petId }))
      return sendJsonText(reply, `[${rows.map(changeJson).join(',')}]`)
    },
  )
}

export const changesRoutes = fp(routes, {
  name: 'petstore-changes-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
