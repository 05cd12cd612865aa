import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions'
import pino from 'pino'
import type { Config } from '../config.js'
import { registerTracerProvider, TRACER_NAME } from './provider.js'

/** How long a command waits, at its end, for its spans' export. */
const FLUSH_MS = 2000

/**
 * One of the CLI's long commands (import, backup, check) as a span of its own, `petstore COMMAND`,
 * exported before the process exits. Loaded only with tracing on (cli/run.ts).
 */
export async function traceCommand(config: Config, name: string, run: () => Promise<void>): Promise<void> {
  // Tracing's own lines (the exporter failing, the SDK's diagnostics) as the service's are, JSON at
  // LOG_LEVEL, on stderr: stdout is the command's.
  const log = pino({ level: config.logLevel }, pino.destination({ dest: 2, sync: true }))
  const provider = registerTracerProvider(config, undefined, log)
  const span = trace.getTracer(TRACER_NAME).startSpan(`petstore ${name}`, { attributes: { 'petstore.command': name } })
  try {
    await context.with(trace.setSpan(context.active(), span), run)
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR })
    span.setAttribute(ATTR_ERROR_TYPE, error instanceof Error ? error.constructor.name : 'Error')
    throw error
  } finally {
    span.end()
    // The command's spans, out before the exit; a collector that does not answer within
    // FLUSH_MS does not hold the command's exit (its spans are dropped).
    await Promise.race([provider.shutdown().catch(() => {}), new Promise((resolve) => setTimeout(resolve, FLUSH_MS).unref())])
  }
}
