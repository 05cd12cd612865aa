import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { errorResponses } from '../http/error.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { itemJson, itemsJson } from './inventory.json.js'
import { PetIdParamsSchema } from './inventory.schema.js'
import type { InventoryService } from './inventory.service.js'
import { VersionedValue } from '../cache/versioned-value.js'

export interface InventoryRoutesOptions {
  inventory: InventoryService
}

/** The inventory area. Auth is added by the enclosing scope. */
export const inventoryRoutes: FastifyPluginAsyncTypebox<InventoryRoutesOptions> = async (app, { inventory }) => {
  // The list body is cached as bytes (a large list is not re-encoded per request), filed under the
  // inventory version that every writer moves, and checked against it on every request: the cache can
  // never serve a list older than the database.
  const listBody = new VersionedValue<Buffer>()

  app.get(
    '/inventory',
    {
      schema: {
        operationId: 'listInventory',
        summary: 'List stock levels',
        description: 'Returns current stock levels for all pets in the store, sorted by petId ascending.',
        tags: ['inventory'],
        response: {
          200: Type.Array(Type.Ref('InventoryItem'), { description: 'Every inventory entry, sorted by petId ascending.' }),
          ...errorResponses(401, 500, 503),
        },
      },
    },
    async (request, reply) => {
      // The version was read by the auth hook at the start of this request, before any list read.
      const version = request.versions.inventory
      const body = await listBody.get(version, async () => {
        const started = performance.now()
        const items = await inventory.list()
        const bytes = Buffer.from(itemsJson(items))
        // For operators watching what a write costs the readers: one line per rebuild, not per request.
        request.log.debug({ version, entries: items.length, ms: Math.round(performance.now() - started) }, 'inventory list built')
        return bytes
      })
      return sendJsonText(reply, body)
    },
  )

  app.patch(
    '/inventory/:petId',
    {
      schema: {
        operationId: 'updateInventory',
        summary: 'Set the stock quantity of one pet (experimental)',
        description:
          'Sets the stock quantity of one pet: new arrivals, returns or manual adjustments. The status is left unchanged. ' +
          'The 200 is sent only after the change is committed durably.\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['inventory'],
        'x-stability': 'experimental',
        params: PetIdParamsSchema,
        body: Type.Ref('InventoryUpdate'),
        response: {
          200: Type.Ref('InventoryItem', { description: 'The updated entry, once the change is committed durably.' }),
          ...errorResponses(400, 401, 404, 413, 414, 415, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { quantity } = request.body as { quantity: number }
      const item = await inventory.setQuantity(request.params.petId, quantity)
      return sendJsonText(reply, itemJson(item))
    },
  )
}
