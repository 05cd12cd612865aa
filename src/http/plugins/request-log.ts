import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { routeOf } from '../route-of.js'

/** A span context in a log line, as OpenTelemetry's log correlation names its fields. */
export interface TraceIds {
  trace_id: string
  span_id: string
  /** '01' sampled (the span is exported), '00' not. */
  trace_flags: '00' | '01'
}

export interface RequestLogOptions {
  /** With tracing on: the request's trace and span ids, written into its line. */
  idsOf?: ((request: FastifyRequest) => TraceIds | undefined) | undefined
}

/** A request target without its query string. */
const pathOf = (url: string) => url.split('?', 1)[0]!

/**
 * One log line per request, at info (the server is built with Fastify's own request logging off);
 * below that level the hook is not even registered. The path without its query: a client that sends
 * its key as ?access_token=… must not have it written down.
 */
export const requestLog = fp<RequestLogOptions>(
  async (app, { idsOf }) => {
    if (!['trace', 'debug', 'info'].includes(app.log.level)) return
    app.addHook('onResponse', (request, reply, done) => {
      const line = {
        method: request.method,
        route: routeOf(request).url,
        path: pathOf(request.url),
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      }
      const ids = idsOf?.(request)
      request.log.info(ids === undefined ? line : { ...line, ...ids }, 'request')
      done()
    })
  },
  { name: 'petstore-request-log', dependencies: ['petstore-request-ids'] },
)
