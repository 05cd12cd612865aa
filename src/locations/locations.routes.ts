import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { InvalidInputError } from '../errors.js'
import { locationRefusalError } from '../stock/location-refusal.js'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { idempotencyHeaders, REPLAYED_HEADER } from '../http/idempotency.js'
import { PetIdParamsSchema } from '../http/int64.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, page } from '../http/paging.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { requires } from '../http/scopes.js'
import { type InventoryListQuery, InventoryListQuerySchema } from '../inventory/inventory.schema.js'
import type { InventoryService } from '../inventory/inventory.service.js'
import { DEFAULT_PAGE_SIZE } from '../paging.js'
import { changedEntryJson, levelJson } from '../inventory/inventory.json.js'
import { locationJson } from './location.json.js'
import { LocationIdParamsSchema } from './location.schema.js'
import type { LocationsService } from './locations.service.js'

export interface LocationsRoutesOptions {
  locations: LocationsService
  inventory: InventoryService
}

/** Locations, the stock at each, and transfers between them; registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<LocationsRoutesOptions> = async (app, { locations, inventory }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)

  app.get(
    '/locations',
    {
      schema: {
        operationId: 'listLocations',
        security: requires('inventory:read'),
        summary: 'List the locations',
        description: 'Every location, active or not, by id: the default one (id 1) first. A store has at most 1,000.',
        tags: ['locations'],
        response: {
          200: Type.Array(Type.Ref('Location'), { description: 'The locations, by id.' }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async (_request, reply) => sendJsonText(reply, `[${(await locations.list()).map(locationJson).join(',')}]`),
  )

  app.post(
    '/locations',
    {
      schema: {
        operationId: 'createLocation',
        security: requires('admin'),
        summary: 'Create a location',
        description:
          'A new place that holds stock, active and empty. Stock comes to it by transfers (transferInventory), or by sets and ' +
          'adjustments that name it. Other locations than the default one are for a store whose instances all run this ' +
          'release or a later one (docs/storage.md, "Upgrades").',
        tags: ['locations'],
        body: Type.Ref('LocationCreate'),
        response: {
          201: Type.Ref('Location', {
            description: 'The location.',
            headers: { Location: Type.String({ description: "The location's URL, path-absolute: `/v1/locations/{id}`." }) },
          }),
          ...errorResponses(400, 401, 403, 413, 415, 500, 503),
          409: Type.Ref('Error', {
            description:
              '`location_name_taken`: another location has this name (case aside); `location_limit_reached`: there are 1,000 already.',
          }),
        },
      },
    },
    async (request, reply) => {
      const location = await locations.create((request.body as { name: string }).name)
      reply.code(201).header('location', `${API_PREFIX}/locations/${location.id}`)
      return sendJsonText(reply, locationJson(location))
    },
  )

  app.get(
    '/locations/:locationId',
    {
      schema: {
        operationId: 'getLocation',
        security: requires('inventory:read'),
        summary: 'Get a location',
        description: 'One location: its name, and whether it is active.',
        tags: ['locations'],
        params: LocationIdParamsSchema,
        response: {
          200: Type.Ref('Location', { description: 'The location.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => sendJsonText(reply, locationJson(await locations.get(request.params.locationId))),
  )

  app.patch(
    '/locations/:locationId',
    {
      schema: {
        operationId: 'updateLocation',
        security: requires('admin'),
        summary: 'Rename, deactivate or activate a location',
        description:
          'An inactive location takes no stock (a write naming it is 400 `location_inactive`) and is not listed for a pet; it can ' +
          'be deactivated only while it holds nothing (409 `location_not_empty` otherwise). Units of an order or a hold taken ' +
          'from it before, given back later, go to the default location. The default location is never deactivated (400).',
        tags: ['locations'],
        params: LocationIdParamsSchema,
        body: Type.Ref('LocationUpdate'),
        response: {
          200: Type.Ref('Location', { description: 'The location as it is now.' }),
          ...errorResponses(400, 401, 403, 404, 413, 414, 415, 500, 503),
          409: Type.Ref('Error', {
            description: '`location_not_empty`: it holds stock (the message says how much); `location_name_taken`: the name is another’s.',
          }),
        },
      },
    },
    async (request, reply) =>
      sendJsonText(
        reply,
        locationJson(await locations.update(request.params.locationId, request.body as { name?: string; active?: boolean })),
      ),
  )

  app.get(
    '/locations/:locationId/inventory',
    {
      schema: {
        operationId: 'listLocationInventory',
        security: requires('inventory:read'),
        summary: 'List the stock at one location',
        description:
          `One page of up to \`limit\` pets' stock at the location (default ${DEFAULT_PAGE_SIZE}), by petId above \`after\`, ` +
          'from one snapshot, with a `Link` to the next page while more remain, as listInventory pages. At the default ' +
          'location every pet with an inventory entry is listed; at another, the pets stocked there (0 included).',
        tags: ['locations'],
        params: LocationIdParamsSchema,
        querystring: InventoryListQuerySchema,
        response: {
          200: Type.Array(Type.Ref('StockLevel'), { description: 'A page of the stock there.', headers: NEXT_LINK_HEADER }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { locationId } = request.params
      const reach = request.apiKey.locations
      const { id } = await locations.get(locationId)
      if (reach && !reach.includes(id)) throw locationRefusalError({ refused: 'location_out_of_reach', locationId: id, reach })
      const { limit, after, status } = request.query as InventoryListQuery
      const size = limit ?? DEFAULT_PAGE_SIZE
      const rows = await locations.stock(id, { after, limit: size + 1, status })
      const levels = page(reply, rows, size, `${API_PREFIX}/locations/${locationId}/inventory`, (l) => l.petId, { status })
      return sendJsonText(reply, `[${levels.map(levelJson).join(',')}]`)
    },
  )

  app.get(
    '/inventory/:petId/locations',
    {
      schema: {
        operationId: 'getInventoryLocations',
        security: requires('inventory:read'),
        summary: 'Get the stock of one pet at each location',
        description:
          'The pet’s stock at the default location, then at each active location it was stocked at, by location id: their sum ' +
          'is the pet’s quantity (getInventoryItem).',
        tags: ['locations'],
        params: PetIdParamsSchema,
        response: {
          200: Type.Array(Type.Ref('StockLevel'), { description: 'The pet’s stock, by location id.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const reach = request.apiKey.locations
      const stock = (await locations.petStock(request.params.petId)).filter((l) => !reach || reach.includes(l.locationId))
      return sendJsonText(reply, `[${stock.map(levelJson).join(',')}]`)
    },
  )

  app.post(
    '/inventory/:petId/transfers',
    {
      schema: {
        operationId: 'transferInventory',
        security: requires('inventory:write'),
        summary: 'Move units of one pet between locations (experimental)',
        description:
          'Moves `quantity` units from one location to another in one transaction: the pet’s quantity in all is unchanged, the ' +
          'source never goes below 0 (409 `insufficient_stock`, nothing moves). Its two ledger rows (reason `transfer`, one at ' +
          'each location) share the answer’s `transferId`. A transfer may also be a change of a batch (applyInventoryBatch). ' +
          'The 200 is sent only after it is committed durably.\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['locations'],
        'x-stability': 'experimental',
        params: PetIdParamsSchema,
        headers: idempotencyHeaders('moves nothing'),
        body: Type.Ref('Transfer'),
        response: {
          200: Type.Ref('TransferResult', {
            description: 'Both locations as the transfer left them, once committed durably.',
            headers: REPLAYED_HEADER,
          }),
          ...errorResponses(400, 401, 403, 404, 413, 414, 415, 500, 503),
          400: Type.Ref('Error', {
            description:
              'The body is invalid, or names the same location twice (code `invalid_request`); a location is inactive ' +
              '(code `location_inactive`). Nothing moved.',
          }),
          409: Type.Ref('Error', {
            description:
              '`insufficient_stock`: the source holds fewer units (the message says how many); `idempotency_key_reused`: the ' +
              'Idempotency-Key was used with another request.',
          }),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as { fromLocationId: number; toLocationId: number; quantity: number; note?: string }
      if (body.fromLocationId === body.toLocationId)
        throw new InvalidInputError('body.toLocationId must be another location than fromLocationId')
      const answer = await inventory.transfer(request.params.petId, body, requestActor(request), request.headers['idempotency-key'])
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      if (answer.error) throw answer.error
      return sendJsonText(reply, changedEntryJson(answer.entries[0]!))
    },
  )
}

export const locationsRoutes = fp(routes, {
  name: 'petstore-locations-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
