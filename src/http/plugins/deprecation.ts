import type { FastifyError, FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Deprecation } from '../deprecation.js'
import { sendError } from '../errors.js'

export interface DeprecationOptions {
  /** The deprecated operation's route template, prefix included (`/v1/pets/:petId`). */
  url: string
  deprecation: Deprecation
}

/**
 * Deprecates every route on `url`, whatever its method, the 405s included: each of their responses,
 * errors included, carries the deprecation headers, and from the sunset on they answer 410 `gone`
 * before anything else but admission (so before authentication). The hooks are attached to those
 * routes as they are registered, as their first onRequest hook and an onSend hook (which runs whoever
 * answers, admission's 503 included), so no other route pays for them. Registered before any route
 * on `url`; the requests refused before routing are withDeprecationOnUnrouted's.
 */
export const deprecation = fp<DeprecationOptions>(
  async (app, { url, deprecation }) => {
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
  },
  { name: 'petstore-deprecation', dependencies: ['petstore-errors'] },
)

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
