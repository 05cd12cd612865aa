import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify'
import { Type } from 'typebox'
import { sendError } from '../http/errors.js'

/**
 * The deprecation of one operation: RFC 9745's Deprecation header (when it was deprecated), RFC 8594's
 * Sunset header (from when it is gone), and a Link to where both are documented.
 */
export class Deprecation {
  /** The three headers, written once: every response of the operation carries them. */
  readonly headers: Readonly<Record<'deprecation' | 'sunset' | 'link', string>>

  constructor(
    readonly deprecatedAt: Date,
    readonly sunsetAt: Date,
    readonly link: string,
  ) {
    this.headers = {
      // An RFC 9651 Date: '@' and the Unix seconds.
      deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
      // An IMF-fixdate (RFC 9110), which is what toUTCString writes.
      sunset: sunsetAt.toUTCString(),
      link: `<${link}>; rel="deprecation", <${link}>; rel="sunset"`,
    }
  }

  isGone(now = Date.now()): boolean {
    return now >= this.sunsetAt.getTime()
  }

  addHeaders(reply: FastifyReply): void {
    reply.headers(this.headers)
  }
}

/** The deprecation headers, as the OpenAPI document declares them on every response of a deprecated operation. */
export const DEPRECATION_HEADERS = {
  Deprecation: Type.String({
    description: 'When the operation was deprecated (RFC 9745): `@` and the Unix time in seconds, e.g. `@1767225600`.',
  }),
  Sunset: Type.String({
    description: 'From when the operation is gone, answered 410 (RFC 8594): an HTTP date, e.g. `Thu, 01 Jul 2027 00:00:00 GMT`.',
  }),
  Link: Type.String({
    description: 'Where the deprecation and the sunset are documented: `<URL>; rel="deprecation", <URL>; rel="sunset"`.',
  }),
}

/** Declares the deprecation headers on each of an operation's responses. */
export function withDeprecationHeaders<T extends Record<string, object>>(responses: T): T {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      { ...response, headers: { ...(response as { headers?: object }).headers, ...DEPRECATION_HEADERS } },
    ]),
  ) as T
}

/**
 * Deprecates every route on `url` (a route template, prefix included), whatever its method, the 405s
 * included: each of their responses, errors included, carries the deprecation headers, and from the
 * sunset on they answer 410 `gone` before anything else but admission (so before authentication).
 * The hooks are attached to those routes as they are registered, as their first onRequest hook and an
 * onSend hook (which runs whoever answers, admission's 503 included), so no other route pays for them.
 * Call it on the root instance before any route is registered.
 */
export function deprecateRoutes(app: FastifyInstance, url: string, deprecation: Deprecation): void {
  const goneFromSunset: onRequestHookHandler = (_request, reply, done) => {
    if (!deprecation.isGone()) return done()
    sendError(reply, 'gone', `This operation was removed on ${deprecation.sunsetAt.toISOString()}; see ${deprecation.link}`)
  }
  const headers: onSendHookHandler = (_request, reply, payload, done) => {
    deprecation.addHeaders(reply)
    done(null, payload)
  }
  app.addHook('onRoute', (route) => {
    if (route.url !== url) return
    route.onRequest = [goneFromSunset, ...[route.onRequest ?? []].flat()]
    route.onSend = [...[route.onSend ?? []].flat(), headers]
  })
}

type FrameworkErrors = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => unknown

/**
 * Wraps Fastify's frameworkErrors handler, which answers requests refused before routing (a path
 * segment that cannot be decoded or is too long): no route hook sees them, so the deprecation headers
 * are added here to those whose path is on `url`.
 */
export function withDeprecationOnUnrouted(handler: FrameworkErrors, url: string, deprecation: Deprecation): FrameworkErrors {
  // The template's `:name` segments match any one segment.
  const onUrl = new RegExp(`^${url.replace(/:\w+/g, '[^/?#]*')}(?:[?#]|$)`)
  return (error, request, reply) => {
    if (onUrl.test(request.url)) deprecation.addHeaders(reply)
    return handler(error, request, reply)
  }
}
