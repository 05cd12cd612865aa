import { createHash, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bearerToken } from '../bearer-token.js'
import type { Scrape } from './metrics.js'

/** The pino methods the listener logs with. */
interface Log {
  info(details: object, message: string): void
  error(details: object, message: string): void
}

const digest = (text: string) => createHash('sha256').update(text).digest()
/** Compared as digests, in constant time, so neither the token's length nor its bytes leak through timing. */
const sameDigest = (expected: Buffer, given: string | undefined) => given !== undefined && timingSafeEqual(expected, digest(given))

export interface MetricsServer {
  url: string
  /** Stops listening; resolves once the scrapes in progress are answered. */
  close(): Promise<void>
}

/**
 * The metrics listener, on METRICS_PORT: `GET /metrics` answers Prometheus text, anything else 404.
 * A port of its own, so the metrics are never public by accident: a firewall or a Kubernetes Service
 * exposes the API port alone. A bare node:http server rather than a second Fastify app: one route,
 * none of the API's hooks (admission, keys, the request log and metrics, so scrapes are not counted as
 * traffic), and the `--workers` primary, which builds no app, serves it the same way.
 */
export async function startMetricsServer(
  scrape: Scrape,
  where: { host: string; port: number; token: string },
  log: Log,
): Promise<MetricsServer> {
  const expected = where.token ? digest(where.token) : undefined
  const server = createServer({ requestTimeout: 10_000, headersTimeout: 10_000 }, (request, response) => {
    const path = request.url?.split('?')[0]
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at GET /metrics\n')
      return
    }
    if (expected && !sameDigest(expected, bearerToken(request.headers.authorization))) {
      response
        .writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer realm="metrics"' })
        .end('Unauthorized: send Authorization: Bearer <METRICS_TOKEN>\n')
      return
    }
    scrape.collect().then(
      (text) => response.writeHead(200, { 'content-type': scrape.contentType }).end(request.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        log.error({ err: error }, 'metrics collection failed')
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics collection failed\n')
      },
    )
  })
  server.listen(where.port, where.host)
  await once(server, 'listening')
  const { address, family, port } = server.address() as AddressInfo
  const url = `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`
  log.info({ url }, `Metrics listening at ${url}`)
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        // Idle keep-alive connections (Prometheus keeps one) are closed at once; a scrape in progress is answered.
        server.close(() => resolve())
        server.closeIdleConnections()
      }),
  }
}
