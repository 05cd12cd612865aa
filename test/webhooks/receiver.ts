// A webhook receiver of the test's own: a node:http server on 127.0.0.1, port 0, that records every
// request (headers and body) and answers as the test says; and checks of the messages it got.
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { parseExact } from '../support/helpers.js'

export interface Received {
  headers: http.IncomingHttpHeaders
  body: string
  at: number
}

/** How to answer one request: a status, or a function of the response (to hang, stream, redirect). */
export type Answer = number | ((req: http.IncomingMessage, res: http.ServerResponse) => void)

export class Receiver {
  readonly requests: Received[] = []
  /** What the next requests are answered with; 200 by default. */
  answer: (request: Received, n: number) => Answer = () => 200
  private readonly server: http.Server
  private readonly sockets = new Set<import('node:net').Socket>()

  private constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
        this.requests.push(received)
        const answer = this.answer(received, this.requests.length)
        if (typeof answer === 'number') res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok')
        else answer(req, res)
      })
    })
    this.server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver()
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve))
    return receiver
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`
  }

  /** The messages received, parsed: seq of each (from data), webhook-id, body. */
  messages(): { seq: number; id: string; body: string; headers: http.IncomingHttpHeaders }[] {
    return this.requests.map((r) => ({
      seq: Number(JSON.parse(r.body).data.seq),
      id: String(r.headers['webhook-id']),
      body: r.body,
      headers: r.headers,
    }))
  }

  seqs(): number[] {
    return this.messages().map((m) => m.seq)
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise((resolve) => this.server.close(resolve))
  }
}

/** Polls `check` until it returns something other than undefined/false, or fails after `ms` naming `what`. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  ms: number,
  what: string | (() => string),
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value as Exclude<T, false | undefined>
    if (Date.now() > deadline) assert.fail(`${typeof what === 'string' ? what : what()}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

const ID = /^msg_[0-9a-f]{16}_[1-9]\d*$/
const TIMESTAMP = /^[1-9]\d{9}$/
// 32 bytes of HMAC-SHA256 in base64: 43 characters and one '='.
const SIGNATURE = /^v1,[A-Za-z0-9+/]{43}=$/
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/

/**
 * Checks one received message as Standard Webhooks 1.0 says, and as the issue says: its headers'
 * formats exactly, its signature with the `standardwebhooks` package under `secret`, and its body
 * `{"type":"inventory.changed","timestamp":…,"data":<row>}` where <row> is `rowText`, the row's text
 * as GET /v1/inventory/changes writes it. Returns the body parsed.
 */
export function assertMessage(message: Received, secret: string, rowText: string): any {
  const h = message.headers
  assert.match(String(h['webhook-id']), ID)
  assert.match(String(h['webhook-timestamp']), TIMESTAMP)
  assert.ok(Math.abs(Number(h['webhook-timestamp']) - message.at / 1000) < 60, 'the timestamp is the attempt’s time')
  assert.match(String(h['webhook-signature']), SIGNATURE)
  assert.match(String(h['content-type']), /^application\/json/)
  const headers = {
    'webhook-id': String(h['webhook-id']),
    'webhook-timestamp': String(h['webhook-timestamp']),
    'webhook-signature': String(h['webhook-signature']),
  }
  const verified = new Webhook(secret).verify(message.body, headers)
  assert.throws(() => new Webhook(secret).verify(`${message.body} `, headers), 'a changed body fails verification')
  assert.equal(message.body, `{"type":"inventory.changed","timestamp":${JSON.stringify(JSON.parse(rowText).at)},"data":${rowText}}`)
  const body = parseExact(message.body) as any
  assert.deepEqual(verified, JSON.parse(message.body))
  assert.equal(body.type, 'inventory.changed')
  assert.match(body.timestamp, RFC3339)
  assert.equal(h['webhook-id'], `${String(h['webhook-id']).replace(/_\d+$/, '')}_${body.data.seq}`, 'the id names the row')
  return body
}

/**
 * The rows of GET /v1/inventory/changes?after=… as the feed writes them: each row's exact text,
 * by seq (the feed's array split at its top level).
 */
export function rowTexts(feedText: string): Map<number, string> {
  const texts = new Map<number, string>()
  let depth = 0
  let start = -1
  let inString = false
  for (let i = 0; i < feedText.length; i++) {
    const c = feedText[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === '{') {
      if (depth++ === 0) start = i
    } else if (c === '}' && --depth === 0) {
      const text = feedText.slice(start, i + 1)
      texts.set(Number(JSON.parse(text).seq), text)
    }
  }
  return texts
}

/** Asserts seqs arrived in non-decreasing order, covering `expected` exactly, with at most `duplicates` repeats. */
export function assertInOrder(seqs: number[], expected: number[], duplicates: number, what: string) {
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! >= seqs[i - 1]!, `${what}: in seq order (${seqs.join(',')})`)
  assert.deepEqual([...new Set(seqs)], expected, `${what}: every row, none lost`)
  assert.ok(seqs.length - expected.length <= duplicates, `${what}: at most ${duplicates} repeated (${seqs.join(',')})`)
}
