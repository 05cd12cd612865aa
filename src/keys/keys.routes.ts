import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import type { ApiKey } from '../storage/ports.js'
import { NotFoundError } from '../errors.js'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { requires } from '../http/scopes.js'
import { KeyIdParamsSchema } from './key.schema.js'
import { type KeysService, MAX_KEY_ID } from './keys.service.js'

export interface KeysRoutesOptions {
  keys: KeysService
}

/** What the API shows of a key: never its secret or hash, nor (keys being listed active) a revocation. */
const keyJson = ({ id, name, scopes, createdAt, lastUsedAt, locations }: ApiKey) =>
  locations === undefined ? { id, name, scopes, createdAt, lastUsedAt } : { id, name, scopes, createdAt, lastUsedAt, locations }

/** A key id from the path: ids are 32-bit, so a larger int64 names no key. */
function keyId(id: bigint): number {
  if (id < 1n || id > BigInt(MAX_KEY_ID)) throw new NotFoundError(`No active key numbered ${id}`)
  return Number(id)
}

/** API keys over HTTP (admin), and the caller's own key (any key). */
const routes: FastifyPluginAsyncTypebox<KeysRoutesOptions> = async (app, { keys }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)

  app.get(
    '/keys',
    {
      schema: {
        operationId: 'listKeys',
        security: requires('admin'),
        summary: 'List the active API keys',
        description: 'Every active key, by id. A revoked key is not listed (`petstore keys list` shows those too).',
        tags: ['keys'],
        response: {
          200: Type.Array(Type.Ref('ApiKey'), { description: 'The active keys, by id.' }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async () => (await keys.listActive()).map(keyJson),
  )

  app.post(
    '/keys',
    {
      schema: {
        operationId: 'createKey',
        security: requires('admin'),
        summary: 'Create an API key',
        description:
          'Creates a key with the scopes given and answers its token, this once: the service keeps only a hash of it. ' +
          'Any instance accepts the key from its next request.',
        tags: ['keys'],
        body: Type.Ref('ApiKeyCreate'),
        response: {
          201: Type.Ref('NewApiKey', {
            description: 'The key, with its token.',
            headers: { Location: Type.String({ description: "The key's URL, path-absolute: `/v1/keys/{id}`." }) },
          }),
          ...errorResponses(400, 401, 403, 413, 415, 500, 503),
          409: Type.Ref('Error', { description: 'An active key has this name already (code `key_name_taken`); nothing was created.' }),
        },
      },
    },
    async (request, reply) => {
      const { name, scopes, locations } = request.body as { name: string; scopes: ApiKey['scopes']; locations?: number[] }
      const { key, token } = await keys.create(name, scopes, locations)
      reply.code(201).header('location', `${API_PREFIX}/keys/${key.id}`)
      return { ...keyJson(key), token }
    },
  )

  app.get(
    '/keys/current',
    {
      schema: {
        operationId: 'getCurrentKey',
        security: requires(),
        summary: 'The key of this request',
        description: 'The key that authenticated this request, with its scopes: any valid key may read itself.',
        tags: ['keys'],
        response: { 200: Type.Ref('ApiKey', { description: 'This request’s key.' }), ...errorResponses(400, 401, 500, 503) },
      },
    },
    async (request) => keyJson(await keys.get(request.apiKeyId)),
  )

  app.get(
    '/keys/:id',
    {
      schema: {
        operationId: 'getKey',
        security: requires('admin'),
        summary: 'Get an active API key',
        description: 'One active key, with its scopes; never its secret. A revoked key, or an id that names no key, is 404.',
        tags: ['keys'],
        params: KeyIdParamsSchema,
        response: {
          200: Type.Ref('ApiKey', { description: 'The key.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request) => keyJson(await keys.get(keyId(request.params.id))),
  )

  app.delete(
    '/keys/:id',
    {
      schema: {
        operationId: 'revokeKey',
        security: requires('admin'),
        summary: 'Revoke an API key',
        description:
          'Revokes the key: every instance refuses it from its next request (401). A key may revoke itself. ' +
          'Its name is free again at once.',
        tags: ['keys'],
        params: KeyIdParamsSchema,
        response: {
          204: Type.Null({ description: 'Revoked.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await keys.revoke(String(keyId(request.params.id)))
      return reply.code(204).send(null)
    },
  )
}

export const keysRoutes = fp(routes, {
  name: 'petstore-keys-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
