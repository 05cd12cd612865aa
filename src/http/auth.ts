import type { FastifyInstance } from 'fastify'
import type { KeysService } from '../keys/keys.service.js'

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId?: number
  }
}

/**
 * Bearer authentication for every route of the scope it is added to. It runs in onRequest,
 * before the body is read or validated: an unauthenticated bad request is a 401, not a 400 or 404.
 */
export function requireApiKey(scope: FastifyInstance, keys: KeysService) {
  scope.decorateRequest('apiKeyId', undefined)
  scope.addHook('onRequest', async (request) => {
    request.apiKeyId = await keys.authenticate(request.headers.authorization)
  })
}
