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
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { Config } from '../config.js'

/** The tracer's name on every span this service makes itself. */
export const TRACER_NAME = 'petstore'

/**
 * Tracing with the OpenTelemetry SDK, as the standard variables configure it (config.ts reads and
 * checks them): one tracer provider for the process, made the global one (with the W3C trace-context
 * propagator and an AsyncLocalStorage context), its spans batched (a bounded queue: past it spans
 * are dropped, never held) to an OTLP exporter over HTTP, which reads its endpoint, headers and
 * timeout from the OTEL_EXPORTER_OTLP_* variables itself. Only ever imported with tracing on.
 */
export function registerTracerProvider(config: Config): NodeTracerProvider {
  const attributes = { ...config.otelResourceAttributes }
  attributes[ATTR_SERVICE_NAME] = config.otelServiceName ?? attributes[ATTR_SERVICE_NAME] ?? 'petstore'
  const exporter = config.otelProtocol === 'http/json' ? new JsonExporter() : new ProtobufExporter()
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(attributes),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  })
  provider.register()
  return provider
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
