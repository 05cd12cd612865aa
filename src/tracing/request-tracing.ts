import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { TraceIds } from '../http/plugins/request-log.js'

/**
 * What the HTTP application gets from tracing when it is on (start-tracing.ts): nothing of
 * OpenTelemetry is imported here, so that with tracing off none of it is loaded.
 */
export interface RequestTracing {
  /** Registered before every other plugin: a SERVER span per request, following the HTTP conventions. */
  plugin: FastifyPluginAsync
  /** The request's span context, for its log line (sampled or not); undefined when it has no span. */
  idsOf(request: FastifyRequest): TraceIds | undefined
}
