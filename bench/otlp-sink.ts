// A minimal OTLP/HTTP trace collector for the tracing group (bench/tracing.ts), run as a process of
// its own (bench/procs.ts startServer), so that neither its work nor its CPU time lands in the bench
// process (which reads wrk's output and the servers' /proc) or in the service measured.
//   POST /v1/traces  read the whole body, answer 200 at once (protobuf: an empty
//                    ExportTraceServiceResponse, `application/x-protobuf`; JSON: `{}`), then count the
//                    export's spans and its SERVER spans (kind 2): protobuf walked field by field
//                    (ExportTraceServiceRequest.resource_spans[1] > ResourceSpans.scope_spans[2] >
//                    ScopeSpans.spans[2] > Span.kind[6]), JSON parsed; a gzip body is gunzipped first.
//   GET /stats       the counts so far, as JSON (SinkStats); also the readiness check.
// Anything else answers 404. Listens on HOST:PORT; SIGTERM closes it and exits 0.
// OTLP_SINK_HANG=1: a collector that hangs: each POST to /v1/traces is read whole and counted as
// above, and never answered (no timeout of its own closes it: the exporter's gives up); /stats
// still answers.
import { createServer } from 'node:http'
import { gunzipSync } from 'node:zlib'

export interface SinkStats {
  /** POSTs to /v1/traces taken. */
  exports: number
  /** Their bodies' bytes, as received (compressed, when they were). */
  bytes: number
  /** Spans in them, of every kind. */
  spans: number
  /** SERVER spans (one per request the service answers). */
  serverSpans: number
  /** Bodies that could not be decoded (counted in exports and bytes, not in spans). */
  undecoded: number
  /** Content types seen, with how many exports each. */
  contentTypes: Record<string, number>
}

const HANG = process.env.OTLP_SINK_HANG === '1'
const stats: SinkStats = { exports: 0, bytes: 0, spans: 0, serverSpans: 0, undecoded: 0, contentTypes: {} }

const SERVER_KIND = 2
const WIRE_VARINT = 0
const WIRE_I64 = 1
const WIRE_LEN = 2
const WIRE_I32 = 5

/** A varint at `pos`: its value (exact up to 2^53) and the position after it. */
function varint(buf: Buffer, pos: number): [number, number] {
  let value = 0
  let scale = 1
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint')
    const byte = buf[pos++]!
    value += (byte & 0x7f) * scale
    if (byte < 0x80) return [value, pos]
    scale *= 128
    if (scale > 2 ** 63) throw new Error('varint too long')
  }
}

/** Calls `each` for every field of the message in buf[start, end): its number, wire type, and value (LEN: the bytes' range; VARINT: the number). */
function fields(
  buf: Buffer,
  start: number,
  end: number,
  each: (field: number, wire: number, from: number, to: number, value: number) => void,
): void {
  let pos = start
  while (pos < end) {
    const [tag, afterTag] = varint(buf, pos)
    const field = Math.floor(tag / 8)
    const wire = tag % 8
    pos = afterTag
    if (wire === WIRE_VARINT) {
      const [value, next] = varint(buf, pos)
      each(field, wire, pos, next, value)
      pos = next
    } else if (wire === WIRE_LEN) {
      const [length, from] = varint(buf, pos)
      const to = from + length
      if (to > end) throw new Error('truncated field')
      each(field, wire, from, to, length)
      pos = to
    } else if (wire === WIRE_I64) pos += 8
    else if (wire === WIRE_I32) pos += 4
    else throw new Error(`unsupported wire type ${wire}`)
  }
  if (pos !== end) throw new Error('field runs past its message')
}

function countProtobuf(buf: Buffer): { spans: number; server: number } {
  let spans = 0
  let server = 0
  fields(buf, 0, buf.length, (f1, w1, rsFrom, rsTo) => {
    if (f1 !== 1 || w1 !== WIRE_LEN) return
    fields(buf, rsFrom, rsTo, (f2, w2, ssFrom, ssTo) => {
      if (f2 !== 2 || w2 !== WIRE_LEN) return
      fields(buf, ssFrom, ssTo, (f3, w3, spanFrom, spanTo) => {
        if (f3 !== 2 || w3 !== WIRE_LEN) return
        spans++
        fields(buf, spanFrom, spanTo, (f4, w4, _from, _to, value) => {
          if (f4 === 6 && w4 === WIRE_VARINT && value === SERVER_KIND) server++
        })
      })
    })
  })
  return { spans, server }
}

interface JsonExport {
  resourceSpans?: { scopeSpans?: { spans?: { kind?: number | string }[] }[] }[]
}

function countJson(buf: Buffer): { spans: number; server: number } {
  let spans = 0
  let server = 0
  const body = JSON.parse(buf.toString('utf8')) as JsonExport
  for (const rs of body.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? []) {
        spans++
        if (span.kind === SERVER_KIND || span.kind === 'SPAN_KIND_SERVER') server++
      }
  return { spans, server }
}

function take(contentType: string, encoding: string | undefined, body: Buffer): void {
  stats.exports++
  stats.bytes += body.length
  stats.contentTypes[contentType] = (stats.contentTypes[contentType] ?? 0) + 1
  try {
    const plain = encoding === 'gzip' ? gunzipSync(body) : body
    const { spans, server } = contentType.startsWith('application/json') ? countJson(plain) : countProtobuf(plain)
    stats.spans += spans
    stats.serverSpans += server
  } catch {
    stats.undecoded++
  }
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats))
    return
  }
  if (req.method !== 'POST' || req.url !== '/v1/traces') {
    req.resume()
    res.writeHead(404, { 'content-length': 0 }).end()
    return
  }
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const contentType = String(req.headers['content-type'] ?? '')
    if (HANG) {
      take(contentType, req.headers['content-encoding'], Buffer.concat(chunks))
      return // never answered
    }
    if (contentType.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    else res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end()
    take(contentType, req.headers['content-encoding'], Buffer.concat(chunks))
  })
})
server.keepAliveTimeout = 60_000
// Hanging: a request read whole is held open until the client gives up.
if (HANG) server.requestTimeout = 0

server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1')
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
