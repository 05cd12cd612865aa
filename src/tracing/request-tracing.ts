import type { FastifyPluginAsync, FastifyRequest } from 'fastify'

/**
 * What the HTTP application gets from tracing when it is on (start-tracing.ts): nothing of
 * OpenTelemetry is imported here, so that with tracing off none of it is loaded.
 */
export interface RequestTracing {
  /** Registered before every other plugin: a SERVER span per request, following the HTTP conventions. */
  plugin: FastifyPluginAsync
  /** The request's span, for its log line: undefined when the request is not traced (not sampled, or no span). */
  idsOf(request: FastifyRequest): { trace_id: string; span_id: string } | undefined
}
