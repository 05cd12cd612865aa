import { FastifyOtelInstrumentation } from '@fastify/otel'
import { type Span, SpanKind, trace } from '@opentelemetry/api'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node'
import { ATTR_ERROR_TYPE, ATTR_SERVER_PORT, ATTR_SERVICE_NAME, ATTR_URL_PATH } from '@opentelemetry/semantic-conventions'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { routeOf } from '../http/route-of.js'
import type { RequestTracing } from './request-tracing.js'

/** The tracer's name on every span this service makes itself. */
export const TRACER_NAME = 'petstore'

export interface Tracing {
  requests: RequestTracing
  /** Exports what is still queued (bounded by the exporter's timeout), then stops. */
  shutdown(): Promise<void>
}

/** The span of each request, kept past its end for the request's log line. */
const spans = new WeakMap<FastifyRequest, Span>()

/**
 * Tracing with the OpenTelemetry SDK, as the standard variables configure it (config.ts reads and
 * checks them): one tracer provider for the process, made the global one (with the W3C trace-context
 * propagator and an AsyncLocalStorage context), its spans batched to an OTLP exporter over HTTP. The
 * exporter reads its endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables itself.
 * Loaded only when tracing is on (server.ts): with it off, none of these modules is imported.
 */
export function startTracing(config: Config): Tracing {
  const attributes = { ...config.otelResourceAttributes }
  attributes[ATTR_SERVICE_NAME] = config.otelServiceName ?? attributes[ATTR_SERVICE_NAME] ?? 'petstore'
  const exporter = config.otelProtocol === 'http/json' ? new JsonExporter() : new ProtobufExporter()
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(attributes),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  })
  provider.register()

  const instrumentation = new FastifyOtelInstrumentation({
    // One SERVER span per request: no span per hook or handler (each would cost every request).
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span, request) => {
      const route = routeOf(request as FastifyRequest).url
      // The conventions' name and attributes: `{method} {route}`, the path without its query.
      if (route !== undefined) span.updateName(`${request.method} ${route}`)
      else span.updateName(request.method)
      span.setAttribute(ATTR_URL_PATH, request.url.split('?', 1)[0]!)
      const port = request.socket.localPort
      if (port !== undefined) span.setAttribute(ATTR_SERVER_PORT, port)
      spans.set(request as FastifyRequest, span)
    },
  })
  instrumentation.setTracerProvider(provider)

  const plugin = fp(
    async (app) => {
      await app.register(instrumentation.plugin())
      // Before the instrumentation's own onSend, which ends the span: a 5xx is an error of the server's
      // (the conventions leave a 4xx unset on a SERVER span: the client's).
      app.addHook('onSend', async (request, reply) => {
        const span = spans.get(request)
        if (span !== undefined && reply.statusCode >= 500) span.setAttribute(ATTR_ERROR_TYPE, String(reply.statusCode))
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
        // Not sampled: nothing of it is exported, so no id a backend could find.
        return traceFlags & 1 ? { trace_id: traceId, span_id: spanId } : undefined
      },
    },
    shutdown: () => provider.shutdown(),
  }
}

function samplerOf(config: Config): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.otelSamplerRatio)
  switch (config.otelSampler) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return ratio
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio })
  }
}

/** The service's own tracer (spans below a request's: storage, delivery). */
export const tracer = () => trace.getTracer(TRACER_NAME)
export { SpanKind }
