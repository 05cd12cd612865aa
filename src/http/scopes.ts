import type { FastifyRequest } from 'fastify'
import type { Scope } from '../domain.js'
import { routeOf } from './route-of.js'

/** The OpenAPI security scheme every API operation is under: an API key as a bearer token. */
export const SECURITY_SCHEME = 'bearerAuth'

type SecurityRequirement = Record<string, string[]>[]

/**
 * An operation's `security`, for its route schema: a key with `scope`, or, without one, any valid
 * key. The OpenAPI document shows it, and the auth hook enforces what it says (scopeNeeded), so the
 * two cannot differ.
 */
export function requires(scope?: Scope): SecurityRequirement {
  return [{ [SECURITY_SCHEME]: scope === undefined ? [] : [scope] }]
}

/**
 * The scope the request's operation needs: a scope, null when any valid key will do, or undefined
 * when its route declares no security at all (a route under authentication must: see the auth hook).
 */
export function scopeNeeded(request: FastifyRequest): string | null | undefined {
  const security = routeOf(request).schema?.security as SecurityRequirement | undefined
  const scopes = security?.[0]?.[SECURITY_SCHEME]
  if (scopes === undefined) return undefined
  return scopes[0] ?? null
}
