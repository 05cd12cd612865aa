import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { assertReachesEverywhere } from '../http/plugins/auth.js'
import { Type } from 'typebox'
import { InvalidInputError } from '../errors.js'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { CURSOR_EXPIRED_RESPONSE, errorResponses } from '../http/error.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, PageLimitSchema, nextLink } from '../http/paging.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { INT64_MAX } from '../int64.js'
import { changeJson } from './inventory.json.js'
import { BIG_PET_ID, Int64Schema } from '../http/int64.schema.js'
import type { ChangeFilter, InventoryService } from './inventory.service.js'
import { CHANGE_REASONS, type ChangeReason } from '../domain.js'
import { requires } from '../http/scopes.js'

const ChangesQuerySchema = Type.Object(
  {
    // No default: `after` left out is 0 only without `before`, and a tool that sends defaults must
    // not turn every newest-first request into one with both (refused).
    after: Type.Optional(
      Int64Schema(
        'Return changes with a seq above this one, oldest first, from 0 (left out, and without `before`: from the start). ' +
          'Pass the last seq you saw. Not with `before`.',
        { minimum: 0, examples: [1043n] },
      ),
    ),
    before: Type.Optional(
      Int64Schema(
        'Return changes with a seq below this one, newest first, from 1. To start from the newest change, pass ' +
          `${INT64_MAX} (the int64 maximum); then the seq of the oldest row you have, as the Link does. Not with \`after\`.`,
        // Not INT64_MAX: tools that read the document as doubles would show (and send) 2^63, over int64.
        { minimum: 1, examples: [1043n] },
      ),
    ),
    limit: Type.Optional(PageLimitSchema),
    petId: Type.Optional(Int64Schema("Only this pet's changes.", { examples: [BIG_PET_ID] })),
    reason: Type.Optional(
      Type.Unsafe<ChangeReason>({ type: 'string', enum: [...CHANGE_REASONS], description: 'Only changes with this reason.' }),
    ),
  },
  { additionalProperties: false },
)

interface ChangesQuery extends ChangeFilter {
  after?: bigint
  before?: bigint
  limit: number
}

const PATH = `${API_PREFIX}/inventory/changes`

/**
 * The page a query asks for and the Link to the next one, if any: oldest first after `after`, or
 * newest first below `before`. One direction per walk, so both at once are refused.
 */
async function readPage(inventory: InventoryService, { after, before, limit, petId, reason }: ChangesQuery) {
  const filter = { petId, reason }
  if (before === undefined) {
    const { rows, nextAfter } = await inventory.changesPage(after ?? 0n, limit, filter)
    return { rows, link: nextAfter === undefined ? undefined : nextLink(PATH, nextAfter, limit, filter) }
  }
  if (after !== undefined) {
    throw new InvalidInputError(
      'query parameters after and before cannot be used together: after reads oldest first from a seq, before newest first below one',
    )
  }
  const { rows, nextBefore } = await inventory.changesPageBefore(before, limit, filter)
  return { rows, link: nextBefore === undefined ? undefined : nextLink(PATH, nextBefore, limit, filter, 'before') }
}

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
          `With \`before\` instead, the rows below it come newest first (${INT64_MAX}: from the newest), for the latest ` +
          'changes of the store or of one pet without reading the ledger from its start; rows written meanwhile are above the ' +
          'cursor, so they never shift a page. `after` and `before` together are 400. ' +
          'A `Link` header with rel="next" is sent while more rows remain (with `before`, older ones): every page but the last ' +
          "holds `limit` rows, with `petId` or `reason` too (one pet's, or one reason's, rows are read by an index, in time " +
          "independent of the ledger's size; with both, by the pet's). " +
          'Retention (LEDGER_RETENTION) answers 410 to an `after` before removed rows; a newest-first walk just ends at the ' +
          'oldest row kept.',
        tags: ['inventory'],
        querystring: ChangesQuerySchema,
        response: {
          200: Type.Array(Type.Ref('InventoryChange'), {
            description: 'Up to `limit` rows: by seq (oldest first), or with `before` by descending seq (newest first).',
            headers: NEXT_LINK_HEADER,
          }),
          ...errorResponses(400, 401, 403, 500, 503),
          ...CURSOR_EXPIRED_RESPONSE,
        },
      },
    },
    async (request, reply) => {
      assertReachesEverywhere(request, "the ledger shows every location's changes")
      const { rows, link } = await readPage(inventory, request.query as ChangesQuery)
      if (link !== undefined) reply.header('link', link)
      return sendJsonText(reply, `[${rows.map(changeJson).join(',')}]`)
    },
  )
}

export const changesRoutes = fp(routes, {
  name: 'petstore-changes-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
