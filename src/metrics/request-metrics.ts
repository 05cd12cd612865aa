import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Duplex } from 'node:stream'
import { handleClientError, handleError } from '../http/errors.js'
import type { Metrics } from './metrics.js'

/** The route label of a request no route matched: a fixed value, never the raw path (unbounded, and it may hold ids). */
export const UNMATCHED_ROUTE = 'unmatched'
/** The method label of a request the HTTP parser refused: its request line may never have been read. */
const UNKNOWN_METHOD = 'unknown'

/**
 * Counts and times every response by method, route template (`/v1/inventory/:petId`) and status.
 * Registered only when METRICS_PORT is set: without it the request path has no hook at all. The
 * duration is Fastify's own (from routing to the response sent), so no clock is read here.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics) {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE)
    metrics.requestAnswered(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
}

/*
 * Requests answered before routing never reach the onResponse hook: they are counted here, without a
 * duration (they have no start to time from), under the route UNMATCHED_ROUTE.
 */

/** Fastify's `clientErrorHandler` (what the HTTP parser refuses: 400, 408, 431), counting what it answers. */
export function countedClientErrors(metrics: Metrics) {
  return function (this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex) {
    const status = handleClientError.call(this, error, socket)
    if (status !== undefined) metrics.requestAnswered(UNKNOWN_METHOD, UNMATCHED_ROUTE, status)
  }
}

/** Fastify's `frameworkErrors` (URLs the router cannot take: 400, 414), counting what it answers. */
export function countedFrameworkErrors(metrics: Metrics) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const sent = handleError(error, request, reply)
    metrics.requestAnswered(request.method, UNMATCHED_ROUTE, reply.statusCode)
    return sent
  }
}
