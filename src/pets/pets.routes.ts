import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import type { Config } from '../config.js'
import { errorResponses } from '../http/error.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { PetIdParamsSchema } from '../http/int64.schema.js'
import type { Storage } from '../storage/ports.js'
import { DeprecatedCallCounter } from './deprecated-calls.js'
import { withDeprecationHeaders, type Deprecation } from '../http/deprecation.js'
import { deprecatedCallsJson, petJson } from './pet.json.js'
import type { PetsService } from './pets.service.js'
import { requires } from '../http/scopes.js'

/** The deprecated lookup's route, within the /v1 prefix. */
export const PET_LOOKUP_URL = '/pets/:petId'

export interface PetsRoutesOptions extends Pick<Config, 'deprecatedCallsFlushMs'> {
  pets: PetsService
  /** Where the counts of deprecated calls are added, every deprecatedCallsFlushMs and at close. */
  storage: Pick<Storage, 'addDeprecatedCalls'>
  /** The lookup's deprecation, for its documentation (its hooks are the deprecation plugin's). */
  deprecation: Deprecation
}

/** The pets area, registered under API_PREFIX: the deprecated lookup by id, and the report of its calls (admin). */
const routes: FastifyPluginAsyncTypebox<PetsRoutesOptions> = async (app, { pets, storage, deprecatedCallsFlushMs, deprecation }) => {
  const deprecatedCalls = new DeprecatedCallCounter(storage, {
    flushMs: deprecatedCallsFlushMs,
    onFlushError: (error, keys) =>
      app.log.error({ err: error, keys }, 'cannot write the counts of deprecated calls; they are kept for the next try'),
  })
  // Storage must still be open: server.ts closes it only after the app.
  app.addHook('onClose', () => deprecatedCalls.close())
  documentRateLimits(app)
  const sunset = deprecation.sunsetAt.toISOString()
  app.get(
    PET_LOOKUP_URL,
    {
      // Authentication on the route itself rather than on the scope: the deprecation plugin puts the
      // sunset's 410 before it, and a scope's hooks would run first. Every call of a key holding
      // pets:read counts, whatever its answer: the count says who still calls it. A key without the
      // scope is refused (403) before it is counted: a refused request changes nothing.
      onRequest: [app.authenticate, async (request) => deprecatedCalls.record(request.apiKeyId)],
      schema: {
        operationId: 'getPetById',
        security: requires('pets:read'),
        summary: 'Find a pet by id (deprecated)',
        description:
          "Returns one pet, with its inventory entry's status (the inventory holds the one status of a pet; " +
          'a pet without an entry has no status).\n\n' +
          `**Deprecated** since ${deprecation.deprecatedAt.toISOString()}, removed at its sunset, ${sunset}: ` +
          'from then on every call answers 410 `gone`, before authentication. ' +
          'Every response of this operation, errors included, carries `Deprecation` (RFC 9745: `@` and the Unix seconds of the deprecation), ' +
          '`Sunset` (RFC 8594: the HTTP date of the removal) and `Link` to this description, as rel="deprecation" and rel="sunset". ' +
          'Calls are counted per API key, for the operators (`petstore deprecations`).',
        tags: ['pets'],
        deprecated: true,
        params: PetIdParamsSchema,
        response: withDeprecationHeaders({
          200: Type.Ref('Pet', { description: 'The pet.' }),
          // 429 and 405 are declared here, not only by documentRateLimits and for every operation (openapi-document.ts),
          // so that they list the deprecation headers too: the 405s of this path carry them (plugins/deprecation.ts).
          ...errorResponses(400, 401, 403, 404, 405, 410, 414, 429, 500, 503),
        }),
      },
    },
    async (request, reply) => sendJsonText(reply, petJson(await pets.get(request.params.petId))),
  )

  app.get(
    '/deprecations',
    {
      // Not the lookup: no deprecation headers, and its calls are not counted.
      onRequest: app.authenticate,
      schema: {
        operationId: 'listDeprecatedCalls',
        security: requires('admin'),
        summary: 'Calls of the deprecated pet lookup, per key',
        description:
          'What `petstore deprecations --json` prints: for each key that called GET /v1/pets/{petId}, how many calls and ' +
          'when the first and last were, as flushed so far (each instance flushes its counts every DEPRECATED_CALLS_FLUSH_MS).',
        tags: ['pets'],
        response: {
          200: Type.Array(Type.Ref('DeprecatedCalls'), { description: 'One row per key that called it, by key id.' }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async () => (await pets.deprecatedCalls()).map(deprecatedCallsJson),
  )
}

export const petsRoutes = fp(routes, {
  name: 'petstore-pets-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES, 'petstore-deprecation'],
  encapsulate: true,
})
