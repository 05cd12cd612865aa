// Baseline for the live-changes scenarios: a bare node:http server doing their job from memory, run as
// its own process. PATCH /v1/inventory/{petId} updates a Map and numbers the change (seq); the change
// goes, as the same Server-Sent Event bytes the service writes, to every open
// GET /v1/inventory/changes/stream (one shared Buffer per change), and, with BARE_WEBHOOK_URL, into a
// queue that one keep-alive connection POSTs in seq order, one message at a time, each signed like the
// service's (Standard Webhooks, BARE_WEBHOOK_SECRET): no database, no durable cursor. GET
// /v1/inventory/changes?after=A&limit=L answers the seqs after A (only `seq`), so the bench finds the end alike.
// Env: PORT, HOST, BARE_TOKEN, BARE_INVENTORY (ceiling-job.ts), BARE_WEBHOOK_URL, BARE_WEBHOOK_SECRET.
import { createHmac } from 'node:crypto'
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { JSON_TYPE, MAX_QUANTITY, byId, expectedAuth, host, port } from './ceiling-job.js'

const PATCH_PATH = /^\/v1\/inventory\/(\d+)$/
const CHANGES_PATH = /^\/v1\/inventory\/changes\?after=(\d+)&limit=(\d+)$/
const STREAM_PATH = '/v1/inventory/changes/stream'
const PREAMBLE = Buffer.from('retry: 1000\n\n')
/** Changes the webhook queue holds at most; past it they are counted as dropped (the bench reports gaps). */
const QUEUE_MAX = 1_000_000

let seq = 0
const streams = new Set<ServerResponse>()
const webhookUrl = process.env.BARE_WEBHOOK_URL ? new URL(process.env.BARE_WEBHOOK_URL) : undefined
const webhookKey = Buffer.from((process.env.BARE_WEBHOOK_SECRET ?? 'whsec_').replace(/^whsec_/, ''), 'base64')
const queue: { seq: number; data: string }[] = []
let posting = false
const agent = new Agent({ keepAlive: true, maxSockets: 1 })

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

/** POSTs the queue's head until it is empty; a failure is retried after 100 ms. */
function post(): void {
  const next = queue[0]
  if (webhookUrl === undefined || next === undefined) {
    posting = false
    return
  }
  posting = true
  const id = `msg_bare_${next.seq}`
  const timestamp = Math.floor(Date.now() / 1000)
  const body = `{"type":"inventory.changed","timestamp":"${new Date().toISOString()}","data":${next.data}}`
  const signature = `v1,${createHmac('sha256', webhookKey).update(`${id}.${timestamp}.${body}`).digest('base64')}`
  const req = request(webhookUrl, {
    method: 'POST',
    agent,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    },
  })
  req.once('response', (res) => {
    res.resume()
    res.once('end', () => {
      if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) queue.shift()
      post()
    })
  })
  req.once('error', () => setTimeout(post, 100))
  req.end(body)
}

function patch(req: IncomingMessage, res: ServerResponse, petId: number): void {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    let quantity: unknown
    try {
      quantity = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { quantity?: unknown }).quantity
    } catch {
      send(res, 400, '{"message":"Bad Request"}')
      return
    }
    if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 0 || quantity > MAX_QUANTITY) {
      send(res, 400, '{"message":"Bad Request"}')
      return
    }
    const item = byId.get(petId)
    if (item === undefined) {
      send(res, 404, '{"message":"Not Found"}')
      return
    }
    const updated = { petId, quantity, status: item.status }
    byId.set(petId, updated)
    const change = ++seq
    const data =
      `{"seq":${change},"petId":${petId},"previousQuantity":${item.quantity},"quantity":${quantity},"reason":"update",` +
      `"note":null,"orderId":null,"keyId":1,"requestId":null,"at":"${new Date().toISOString()}"}`
    if (streams.size > 0) {
      const event = Buffer.from(`id: ${change}\nevent: change\ndata: ${data}\n\n`)
      for (const stream of streams) stream.write(event)
    }
    if (webhookUrl !== undefined && queue.length < QUEUE_MAX) {
      queue.push({ seq: change, data })
      if (!posting) post()
    }
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
    send(res, 401, '{"message":"Unauthorized"}')
    return
  }
  if (req.method === 'GET' && url === STREAM_PATH) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
    res.write(PREAMBLE)
    streams.add(res)
    res.once('close', () => streams.delete(res))
    return
  }
  const page = req.method === 'GET' ? CHANGES_PATH.exec(url) : null
  if (page !== null) {
    // Where the changes end, the way the bench pages the service's feed: the seqs after `after`, up to `limit`.
    const after = Number(page[1])
    const through = Math.min(seq, after + Number(page[2]))
    send(res, 200, `[${Array.from({ length: Math.max(0, through - after) }, (_, i) => `{"seq":${after + i + 1}}`).join(',')}]`)
    return
  }
  const match = req.method === 'PATCH' ? PATCH_PATH.exec(url) : null
  if (match?.[1] !== undefined) {
    patch(req, res, Number(match[1]))
    return
  }
  send(res, 404, '{"message":"Not Found"}')
})

server.listen(port, host)
process.once('SIGTERM', () => {
  agent.destroy()
  for (const stream of streams) stream.end()
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
