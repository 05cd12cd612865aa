import { FastifyOtelInstrumentation } from '@fastify/otel'
import { type Span, SpanStatusCode } from '@opentelemetry/api'
import { ATTR_ERROR_TYPE, ATTR_SERVER_PORT, ATTR_URL_PATH, ATTR_URL_SCHEME } from '@opentelemetry/semantic-conventions'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { routeOf } from '../http/route-of.js'
import { TracingLog } from './diagnostics.js'
import { registerTracerProvider, type SpanObserver } from './provider.js'
import type { RequestTracing } from './request-tracing.js'

export interface Tracing {
  requests: RequestTracing
  /** Exports what is still queued (bounded by the exporter's timeout), then stops. */
  shutdown(): Promise<void>
}

/** The span of each request, kept past its end for the request's log line. */
const spans = new WeakMap<FastifyRequest, Span>()

/**
 * The HTTP service's tracing (provider.ts): a SERVER span per request from @fastify/otel, named and
 * attributed as the HTTP conventions say. Loaded only when tracing is on (server.ts): with it off,
 * none of these modules is imported.
 */
export function startTracing(config: Config, observer?: SpanObserver): Tracing {
  // The service's logger comes with the application, after the provider: its lines wait for it (the plugin's).
  const log = new TracingLog()
  const provider = registerTracerProvider(config, observer, log)

  const instrumentation = new FastifyOtelInstrumentation({
    // One SERVER span per request: no span per hook or handler (each would cost every request).
    instrumentHooks: false,
    instrumentHandler: false,
    // An error's message and stack may hold values (a statement's, a client's): they stay in the log
    // line, which the span's trace_id leads to; the span says only that it failed (below).
    recordExceptions: false,
    requestHook: (span, request) => {
      const route = routeOf(request as FastifyRequest).url
      // The conventions' name and attributes: `{method} {route}`, the path without its query.
      if (route !== undefined) span.updateName(`${request.method} ${route}`)
      else span.updateName(request.method)
      // @fastify/otel set url.path to the URL as sent: only a query needs taking off.
      const query = request.url.indexOf('?')
      if (query !== -1) span.setAttribute(ATTR_URL_PATH, request.url.slice(0, query))
      const port = request.socket.localPort
      if (port !== undefined) span.setAttribute(ATTR_SERVER_PORT, port)
      // Required on a SERVER span: the scheme the client used (a trusted proxy's X-Forwarded-Proto, as TRUST_PROXY says).
      span.setAttribute(ATTR_URL_SCHEME, (request as FastifyRequest).protocol)
      spans.set(request as FastifyRequest, span)
    },
  })
  instrumentation.setTracerProvider(provider)

  const plugin = fp(
    async (app) => {
      log.to(app.log)
      await app.register(instrumentation.plugin())
      // @fastify/otel appends to each route's onError a hook (recordErrorInSpanHook) that makes the
      // span an ERROR with the error's message, whatever status the error is answered with: a 4xx too,
      // whose SERVER span the conventions leave unset (the client's error), and an ERROR cannot be set
      // back to unset. It is taken off each route as the route is added (this hook runs right after
      // @fastify/otel's own onRoute, which added it): the status is the onSend hook's below, from the
      // status answered, never with a message.
      app.addHook('onRoute', (route) => {
        if (route.onError === undefined) return
        const hooks = Array.isArray(route.onError) ? route.onError : [route.onError]
        route.onError = hooks.filter((hook) => hook.name !== 'recordErrorInSpanHook')
      })
      // Before the instrumentation's own onSend, which ends the span: a 5xx is an error of the server's
      // (the conventions leave a 4xx unset on a SERVER span: the client's).
      // A callback hook, not an async one: no promise per request.
      app.addHook('onSend', (request, reply, payload, done) => {
        const span = spans.get(request)
        if (span !== undefined && reply.statusCode >= 500) {
          span.setAttribute(ATTR_ERROR_TYPE, String(reply.statusCode))
          // Without the error's message (and @fastify/otel's onSend, after this one, sets none either).
          span.setStatus({ code: SpanStatusCode.ERROR })
        }
        done(null, payload)
      })
    },
    { name: 'petstore-tracing' },
  )

  return {
    requests: {
      plugin,
      idsOf(request) {
        const span = spans.get(request)
        if (span === undefined) return undefined
        const { traceId, spanId, traceFlags } = span.spanContext()
        // As OpenTelemetry's log correlation names them, sampled or not: an unsampled request's line
        // still carries its caller's trace id (the caller's own logs and spans have it), and
        // trace_flags says whether this service exported its span.
        return { trace_id: traceId, span_id: spanId, trace_flags: traceFlags & 1 ? '01' : '00' }
      },
    },
    shutdown: () => provider.shutdown(),
  }
}
