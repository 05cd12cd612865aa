// Baseline: a bare node:http server doing the benchmarked jobs from memory, run as its own process.
// Env: PORT, HOST, BARE_TOKEN (API token), BARE_INVENTORY (JSON array file),
// BARE_BODY (optional file holding the exact GET /v1/inventory response bytes; else JSON.stringify of the sorted items).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { readFileSync } from 'node:fs'

interface Item { petId: number, quantity: number, status: string }

function required(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`bare-server: env ${name} is required`)
  return value
}

const port = Number(required('PORT'))
const host = process.env['HOST'] ?? '127.0.0.1'
const expectedAuth = `Bearer ${required('BARE_TOKEN')}`
const items = (JSON.parse(readFileSync(required('BARE_INVENTORY'), 'utf8')) as Item[])
  .map(({ petId, quantity, status }) => ({ petId, quantity, status }))
  .sort((a, b) => a.petId - b.petId)
const bodyFile = process.env['BARE_BODY']
const listBody: Buffer = bodyFile ? readFileSync(bodyFile) : Buffer.from(JSON.stringify(items))
const byId = new Map<number, Item>(items.map((item) => [item.petId, item]))

const JSON_TYPE = 'application/json; charset=utf-8'
const PATCH_PATH = /^\/v1\/inventory\/(\d+)$/
const MAX_QUANTITY = 2_147_483_647

function send(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) })
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
