import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { InvalidInputError } from '../errors.js'
import { API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { exactInt64, registerExactJsonParser } from '../http/exact-json.js'
import { idempotencyHeaders, REPLAYED_HEADER } from '../http/idempotency.js'
import { sendJsonText } from '../http/json-reply.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { requires } from '../http/scopes.js'
import type { ChangedEntry } from '../stock/writes.js'
import { changedEntryJson } from './inventory.json.js'
import type { InventoryService } from './inventory.service.js'
import { stockChange } from './stock-moves.schema.js'

/**
 * A batch's body may be larger than any other request's (BODY_LIMIT, 64 KiB): 1,000 changes, each with
 * a note of 500 characters of up to 3 bytes in UTF-8, fit in 2 MiB.
 */
export const BATCH_BODY_LIMIT = 2 * 1024 * 1024

export interface InventoryBatchRoutesOptions {
  inventory: InventoryService
}

const batchJson = (batchId: string, entries: ChangedEntry[]) =>
  `{"batchId":"${batchId}","entries":[${entries.map(changedEntryJson).join(',')}]}`

/** Changes to many entries at once; registered under API_PREFIX, in a scope of its own for its exact-int64 parser. */
const routes: FastifyPluginAsyncTypebox<InventoryBatchRoutesOptions> = async (app, { inventory }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  // Each change names its pet by an int64, read exactly.
  registerExactJsonParser(app)
  app.post(
    '/inventory/batch',
    {
      bodyLimit: BATCH_BODY_LIMIT,
      schema: {
        operationId: 'applyInventoryBatch',
        security: requires('inventory:write'),
        summary: 'Apply many changes at once, all or nothing (experimental)',
        description:
          'Applies 1 to 1,000 changes in order, in one transaction: each a set (`quantity`, optionally with `expectedQuantity`) ' +
          'or a delta, with its own `reason` and `note`, at `locationId` (the default location when absent), or a transfer ' +
          'between two locations; the same pet may appear more than once. Either every change is applied ' +
          'or none is: a change that cannot apply is answered 409 (or 404 for an unknown pet) with a message that starts with its ' +
          'place, `changes[17]: `, and says why. The ledger rows of a batch are contiguous in `seq` and carry its `batchId`, as ' +
          'the changes feed, the stream, webhooks and brokers show them. The body may be up to 2 MiB. The 200 is sent only ' +
          'after the batch is committed durably.\n\n' +
          '**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['inventory'],
        'x-stability': 'experimental',
        headers: idempotencyHeaders('applies nothing'),
        body: Type.Ref('InventoryBatch'),
        response: {
          200: Type.Ref('InventoryBatchResult', {
            description: 'Every entry the changes left, in their order, once the batch is committed durably.',
            headers: REPLAYED_HEADER,
          }),
          ...errorResponses(400, 401, 403, 404, 413, 415, 500, 503),
          400: Type.Ref('Error', {
            description:
              'The body is invalid (code `invalid_request`), or a change names an inactive location (`location_inactive`, its ' +
              'message starting with the change’s place); nothing was written.',
          }),
          409: Type.Ref('Error', {
            description:
              'A change could not apply, and nothing of the batch was written; the message names it (`changes[17]: `): ' +
              '`insufficient_stock` (a delta or a transfer would take the quantity there below 0), `stock_overflow` (the pet’s ' +
              'quantity past 2147483647), ' +
              '`quantity_mismatch` (the entry does not hold `expectedQuantity`; the message names what it holds). ' +
              '`idempotency_key_reused`: the Idempotency-Key was used with another request.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { changes } = request.body as { changes: object[] }
      const parsed = changes.map((change, i) => {
        const petId = exactInt64(change, 'petId')
        if (petId === undefined)
          throw new InvalidInputError(`body.changes[${i}].petId must be a decimal int64 integer (no fraction or exponent)`)
        return stockChange(petId, change, `body.changes[${i}]`)
      })
      const answer = await inventory.batch(parsed, requestActor(request), request.headers['idempotency-key'])
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      if (answer.error) throw answer.error
      return sendJsonText(reply, batchJson(answer.batchId!, answer.entries))
    },
  )
}

export const inventoryBatchRoutes = fp(routes, {
  name: 'petstore-inventory-batch-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
