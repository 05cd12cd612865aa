// Baseline: a bare node:http server doing the benchmarked jobs from memory, run as its own process:
// GET /v1/inventory (precomputed bytes), PATCH /v1/inventory/{petId} and POST /v1/store/orders (a Map).
// Env: see ceiling-job.ts, which it shares with fastify-server.ts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { JSON_TYPE, MAX_QUANTITY, ORDERS_PATH, byId, expectedAuth, host, listBody, placeOrder, port } from './ceiling-job.js'

const PATCH_PATH = /^\/v1\/inventory\/(\d+)$/

function send(res: ServerResponse, status: number, body: string | Buffer, location?: string): void {
  const headers: Record<string, string | number> = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) }
  if (location !== undefined) headers.location = location
  res.writeHead(status, headers)
  res.end(body)
}

function error(res: ServerResponse, status: number, message: string): void {
  send(res, status, JSON.stringify({ statusCode: status, error: message, message }))
}

function patch(req: IncomingMessage, res: ServerResponse, petId: number): void {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    let quantity: unknown
    try {
      quantity = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { quantity?: unknown }).quantity
    } catch {
      error(res, 400, 'Bad Request')
      return
    }
    if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 0 || quantity > MAX_QUANTITY) {
      error(res, 400, 'Bad Request')
      return
    }
    const item = byId.get(petId)
    if (item === undefined) {
      error(res, 404, 'Not Found')
      return
    }
    const updated = { petId, quantity, status: item.status }
    byId.set(petId, updated)
    send(res, 200, JSON.stringify(updated))
  })
}

function order(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    let body: { petId?: unknown; quantity?: unknown } | null
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body
    } catch {
      error(res, 400, 'Bad Request')
      return
    }
    const outcome = typeof body === 'object' && body !== null ? placeOrder(body.petId, body.quantity) : placeOrder(undefined, undefined)
    if (outcome.status === 201) send(res, 201, JSON.stringify(outcome.order), outcome.location)
    else send(res, outcome.status, JSON.stringify(outcome.error))
  })
}

const server = createServer((req, res) => {
  const url = req.url ?? '/'
  if (req.method === 'GET' && url === '/v1/openapi.json') {
    send(res, 200, '{}') // readiness probe, same path as the service's
    return
  }
  if (req.headers.authorization !== expectedAuth) {
    error(res, 401, 'Unauthorized')
    return
  }
  if (req.method === 'GET' && url === '/v1/inventory') {
    send(res, 200, listBody)
    return
  }
  if (req.method === 'POST' && url === ORDERS_PATH) {
    order(req, res)
    return
  }
  const match = req.method === 'PATCH' ? PATCH_PATH.exec(url) : null
  if (match?.[1] !== undefined) {
    patch(req, res, Number(match[1]))
    return
  }
  error(res, 404, 'Not Found')
})

server.listen(port, host)
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
