// An OTLP/HTTP collector of the test's own on 127.0.0.1: it takes what the service exports to
// /v1/traces, as protobuf (application/x-protobuf, the default protocol) or as JSON, and keeps the
// spans. Both encodings are decoded by the OpenTelemetry project's own generated protobufjs code
// (ExportTraceServiceRequest from @opentelemetry/otlp-transformer 0.216.0, the last release that
// ships it, installed as the devDependency otlp-transformer-decoder): protobuf by its decode, JSON
// by its fromObject once OTLP/JSON's hex ids are bytes again (OTLP's one departure from protobuf's
// JSON mapping, which would read them as base64). Each then goes through the same toObject.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import generated from 'otlp-transformer-decoder/build/src/generated/root.js'

type Scalar = string | number | boolean | undefined
export interface CollectedSpan {
  /** Lowercase hex, as in a traceparent. */
  traceId: string
  spanId: string
  /** '' for a root span. */
  parentSpanId: string
  /** The W3C tracestate the span carries ('' when none). */
  traceState: string
  name: string
  /** OTLP's SpanKind: 2 SERVER, 3 CLIENT, 4 PRODUCER. */
  kind: number
  /** Scalar values only; an int64 as a number. */
  attributes: Record<string, Scalar>
  /** OTLP's status: code 0 UNSET, 1 OK, 2 ERROR; message '' when none. */
  status: { code: number; message: string }
  /** The resource's attributes (service.name, OTEL_RESOURCE_ATTRIBUTES). */
  resource: Record<string, Scalar>
  /** The span's links, their ids in lowercase hex. */
  links: { traceId: string; spanId: string }[]
  /** Its events' names, in order. */
  events: string[]
  /** When it started and ended, in nanoseconds since the epoch (decimal: BigInt() to compare). */
  startTimeUnixNano: string
  endTimeUnixNano: string
}

// The part of the generated code (build/src/generated/root.js, a protobufjs static module) used here.
// Its own root.d.ts types the module as a bare protobufjs Root, so this names what toObject returns
// under the options below: int64 as decimal strings, enums as numbers, bytes as Uint8Array, and every
// field present (defaults), except a message field that was never set (null) and the AnyValue oneof.
type Message = { readonly __generated: unique symbol }
interface PlainAnyValue {
  stringValue?: string
  boolValue?: boolean
  intValue?: string
  doubleValue?: number
}
interface PlainKeyValue {
  key: string
  value: PlainAnyValue | null
}
interface PlainSpan {
  traceId: Uint8Array
  spanId: Uint8Array
  parentSpanId: Uint8Array
  traceState: string
  name: string
  kind: number
  attributes: PlainKeyValue[]
  links: { traceId: Uint8Array; spanId: Uint8Array }[]
  status: { code: number; message: string } | null
  startTimeUnixNano: string
  endTimeUnixNano: string
  events: { name: string }[]
}
interface PlainRequest {
  resourceSpans: { resource: { attributes: PlainKeyValue[] } | null; scopeSpans: { spans: PlainSpan[] }[] }[]
}
interface ToObjectOptions {
  longs: StringConstructor
  enums: NumberConstructor
  defaults: true
  arrays: true
}
interface GeneratedRoot {
  opentelemetry: {
    proto: {
      collector: {
        trace: {
          v1: {
            ExportTraceServiceRequest: {
              decode(bytes: Uint8Array): Message
              fromObject(object: object): Message
              toObject(message: Message, options: ToObjectOptions): PlainRequest
            }
            ExportTraceServiceResponse: { encode(message: object): { finish(): Uint8Array } }
          }
        }
      }
    }
  }
}
const traceService = (generated as unknown as GeneratedRoot).opentelemetry.proto.collector.trace.v1
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = traceService
const PLAIN: ToObjectOptions = { longs: String, enums: Number, defaults: true, arrays: true }

/** OTLP/JSON's ids are hex where protobuf's JSON mapping has base64: they are made bytes before fromObject. */
type JsonIds = { traceId?: unknown; spanId?: unknown; parentSpanId?: unknown }
type JsonRequest = { resourceSpans?: { scopeSpans?: { spans?: (JsonIds & { links?: JsonIds[] })[] }[] }[] }
const bytesOfHex = (hex: unknown) => {
  if (typeof hex !== 'string') return hex
  if (!/^(?:[0-9a-f]{2})*$/i.test(hex)) throw new Error(`an id that is not hex: ${JSON.stringify(hex)}`)
  return Buffer.from(hex, 'hex')
}
function idsAsBytes(ids: JsonIds) {
  for (const field of ['traceId', 'spanId', 'parentSpanId'] as const) if (ids[field] !== undefined) ids[field] = bytesOfHex(ids[field])
}
function fromJson(text: string): Message {
  const request = JSON.parse(text) as JsonRequest
  for (const rs of request.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? []) {
        idsAsBytes(span)
        for (const link of span.links ?? []) idsAsBytes(link)
      }
  return ExportTraceServiceRequest.fromObject(request)
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
const plain = (v: PlainAnyValue | null): Scalar =>
  v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : (v?.boolValue ?? v?.doubleValue))
const attributesOf = (list: PlainKeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, plain(a.value)]))

export class TestCollector {
  readonly spans: CollectedSpan[] = []
  /** Every export's content type and size, whatever its encoding. */
  readonly exports: { contentType: string | undefined; bytes: number }[] = []

  private constructor(private readonly server: Server) {}

  /** On `port` (a port of the test's choosing: a collector that comes back where the service exports), else one the kernel picks. */
  static async start(port = 0): Promise<TestCollector> {
    const collector: TestCollector = new TestCollector(
      createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', () => {
          const body = Buffer.concat(chunks)
          const contentType = req.headers['content-type']
          collector.exports.push({ contentType, bytes: body.length })
          const protobuf = contentType?.startsWith('application/x-protobuf') === true
          try {
            if (req.url === '/v1/traces' && protobuf) collector.take(ExportTraceServiceRequest.decode(body))
            else if (req.url === '/v1/traces' && contentType?.startsWith('application/json')) collector.take(fromJson(body.toString()))
          } catch (error) {
            res.writeHead(400, { 'content-type': 'text/plain' }).end(`undecodable export: ${(error as Error).message}`)
            return
          }
          // An empty ExportTraceServiceResponse (full success), in the request's encoding.
          if (protobuf) res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(ExportTraceServiceResponse.encode({}).finish())
          else res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        })
      }),
    )
    await new Promise<void>((resolve) => collector.server.listen(port, '127.0.0.1', resolve))
    return collector
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  private take(message: Message) {
    for (const rs of ExportTraceServiceRequest.toObject(message, PLAIN).resourceSpans) {
      const resource = attributesOf(rs.resource?.attributes)
      for (const ss of rs.scopeSpans)
        for (const span of ss.spans)
          this.spans.push({
            traceId: hex(span.traceId),
            spanId: hex(span.spanId),
            parentSpanId: hex(span.parentSpanId),
            traceState: span.traceState,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
            resource,
            links: span.links.map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
            events: span.events.map((e) => e.name),
            startTimeUnixNano: span.startTimeUnixNano,
            endTimeUnixNano: span.endTimeUnixNano,
          })
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise((resolve) => this.server.close(resolve))
  }
}
