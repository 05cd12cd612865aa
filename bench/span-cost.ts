// The OpenTelemetry SDK's own CPU per span, as the service sets it up (src/tracing/provider.ts, from
// the same OTEL_* variables), with no HTTP server around it: the floor under what tracing can cost a
// request, for the tracing group (bench/tracing.ts). Run as a process of its own (runNode), so its
// CPU is only its own; OTEL_EXPORTER_OTLP_ENDPOINT points at the group's sink collector.
// Each span is made as @fastify/otel makes a request's (startSpan with its attributes, renamed,
// the route and port set, entered as the active context once, the status set, ended), and the
// batch processor exports it (serialized, POSTed); spans are made 500 per turn of the event loop,
// with a 1 ms pause between turns, and a queue that holds them all. Prints one line of JSON:
// {"spans":N,"exported":M,"cpuUsPerSpan":X}.
import { context, SpanKind, trace } from '@opentelemetry/api'
import { loadConfig } from '../src/config.js'
import { registerTracerProvider } from '../src/tracing/provider.js'
import { envNumber } from './config.js'

const SPANS = Math.floor(envNumber('SPAN_COST_SPANS', 200_000, 1000))
// The last, partial batch waits for the processor's schedule (5 s by default): a short one.
process.env.OTEL_BSP_SCHEDULE_DELAY ??= '100'
const WARMUP = 20_000
const PER_TURN = 500

// Every span exported, none dropped for a full queue (the exporter is measured, not skipped).
process.env.OTEL_BSP_MAX_QUEUE_SIZE ??= String(WARMUP + SPANS)
let exported = 0
const provider = registerTracerProvider(loadConfig(), {
  processed(count, outcome) {
    if (outcome === 'exported') exported += count
  },
})
const tracer = provider.getTracer('petstore')

async function make(count: number) {
  for (let made = 0; made < count; made += PER_TURN) {
    for (let i = 0; i < PER_TURN; i++) {
      const span = tracer.startSpan('request', {
        kind: SpanKind.SERVER,
        attributes: { 'fastify.root': '@fastify/otel', 'http.request.method': 'PATCH', 'url.path': '/v1/inventory/7' },
      })
      span.updateName('PATCH /v1/inventory/:petId')
      span.setAttribute('http.route', '/v1/inventory/:petId')
      span.setAttribute('server.port', 8080)
      context.with(trace.setSpan(context.active(), span), () => {})
      span.setAttribute('http.response.status_code', 200)
      span.end()
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

/** Until every span made so far was exported (the processor's own pace: a forceFlush of a long queue exports its batches all at once, past the exporter's limit). */
async function exportedAll(target: number) {
  const until = Date.now() + 60_000
  while (exported < target && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20))
}

await make(WARMUP)
await exportedAll(WARMUP)
const before = process.cpuUsage()
const exportedBefore = exported
await make(SPANS)
await exportedAll(WARMUP + SPANS)
const used = process.cpuUsage(before)
process.stdout.write(
  `${JSON.stringify({ spans: SPANS, exported: exported - exportedBefore, cpuUsPerSpan: (used.user + used.system) / SPANS })}\n`,
)
await provider.shutdown()
