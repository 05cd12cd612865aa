import { DiagLogLevel, diag } from '@opentelemetry/api'
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node'
import { type Config, maskUrl } from '../config.js'

type ExportResult = Parameters<Parameters<SpanExporter['export']>[1]>[0]
/** ExportResultCode.SUCCESS, of @opentelemetry/core (the SDK's, not a dependency of this service). */
const SUCCESS = 0

/** A pino logger's methods as tracing writes through them: the service's (app.log), or the CLI's. */
type LogFn = (fields: object, message: string) => void
export interface Log {
  error: LogFn
  warn: LogFn
  info: LogFn
  debug: LogFn
  trace: LogFn
}
type Level = keyof Log

const nothing: LogFn = () => {}
/** For a caller that has no logger (a benchmark): nothing is written. */
export const UNLOGGED: Log = { error: nothing, warn: nothing, info: nothing, debug: nothing, trace: nothing }

/** Lines written before the service's logger is there (the provider's making), held for it; past this many, dropped. */
const HELD_LINES = 100

/**
 * Where tracing writes its lines. The tracer provider is made before the HTTP application and its
 * logger (server.ts): the lines of that moment are held, and written once the application's tracing
 * plugin hands its logger over (`to`).
 */
export class TracingLog implements Log {
  private target: Log | undefined
  private held: [Level, object, string][] = []

  to(target: Log): void {
    this.target = target
    for (const [level, fields, message] of this.held) target[level](fields, message)
    this.held = []
  }

  private write(level: Level, fields: object, message: string) {
    if (this.target !== undefined) this.target[level](fields, message)
    else if (this.held.length < HELD_LINES) this.held.push([level, fields, message])
  }

  error: LogFn = (fields, message) => this.write('error', fields, message)
  warn: LogFn = (fields, message) => this.write('warn', fields, message)
  info: LogFn = (fields, message) => this.write('info', fields, message)
  debug: LogFn = (fields, message) => this.write('debug', fields, message)
  trace: LogFn = (fields, message) => this.write('trace', fields, message)
}

/**
 * The URL the OTLP exporter sends spans to, derived from the same variables as it derives it
 * (otlp-exporter-base): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as written, else OTEL_EXPORTER_OTLP_ENDPOINT
 * with `v1/traces` appended, else the specification's default. With its password masked: for the log.
 */
export function tracesEndpoint(config: Pick<Config, 'otelEndpoint' | 'otelTracesEndpoint'>): string {
  let url = 'http://localhost:4318/v1/traces'
  if (config.otelTracesEndpoint !== undefined) {
    try {
      url = new URL(config.otelTracesEndpoint).href
    } catch {
      url = config.otelTracesEndpoint
    }
  } else if (config.otelEndpoint !== undefined) {
    url = `${config.otelEndpoint}${config.otelEndpoint.endsWith('/') ? '' : '/'}v1/traces`
  }
  return maskUrl(url, true)
}

/**
 * An export's failure as one short text: a collector's answer (the exporter's OTLPExporterError, its
 * HTTP status as `code`), else the error's message (a refused connection, a timeout), never a body
 * or a stack, any password in it masked.
 */
function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return error === undefined ? 'unknown' : maskUrl(String(error))
  const code = (error as { code?: unknown }).code
  return maskUrl(typeof code === 'number' ? `HTTP ${code}${error.message ? ` ${error.message}` : ''}` : error.message)
}

/**
 * What the batch processor is told of a failed export, which the watch has logged: the SDK hands it
 * to its global error handler, whose line for it (diag.error, the error's fields as JSON) is known by
 * this name and written at debug, not once per failed export.
 */
class SpanExportFailed extends Error {
  constructor(cause: unknown) {
    super(causeOf(cause), { cause })
    this.name = 'SpanExportFailed'
  }
}

/**
 * The exporter's outcome in the log, in two lines: a warn line when exports start failing (the
 * endpoint, its password masked, and the cause) and an info line when one succeeds again (with the
 * count of exports that failed). The failures between are not logged: the spans they lost are
 * counted (petstore_trace_spans_total{outcome="failed"}, with METRICS_PORT).
 */
export class ExportWatch {
  /** Exports failed since the last that succeeded; 0 while they succeed. */
  private failures = 0

  constructor(
    private readonly endpoint: string,
    private readonly log: Log,
  ) {}

  get failing(): boolean {
    return this.failures > 0
  }

  /** `exporter`, its outcomes watched. */
  wrap(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) =>
        exporter.export(spans, (result) => {
          if (result.code === SUCCESS) {
            this.succeeded()
            done(result)
          } else {
            this.failed(result.error)
            done({ code: result.code, error: new SpanExportFailed(result.error) })
          }
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    }
  }

  private succeeded() {
    if (this.failures === 0) return
    this.log.info({ endpoint: this.endpoint, failedExports: this.failures }, 'span export succeeds again')
    this.failures = 0
  }

  private failed(error: unknown) {
    if (this.failures++ > 0) return
    this.log.warn({ endpoint: this.endpoint, cause: causeOf(error) }, 'span export fails: spans are dropped until an export succeeds again')
  }
}

/** The text of a diagnostic's arguments: strings, numbers, errors' messages; never an object (a span's attributes, the exporter's headers). */
function textOf(arg: unknown): string[] {
  if (typeof arg === 'string') return arg === '' ? [] : [arg]
  if (typeof arg === 'number' || typeof arg === 'boolean' || typeof arg === 'bigint') return [String(arg)]
  if (arg instanceof Error) return [arg.message]
  // @fastify/otel's { err }.
  const err = (arg as { err?: unknown } | null)?.err
  return err instanceof Error ? [err.message] : []
}

/** Each failed export's own diagnostics, which the watch's one warn line stands for. */
const EXPORT_FAILED = /^Export (failed|retry time)/
const SPANS_DROPPED = /^Dropped \d+ spans because maxQueueSize reached/

/**
 * The SDK's own diagnostic logger (diag) at OTEL_LOG_LEVEL, as the specification has it (default
 * INFO), writing through `log` at the matching level (VERBOSE at trace), each line with
 * `component: opentelemetry`, its text only, any password in it masked. What would repeat with every
 * failed export is written at debug: the retries' lines, the global error handler's for the failure
 * the watch logged, and, while exports fail, the queue's dropped spans (counted in the metrics).
 */
export function logDiagnostics(level: Config['otelLogLevel'], log: Log, watch: ExportWatch): void {
  const fields = { component: 'opentelemetry' }
  const write =
    (as: Level) =>
    (...args: unknown[]) => {
      const text = maskUrl(args.flatMap(textOf).join(' '))
      const repeats =
        (as === 'info' && EXPORT_FAILED.test(text)) ||
        (as === 'error' && text.includes('"name":"SpanExportFailed"')) ||
        (as === 'warn' && watch.failing && SPANS_DROPPED.test(text))
      log[repeats ? 'debug' : as](fields, text)
    }
  diag.setLogger(
    { error: write('error'), warn: write('warn'), info: write('info'), debug: write('debug'), verbose: write('trace') },
    { logLevel: DiagLogLevel[level], suppressOverrideMessage: true },
  )
}
