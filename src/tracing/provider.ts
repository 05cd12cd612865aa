import { randomUUID } from 'node:crypto'
import { type Attributes, createNoopMeter, type MeterProvider } from '@opentelemetry/api'
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
import { useTracer } from '../spans.js'
import { ExportWatch, type Log, logDiagnostics, tracesEndpoint, UNLOGGED } from './diagnostics.js'

/** Where the spans the processor finished with are counted (the metrics, when METRICS_PORT is set). */
export interface SpanObserver {
  processed(count: number, outcome: 'exported' | 'dropped' | 'failed'): void
}

/**
 * The batch processor's own counts (the SDK's self-observability, `otel.sdk.processor.span.processed`
 * with error.type `queue_full` for a dropped span), taken into this service's Prometheus metrics:
 * a meter whose one counter reports to the observer, every other instrument a no-op.
 */
function spanCounts(observer: SpanObserver): MeterProvider {
  const noop = createNoopMeter()
  const meter = Object.create(noop) as typeof noop
  meter.createCounter = <A extends Attributes>(name: string) =>
    name !== 'otel.sdk.processor.span.processed'
      ? noop.createCounter<A>(name)
      : {
          add(count: number, attributes?: A) {
            const error = attributes?.['error.type']
            observer.processed(count, error === undefined ? 'exported' : error === 'queue_full' ? 'dropped' : 'failed')
          },
        }
  return { getMeter: () => meter }
}

/**
 * The processor's options with the meter for its own counts. The processor sdk-trace-node exports
 * (which adds the OTEL_BSP_* variables) passes its options on whole to sdk-trace's, whose type has
 * selfObsMeterProvider; its own type does not name it yet.
 */
const countedBy = (observer: SpanObserver) =>
  ({ selfObsMeterProvider: spanCounts(observer) }) as ConstructorParameters<typeof BatchSpanProcessor>[1]

/** The tracer's name on every span this service makes itself. */
export const TRACER_NAME = 'petstore'

/**
 * Tracing with the OpenTelemetry SDK, as the standard variables configure it (config.ts reads and
 * checks them): one tracer provider for the process, made the global one (with the W3C trace-context
 * propagator and an AsyncLocalStorage context), its spans batched (a bounded queue: past it spans
 * are dropped, never held) to an OTLP exporter over HTTP, which reads its endpoint, headers and
 * timeout from the OTEL_EXPORTER_OTLP_* variables itself. The SDK's own diagnostics, at
 * OTEL_LOG_LEVEL, and the exporter's failing and recovering (diagnostics.ts) are lines of `log`
 * (none without one).
 * Only ever imported with tracing on.
 */
export function registerTracerProvider(config: Config, observer?: SpanObserver, log: Log = UNLOGGED): NodeTracerProvider {
  // First: the exporter's own warnings about its configuration are diagnostics too.
  const watch = new ExportWatch(tracesEndpoint(config), log)
  logDiagnostics(config.otelLogLevel, log, watch)
  const attributes: Attributes = { ...config.otelResourceAttributes }
  attributes[ATTR_SERVICE_NAME] = config.otelServiceName ?? attributes[ATTR_SERVICE_NAME] ?? 'petstore'
  // Each process (an instance, a worker of --workers N, a CLI command) is one instance of the
  // service, as the resource conventions say, unless the operator named it; and its pid.
  attributes['service.instance.id'] ??= randomUUID()
  attributes['process.pid'] = process.pid
  const exporter = watch.wrap(config.otelProtocol === 'http/json' ? new JsonExporter() : new ProtobufExporter())
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes(attributes),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter, observer ? countedBy(observer) : {})],
  })
  provider.register()
  useTracer(provider.getTracer(TRACER_NAME))
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
