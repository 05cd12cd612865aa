// An OTLP/HTTP collector of the test's own on 127.0.0.1: it takes what the service exports to
// /v1/traces (JSON, or protobuf counted by its bytes) and keeps the spans of the JSON exports.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number }
export interface CollectedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 2 SERVER, 3 CLIENT, 4 PRODUCER. */
  kind: number
  attributes: Record<string, string | number | boolean | undefined>
  /** OTLP's status: code 2 is ERROR. */
  status?: { code?: number; message?: string }
  /** The resource's attributes (service.name, OTEL_RESOURCE_ATTRIBUTES). */
  resource: Record<string, string | number | boolean | undefined>
}

const plain = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue))
const attributesOf = (list: { key: string; value: AnyValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, plain(a.value)]))

export class TestCollector {
  readonly spans: CollectedSpan[] = []
  /** Every export's content type and size, JSON or not. */
  readonly exports: { contentType: string | undefined; bytes: number }[] = []

  private constructor(private readonly server: Server) {}

  static async start(): Promise<TestCollector> {
    const collector: TestCollector = new TestCollector(
      createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', () => {
          const body = Buffer.concat(chunks)
          collector.exports.push({ contentType: req.headers['content-type'], bytes: body.length })
          if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json'))
            collector.take(JSON.parse(body.toString()))
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        })
      }),
    )
    await new Promise<void>((resolve) => collector.server.listen(0, '127.0.0.1', resolve))
    return collector
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  private take(request: {
    resourceSpans?: {
      resource?: { attributes?: [] }
      scopeSpans?: { spans?: (Omit<CollectedSpan, 'attributes' | 'resource'> & { attributes?: [] })[] }[]
    }[]
  }) {
    for (const rs of request.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes)
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? [])
          this.spans.push({ ...span, parentSpanId: span.parentSpanId ?? '', attributes: attributesOf(span.attributes), resource })
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise((resolve) => this.server.close(resolve))
  }
}
