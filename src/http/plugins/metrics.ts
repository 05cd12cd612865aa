import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Duplex } from 'node:stream'
import type { Metrics } from '../../metrics/metrics.js'
import type { Storage } from '../../storage/ports.js'
import { handleClientError, handleError } from '../errors.js'
import { routeOf } from '../route-of.js'

/** The route label of a request no route matched: a fixed value, never the raw path (unbounded, and it may hold ids). */
export const UNMATCHED_ROUTE = 'unmatched'
/** The method label of a request the HTTP parser refused: its request line may never have been read. */
const UNKNOWN_METHOD = 'unknown'

export interface RequestMetricsOptions {
  /** This process's metrics (only when METRICS_PORT is set: without them the plugin is not registered). */
  metrics: Metrics
  /** Watched for its pool and its commits. */
  storage: Storage
}

/**
 * Counts and times every response by method, route template (`/v1/inventory/:petId`) and status, and
 * lets the metrics read the requests in flight (from admission, hence the dependency) and the
 * storage. Registered only when METRICS_PORT is set: without it the request path has no hook at all.
 * The duration is Fastify's own (from routing to the response sent), so no clock is read here.
 */
export const requestMetrics = fp<RequestMetricsOptions>(
  async (app, { metrics, storage }) => {
    metrics.watch({ inFlight: app.requestsInFlight, storage })
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.is404 ? UNMATCHED_ROUTE : (routeOf(request).url ?? UNMATCHED_ROUTE)
      metrics.requestAnswered(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
      done()
    })
  },
  { name: 'petstore-metrics', dependencies: ['petstore-admission'] },
)

/*
 * Requests answered before routing never reach the onResponse hook: they are counted here, without a
 * duration (they have no start to time from), under the route UNMATCHED_ROUTE. Both are server
 * options (server-options.ts), not hooks: Fastify calls them outside any plugin.
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
