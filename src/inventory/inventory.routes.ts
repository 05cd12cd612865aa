import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { Type } from 'typebox'
import { buildListBody, type ListBody, releaseListBody } from '../cache/list-body.js'
import { Spool } from '../cache/spool.js'
import type { VersionedValue } from '../cache/versioned.js'
import type { Config } from '../config.js'
import type { PetStatus } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { errorResponses } from '../http/error.schema.js'
import { idempotencyHeaders, REPLAYED_HEADER } from '../http/idempotency.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, page } from '../http/paging.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { ETAG_HEADER, IfMatchHeaders, IfNoneMatchHeaders, notModifiedResponse, sendRepresentation } from '../http/representation.js'
import { DEFAULT_PAGE_SIZE } from '../paging.js'
import { writePrecondition } from './if-match.js'
import { changedEntryJson, itemJson } from './inventory.json.js'
import { PetIdParamsSchema } from '../http/int64.schema.js'
import { type InventoryListQuery, InventoryListQuerySchema, type InventoryUpdate } from './inventory.schema.js'
import type { InventoryService } from './inventory.service.js'
import type { InventoryAdjustment } from './stock-moves.schema.js'
import { inSpan } from '../spans.js'
import { requires } from '../http/scopes.js'

const INVENTORY_PATH = `${API_PREFIX}/inventory`

export interface InventoryRoutesOptions extends Pick<Config, 'requireIfMatch'> {
  inventory: InventoryService
  /** Where the list body is kept, under the inventory counter (see FreshCache). */
  list: VersionedValue<ListBody>
  /** Where the list of each status is kept, under the same counter. */
  listByStatus: Record<PetStatus, VersionedValue<ListBody>>
}

/** The inventory area; registered under API_PREFIX. requireIfMatch: a PATCH without If-Match is refused. */
const routes: FastifyPluginAsyncTypebox<InventoryRoutesOptions> = async (
  app,
  { inventory, list: listBody, listByStatus, requireIfMatch },
) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  // A large list is kept in a spool file; where none can be made (a read-only TMPDIR), in memory.
  let spoolWarned = false
  const makeSpool = () =>
    Spool.create().catch((error: unknown) => {
      if (!spoolWarned) app.log.warn({ err: error }, 'cannot create a spool file in TMPDIR; large lists are kept in memory')
      spoolWarned = true
      return undefined
    })

  /** The whole list, or that of one status, built from one snapshot in bounded pieces and cached under the inventory counter. */
  const wholeList = (request: FastifyRequest, status: PetStatus | undefined): Promise<ListBody> => {
    // The version was read by the auth hook at the start of this request, before any list read.
    const version = request.versions.inventory
    return (status === undefined ? listBody : listByStatus[status]).get(version, async () => {
      const started = performance.now()
      // Traced: the build is a span of the request that missed the cache (those sharing it wait in theirs).
      const body = await inSpan('build inventory list', {}, async (span) => {
        const built = await buildListBody(inventory, { spool: makeSpool, status })
        span?.setAttributes({ 'petstore.list.entries': built.entries, 'petstore.list.bytes': built.length })
        if (status !== undefined) span?.setAttribute('petstore.list.status', status)
        return built
      })
      // For operators watching what a write costs the readers: one line per rebuild, not per request.
      const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage()
      const mib = (n: number) => Math.round(n / 1048576)
      request.log.debug(
        {
          version,
          status,
          entries: body.entries,
          bytes: body.length,
          ms: Math.round(performance.now() - started),
          rssMiB: mib(rss),
          heapMiB: mib(heapUsed),
          heapTotalMiB: mib(heapTotal),
          externalMiB: mib(external),
          arrayBuffersMiB: mib(arrayBuffers),
        },
        'inventory list built',
      )
      return body
    })
  }

  app.get(
    '/inventory',
    {
      schema: {
        operationId: 'listInventory',
        security: requires('inventory:read'),
        summary: 'List stock levels',
        description:
          'Returns current stock levels, sorted by petId ascending (as signed 64-bit integers).\n\n' +
          'Without `limit` and `after`: every entry (with `status`, every entry of that status) in one response, which carries ' +
          'an ETag of its exact bytes; send it back in If-None-Match to get 304 while nothing changed.\n\n' +
          `With \`limit\` or \`after\` (or both): one page of up to \`limit\` entries (default ${DEFAULT_PAGE_SIZE}) with a petId above \`after\`, ` +
          'from one snapshot, and a `Link` header with rel="next" while more remain, with the same `limit` and `status`. ' +
          'Following the Links never shows an entry twice nor skips one that existed (and had the status asked for) for the whole walk, ' +
          'whatever is written meanwhile. A page, like the other paged listings, carries no ETag and is never answered 304: ' +
          'If-None-Match is ignored on it.',
        tags: ['inventory'],
        querystring: InventoryListQuerySchema,
        headers: IfNoneMatchHeaders,
        response: {
          200: Type.Array(Type.Ref('InventoryItem'), {
            description:
              'Every inventory entry (of the status asked for), sorted by petId ascending; or with `limit` or `after`, one page of them.',
            headers: {
              ETag: Type.String({
                description:
                  'Strong entity tag of the exact response bytes: equal on every instance and across restarts, and changed whenever ' +
                  'the representation changes. Sent with the whole list (filtered or not), not with a page.',
              }),
              ...NEXT_LINK_HEADER,
            },
          }),
          ...notModifiedResponse,
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { limit, after, status } = request.query as InventoryListQuery
      // A key held to locations sees each quantity summed over its own (docs/api.md, "Keys held to locations").
      const reach = request.apiKey.locations
      if (limit === undefined && after === undefined) {
        if (reach) {
          const own = await buildListBody(inventory.reachablePieces(reach), { spool: makeSpool, status })
          reply.raw.once('close', () => releaseListBody(own))
          return sendRepresentation(request, reply, own.bytes, own.tag)
        }
        const list = await wholeList(request, status)
        return sendRepresentation(request, reply, list.bytes, list.tag)
      }
      const size = limit ?? DEFAULT_PAGE_SIZE
      // One row beyond the page says whether a next one exists, so the last page never links to an empty one.
      const query = { after, limit: size + 1, status }
      const rows = reach ? await inventory.listReachable(reach, query) : await inventory.list(query)
      const items = page(reply, rows, size, INVENTORY_PATH, (entry) => entry.petId, { status })
      return sendJsonText(reply, `[${items.map(itemJson).join(',')}]`)
    },
  )

  app.get(
    '/inventory/:petId',
    {
      schema: {
        operationId: 'getInventoryItem',
        security: requires('inventory:read'),
        summary: 'Get the stock level of one pet',
        description:
          'Returns one inventory entry. The response carries a strong ETag that changes whenever the entry changes; ' +
          'send it back in If-None-Match to get 304 while it has not, or in If-Match on updateInventory.',
        tags: ['inventory'],
        params: PetIdParamsSchema,
        headers: IfNoneMatchHeaders,
        response: {
          200: Type.Ref('InventoryItem', { description: 'The entry.', headers: ETAG_HEADER }),
          ...notModifiedResponse,
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const reach = request.apiKey.locations
      const { petId } = request.params
      return sendRepresentation(request, reply, itemJson(await (reach ? inventory.getReachable(reach, petId) : inventory.get(petId))))
    },
  )

  app.patch(
    '/inventory/:petId',
    {
      schema: {
        operationId: 'updateInventory',
        security: requires('inventory:write'),
        summary: 'Set the stock quantity of one pet (experimental)',
        description:
          'Sets the stock quantity of one pet: new arrivals, returns, physical counts or manual adjustments. The status is left unchanged. ' +
          'The ledger row of the change (listInventoryChanges) records `reason` (`adjustment` when absent) and `note` (null when absent). ' +
          'With `expectedQuantity`, the quantity is set only if the entry holds that quantity (409 `quantity_mismatch` otherwise); ' +
          'to add or remove units without reading first, use adjustInventory. ' +
          'With several locations, the quantity set is the stock at `locationId` (the default location when absent), and the ' +
          "answer is the pet's entry, its quantity the sum over every location (If-Match and the ETag are the entry's). " +
          'The 200 is sent only after the change is committed durably.\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['inventory'],
        'x-stability': 'experimental',
        params: PetIdParamsSchema,
        headers: IfMatchHeaders,
        body: Type.Ref('InventoryUpdate'),
        response: {
          200: Type.Ref('InventoryItem', {
            description: 'The updated entry, once the change is committed durably.',
            headers: ETAG_HEADER,
          }),
          ...errorResponses(400, 401, 403, 404, 412, 413, 414, 415, 428, 500, 503),
          409: Type.Ref('Error', {
            description:
              '`quantity_mismatch`: the location does not hold `expectedQuantity`; the message names what it holds; ' +
              '`stock_overflow`: the pet’s quantity over every location would pass 2147483647 (nothing changed).',
          }),
        },
      },
    },
    async (request, reply) => {
      const { quantity, expectedQuantity, reason, note, locationId } = request.body as InventoryUpdate
      const precondition = writePrecondition(request.headers['if-match'], requireIfMatch)
      const item = await inventory.setQuantity(request.params.petId, quantity, requestActor(request), precondition, {
        reason,
        note,
        expectedQuantity,
        locationId,
      })
      return sendRepresentation(request, reply, itemJson(item))
    },
  )

  app.post(
    '/inventory/:petId/adjustments',
    {
      schema: {
        operationId: 'adjustInventory',
        security: requires('inventory:write'),
        summary: 'Add or remove units of one pet (experimental)',
        description:
          'Adds `delta` units to the stock of one pet (a negative delta removes them), applied to whatever the entry holds when ' +
          'the change commits: no read first and no If-Match, so concurrent adjustments all count, across all instances. ' +
          'The quantity never goes below 0 (409 `insufficient_stock`) nor past 2147483647 (409 `stock_overflow`); then nothing changes. ' +
          'The ledger row records `reason` (`adjustment` when absent) and `note`. The 200 is sent only after the change is committed durably.\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['inventory'],
        'x-stability': 'experimental',
        params: PetIdParamsSchema,
        headers: idempotencyHeaders('applies nothing'),
        body: Type.Ref('InventoryAdjustment'),
        response: {
          200: Type.Union([Type.Ref('InventoryItem'), Type.Ref('StockLevel')], {
            // Small petIds: the serializer compiles this schema, and cannot write a bigint example.
            examples: [
              { petId: 7, quantity: 24, status: 'available' },
              { petId: 7, locationId: 4, quantity: 9, status: 'available' },
            ],
            description:
              'The entry as the adjustment left it (with `locationId`: that location’s stock, a StockLevel), once committed durably.',
            headers: { ...ETAG_HEADER, ...REPLAYED_HEADER },
          }),
          ...errorResponses(400, 401, 403, 404, 413, 414, 415, 500, 503),
          409: Type.Ref('Error', {
            description:
              '`insufficient_stock`: removing `-delta` units would take the quantity below 0; `stock_overflow`: adding `delta` ' +
              'would take it past 2147483647 (nothing changed, each message names the quantity found); ' +
              '`idempotency_key_reused`: the Idempotency-Key was used with another request.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { delta, reason, note, locationId } = request.body as InventoryAdjustment
      if (delta === 0) throw new InvalidInputError('body.delta must not be 0')
      const { petId } = request.params
      const answer = await inventory.adjust(
        petId,
        delta,
        requestActor(request),
        { reason, note, locationId },
        request.headers['idempotency-key'],
      )
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      if (answer.error) throw answer.error
      return sendRepresentation(request, reply, changedEntryJson(answer.entries[0]!))
    },
  )
}

export const inventoryRoutes = fp(routes, {
  name: 'petstore-inventory-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES, 'petstore-representation'],
  encapsulate: true,
})
