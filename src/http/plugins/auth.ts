import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { FreshCache } from '../../cache/fresh-cache.js'
import type { Actor, AuthenticatedKey, Scope } from '../../domain.js'
import { DomainError, InsufficientScopeError, UnauthorizedError } from '../../errors.js'
import type { Versions } from '../../storage/ports.js'
import { activeTraceparent } from '../../spans.js'
import { addressPartition } from '../rate-limit.js'
import { routeOf } from '../route-of.js'
import { scopeNeeded } from '../scopes.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * API-key authentication, as an onRequest hook for the authenticated routes: added to a route
     * group's whole scope, or to a route whose own hooks must run before it.
     */
    authenticate: onRequestHookHandler
  }
  interface FastifyRequest {
    apiKeyId: number
    /** The request's key: its id and scopes. */
    apiKey: AuthenticatedKey
    /** The storage's change counters, read once at the start of an authenticated request. */
    versions: Versions
  }
}

/**
 * What authentication asks of the API keys. Declared here and met by the keys area's KeysService
 * (app.ts hands it over), because the areas sit above the HTTP layer: an import of theirs from here
 * would run back up.
 */
export interface KeyVerifier {
  /** The key of a valid `Authorization` value, checked at this keys version; else UnauthorizedError. */
  authenticate(authorization: string | undefined, keysVersion: string): Promise<AuthenticatedKey>
  /** Whether this process has verified the value's token before (a hint for the rate limits, not a check). */
  wasVerified(authorization: string | undefined): boolean
}

export interface AuthOptions {
  keys: KeyVerifier
  /** Where the change counters are read, once per request (the keys' own counter among them). */
  cache: FreshCache
}

/**
 * Bearer authentication (app.authenticate), with the request fields it fills in. It runs before the
 * body is read or validated: an unauthenticated bad request is a 401, not a 400 or 404.
 * It reads the change counters first (one database round trip), which both the key check and the
 * handlers' caches use. With rate limits, a request whose token this process has not verified
 * before is counted per client address before anything reaches the database, so a flood of guessed
 * keys is throttled without a lookup; a verified key is then counted per key. A remembered key that
 * fails (revoked since) is counted per address after all: every bad key costs its sender a count.
 * The limits are the rate-limits plugin's (hence the dependency). Last, the key must hold the scope
 * the operation's schema names (http/scopes.ts): a valid key without it is a 403, still before the body.
 */
export const auth = fp<AuthOptions>(
  async (app, { keys, cache }) => {
    app.decorateRequest('apiKeyId', 0)
    app.decorateRequest('apiKey', null as unknown as AuthenticatedKey)
    app.decorateRequest('versions', null as unknown as Versions)
    const limits = app.rateLimits
    const perAddress = limits?.enabled('per-address') ? limits : undefined
    const perKey = limits?.enabled('per-key') ? limits : undefined
    const authenticate: onRequestHookHandler = async (request, reply) => {
      // What an authenticated request is answered is for its key alone, and current: no shared cache
      // keeps it (a GET's representation relaxes this to `private, no-cache`, see representation.ts).
      reply.header('cache-control', 'no-store')
      const authorization = request.headers.authorization
      const counted = perAddress !== undefined && !keys.wasVerified(authorization)
      if (counted) await perAddress.count(reply, 'per-address', addressPartition(request.ip))
      request.versions = await cache.versions()
      try {
        request.apiKey = await keys.authenticate(authorization, request.versions.keys)
      } catch (error) {
        if (perAddress && !counted && error instanceof UnauthorizedError)
          await perAddress.count(reply, 'per-address', addressPartition(request.ip))
        throw error
      }
      request.apiKeyId = request.apiKey.id
      if (perKey) await perKey.count(reply, 'per-key', String(request.apiKeyId))
      const scope = scopeNeeded(request)
      // Fail closed: an authenticated route that names no security is a bug, not an open door.
      if (scope === undefined) throw new Error(`${routeOf(request).url} is authenticated but declares no security`)
      if (scope !== null && !request.apiKey.scopes.includes(scope as Scope)) throw new InsufficientScopeError(scope)
    }
    app.decorate('authenticate', authenticate)
  },
  { name: 'petstore-auth', dependencies: ['petstore-errors', 'petstore-rate-limits'] },
)

/**
 * Refuses a key held to locations (403 insufficient_scope) an operation whose answer shows every
 * location's stock (the ledger, its stream): such a key reads only its locations'.
 */
export function assertReachesEverywhere(request: FastifyRequest, what: string): void {
  const held = request.apiKey.locations
  if (held)
    throw new DomainError(
      'insufficient_scope',
      `This API key is held to location${held.length === 1 ? '' : 's'} ${held.join(', ')}; ${what}`,
    )
}

/** Who a write is recorded as made by, in the ledger: the request's key and id (and its span, traced). */
export function requestActor(request: FastifyRequest): Actor {
  const traceContext = activeTraceparent()
  const actor: Actor = { keyId: request.apiKeyId, requestId: request.id }
  if (traceContext !== undefined) actor.traceContext = traceContext
  // A key held to locations reaches only theirs (src/stock/planner.ts); any other key, every one.
  const { locations } = request.apiKey
  if (locations !== undefined) actor.locations = locations
  return actor
}
