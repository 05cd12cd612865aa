import type { FastifyInstance } from 'fastify'
import type { KeysService } from '../keys/keys.service.js'
import type { FreshCache } from '../cache/fresh-cache.js'
import type { Versions } from '../storage/storage.js'

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId: number
    /** The storage's change counters, read once at the start of an authenticated request. */
    versions: Versions
  }
}

/**
 * Bearer authentication for every route of the scope it is added to. It runs in onRequest,
 * before the body is read or validated: an unauthenticated bad request is a 401, not a 400 or 404.
 * It reads the change counters first (one database round trip), which both the key check and the
 * handlers' caches use.
 */
export function requireApiKey(scope: FastifyInstance, keys: KeysService, cache: FreshCache) {
  scope.decorateRequest('apiKeyId', 0)
  scope.decorateRequest('versions', null as unknown as Versions)
  scope.addHook('onRequest', async (request) => {
    request.versions = await cache.versions()
    request.apiKeyId = await keys.authenticate(request.headers.authorization, request.versions.keys)
  })
}
