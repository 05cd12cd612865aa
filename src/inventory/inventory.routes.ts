import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { buildListBody, type ListBody } from '../cache/list-body.js'
import { Spool } from '../cache/spool.js'
import type { VersionedValue } from '../cache/versioned.js'
import type { Config } from '../config.js'
import { errorResponses } from '../http/error.schema.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { ETAG_HEADER, IfMatchHeaders, IfNoneMatchHeaders, notModifiedResponse, sendRepresentation } from '../http/representation.js'
import { writePrecondition } from './if-match.js'
import { itemJson } from './inventory.json.js'
import { type InventoryUpdate, PetIdParamsSchema } from './inventory.schema.js'
import type { InventoryService } from './inventory.service.js'
import { requires } from '../http/scopes.js'

export interface InventoryRoutesOptions extends Pick<Config, 'requireIfMatch'> {
  inventory: InventoryService
  /** Where the list body is kept, under the inventory counter (see FreshCache). */
  list: VersionedValue<ListBody>
}

/** The inventory area; registered under API_PREFIX. requireIfMatch: a PATCH without If-Match is refused. */
const routes: FastifyPluginAsyncTypebox<InventoryRoutesOptions> = async (app, { inventory, list: listBody, requireIfMatch }) => {
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

  app.get(
    '/inventory',
    {
      schema: {
        operationId: 'listInventory',
        security: requires('inventory:read'),
        summary: 'List stock levels',
        description:
          'Returns current stock levels for all pets in the store, sorted by petId ascending. ' +
          'The response carries an ETag of its exact bytes; send it back in If-None-Match to get 304 while nothing changed.',
        tags: ['inventory'],
        headers: IfNoneMatchHeaders,
        response: {
          200: Type.Array(Type.Ref('InventoryItem'), {
            description: 'Every inventory entry, sorted by petId ascending.',
            headers: ETAG_HEADER,
          }),
          ...notModifiedResponse,
          ...errorResponses(401, 403, 500, 503),
        },
      },
    },
    async (request, reply) => {
      // The version was read by the auth hook at the start of this request, before any list read.
      const version = request.versions.inventory
      const list = await listBody.get(version, async () => {
        const started = performance.now()
        const body = await buildListBody(inventory, { spool: makeSpool })
        // For operators watching what a write costs the readers: one line per rebuild, not per request.
        const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage()
        const mib = (n: number) => Math.round(n / 1048576)
        request.log.debug(
          {
            version,
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
      return sendRepresentation(request, reply, list.bytes, list.tag)
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
    async (request, reply) => sendRepresentation(request, reply, itemJson(await inventory.get(request.params.petId))),
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
        },
      },
    },
    async (request, reply) => {
      const { quantity, reason, note } = request.body as InventoryUpdate
      const precondition = writePrecondition(request.headers['if-match'], requireIfMatch)
      const item = await inventory.setQuantity(request.params.petId, quantity, requestActor(request), precondition, { reason, note })
      return sendRepresentation(request, reply, itemJson(item))
    },
  )
}

export const inventoryRoutes = fp(routes, {
  name: 'petstore-inventory-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES, 'petstore-representation'],
  encapsulate: true,
})
