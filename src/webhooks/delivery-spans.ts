import { type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { InventoryChange } from '../domain.js'
import { startLinkedSpan, tracing } from '../spans.js'

/*
 * Each delivery attempt as a span (tracing on; undefined otherwise): a trace of its own, since no
 * request waits for it, linked to the span of the request that made the row (its ledger row's
 * traceContext). Its traceparent goes out with the message, so the receiver's spans go under it.
 * Attributes follow the HTTP client and messaging conventions; never a credential, a query's
 * values, a signature or a body.
 */

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'nats:': 4222, 'amqp:': 5672, 'amqps:': 5671 }

const portOf = (url: URL) => (url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port))

/** The URL without credentials, each query value replaced (a webhook URL's query may hold a token). */
function redacted(url: URL): string {
  const shown = new URL(url)
  shown.username = ''
  shown.password = ''
  for (const name of new Set(shown.searchParams.keys())) shown.searchParams.set(name, 'REDACTED')
  return shown.href
}

/** A webhook POST's CLIENT span, named `POST` as the HTTP conventions name a client span. */
export function webhookSpan(url: URL, webhookId: number, row: InventoryChange): Span | undefined {
  if (!tracing()) return undefined
  return startLinkedSpan(
    'POST',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'url.full': redacted(url),
        'server.address': url.hostname,
        'server.port': portOf(url),
        'petstore.webhook.id': webhookId,
        'petstore.change.seq': String(row.seq),
      },
    },
    row.traceContext,
  )
}

/** Ends a webhook POST's span with the receiver's status, or what kept it from answering. */
export function endWebhookSpan(span: Span | undefined, status: number | undefined, errorType: string | undefined): void {
  if (span === undefined) return
  if (status !== undefined) span.setAttribute('http.response.status_code', status)
  if (errorType !== undefined) {
    span.setAttribute('error.type', errorType)
    span.setStatus({ code: SpanStatusCode.ERROR })
  }
  span.end()
}

/**
 * A broker message's PRODUCER span, one per message (each links to its own row's request):
 * `publish <destination>`, the destination being the subject prefix (NATS; the subject, with the
 * pet's id, is an attribute) or the exchange (RabbitMQ).
 */
export function brokerSpans(destination: string, rows: InventoryChange[], ids: string[]): Span[] | undefined {
  if (!tracing()) return undefined
  const url = new URL(destination)
  const nats = url.protocol === 'nats:'
  const target = nats ? url.pathname.slice(1) : (url.searchParams.get('exchange') ?? '')
  const common = {
    'messaging.system': nats ? 'nats' : 'rabbitmq',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'publish',
    'server.address': url.hostname,
    'server.port': portOf(url),
    ...(nats ? {} : { 'messaging.rabbitmq.destination.routing_key': url.searchParams.get('routingKey') ?? '' }),
  }
  const spans: Span[] = []
  for (const [i, row] of rows.entries()) {
    const attributes = {
      ...common,
      'messaging.destination.name': nats ? `${target}.${row.petId}` : target,
      'messaging.message.id': ids[i]!,
    }
    const span = startLinkedSpan(`publish ${target}`, { kind: SpanKind.PRODUCER, attributes }, row.traceContext)
    if (span === undefined) return undefined
    spans.push(span)
  }
  return spans
}

/** Ends a publish's spans: those acknowledged as sent, the rest failed (not acknowledged: sent again later). */
export function endBrokerSpans(spans: Span[] | undefined, acknowledged: number): void {
  if (spans === undefined) return
  for (const [i, span] of spans.entries()) {
    if (i >= acknowledged) {
      span.setAttribute('error.type', 'unacknowledged')
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }
}
