import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  context,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'

/**
 * The spans this service makes inside a request and in delivery (storage, group commit, webhooks,
 * brokers), through OpenTelemetry's API alone: its no-op API is all that is loaded with tracing off,
 * and then no span is even made (`tracer` stays undefined, every helper returns at once), so the
 * request path pays one comparison. provider.ts sets the tracer when tracing is on. Attribute names
 * are written out (as the semantic conventions spell them): their package is not loaded with tracing off.
 */
let tracer: Tracer | undefined

export function useTracer(next: Tracer | undefined): void {
  tracer = next
}

/** Whether tracing is on: for work that only a span needs (its attributes). */
export const tracing = (): boolean => tracer !== undefined

/** A span under `parent` (default: the active context), or undefined with tracing off. */
export function startSpan(name: string, options?: SpanOptions, parent?: Context): Span | undefined {
  return tracer?.startSpan(name, options, parent ?? context.active())
}

/**
 * A span under the active one, or undefined when there is none (or tracing is off): the work of a
 * request (or a command) is traced inside its trace, and the same work done for no traced caller
 * (a webhook's cursor commit riding a batch, say) starts no trace of its own.
 */
export function startChildSpan(name: string, options?: SpanOptions, parent: Context = context.active()): Span | undefined {
  return tracer && trace.getSpan(parent) ? tracer.startSpan(name, options, parent) : undefined
}

/** db.system.name, as the conventions name each backend. */
const DB_SYSTEMS = { sqlite: 'sqlite', postgres: 'postgresql' } as const

/** A database CLIENT span's options: the conventions' attributes, never a statement or a value. */
export function dbSpan(dialect: keyof typeof DB_SYSTEMS, operation: string, attributes: Attributes = {}): SpanOptions {
  return {
    kind: SpanKind.CLIENT,
    attributes: { 'db.system.name': DB_SYSTEMS[dialect], 'db.operation.name': operation, ...attributes },
  }
}

/**
 * The active span as a W3C traceparent (`00-<trace id>-<span id>-<flags>`), for what outlives the
 * request (its ledger rows); undefined with tracing off or outside any span.
 */
export function activeTraceparent(): string | undefined {
  const span = tracer && trace.getSpan(context.active())
  return span && traceparentOf(span)
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * A span that starts a trace of its own (work no request waits for: a delivery), linked to the span
 * a traceparent names (the request that made the row delivered), when there is one. Undefined with tracing off.
 */
export function startLinkedSpan(name: string, options: SpanOptions, linkedTo: string | undefined): Span | undefined {
  if (tracer === undefined) return undefined
  const parts = linkedTo === undefined ? null : TRACEPARENT.exec(linkedTo)
  const links = parts
    ? [{ context: { traceId: parts[1]!, spanId: parts[2]!, traceFlags: Number.parseInt(parts[3]!, 16), isRemote: true } }]
    : []
  return tracer.startSpan(name, { ...options, root: true, links }, ROOT_CONTEXT)
}

/** A span as the W3C traceparent that carries it out (a delivery's header), so the receiver's spans go under it. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext()
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`
}

/**
 * A group commit's transaction (tracing on, and a traced write in it): each traced write's span gets
 * the event `batch started` (its wait ends there), and the batch is one database CLIENT span,
 * BATCH, under the first traced write's span and linked to the others' (the SDK keeps 128 links).
 */
export function batchSpan(dialect: keyof typeof DB_SYSTEMS, batch: readonly { traced?: Span | undefined }[]): Span | undefined {
  if (tracer === undefined) return undefined
  let first: Span | undefined
  const links = []
  for (const { traced } of batch) {
    if (traced === undefined) continue
    traced.addEvent('batch started')
    if (first === undefined) first = traced
    else links.push({ context: traced.spanContext() })
  }
  if (first === undefined) return undefined
  const options = dbSpan(dialect, 'BATCH', { 'db.operation.batch.size': batch.length })
  return tracer.startSpan('BATCH', { ...options, links }, trace.setSpan(ROOT_CONTEXT, first))
}

/** The context of a span (undefined with tracing off), for the spans under it. */
export function contextOf(span: Span | undefined, parent?: Context): Context | undefined {
  return span && trace.setSpan(parent ?? context.active(), span)
}

/** Marks a span failed: error.type is the error's class, never its message (it may quote values). */
export function failed(span: Span | undefined, error: unknown): void {
  if (span === undefined) return
  span.setAttribute('error.type', error instanceof Error ? error.constructor.name : 'Error')
  span.setStatus({ code: SpanStatusCode.ERROR })
}

/** Runs `work` in a span under the active one (its own children under it), if there is one; else just runs it. */
export function inSpan<T>(name: string, options: SpanOptions, work: (span?: Span) => Promise<T>): Promise<T> {
  const span = startChildSpan(name, options)
  // Untraced, the work alone: not even a promise more.
  return span === undefined ? work() : within(span, work)
}

async function within<T>(span: Span, work: (span?: Span) => Promise<T>): Promise<T> {
  try {
    return await context.with(trace.setSpan(context.active(), span), work, undefined, span)
  } catch (error) {
    failed(span, error)
    throw error
  } finally {
    span.end()
  }
}
