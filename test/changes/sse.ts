// A small Server-Sent Events client for the change-stream suites: one request on a connection of its
// own (node:http, no agent), the response parsed strictly into its blocks as they arrive, closable
// at any time; and the bounded waits the suites use.
import assert from 'node:assert/strict'
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import { parseExact } from '../support/helpers.js'

export interface SseEvent {
  id: string
  event: string
  data: string
}

/** One block of the stream, as the server wrote it. */
export type SseBlock =
  | { kind: 'retry'; ms: number; id: string }
  | { kind: 'comment'; text: string; at: number }
  | ({ kind: 'event' } & SseEvent)
  /** The whole answer to a stream refused for now: why, the wait before coming back, and the id asked for. */
  | { kind: 'reconnect'; reason: string; ms: number; id: string | undefined }

export interface OpenOptions {
  token?: string
  /** The query string, without `?`. */
  query?: string
  lastEventId?: string
  /** Reads one chunk, then waits this long before reading on (a slow reader). */
  readDelayMs?: number
}

/** Polls `check` every 10 ms until it returns something other than undefined/false, or fails after `ms`. */
export async function until<T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (performance.now() > deadline) assert.fail(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** A change stream's response: its status and headers, then its blocks as they come. */
export class SseClient {
  readonly blocks: SseBlock[] = []
  /** Every byte received, as text. */
  raw = ''
  /** Text after the last complete block. */
  private pending = ''
  status = 0
  headers: IncomingHttpHeaders = {}
  /** The body of a response other than 200, parsed. */
  body: any
  ended = false
  /** Whether the response ended in full (its last chunk came), rather than its connection breaking. */
  complete = false
  /** performance.now() when the response ended (or the connection closed). */
  endedAt: number | undefined
  private closing = false
  private readonly done: Promise<void>
  private finish!: () => void

  constructor(private readonly socketOf: () => Socket | undefined) {
    this.done = new Promise((resolve) => (this.finish = resolve))
  }

  get events(): SseEvent[] {
    return this.blocks.filter((b): b is { kind: 'event' } & SseEvent => b.kind === 'event')
  }

  /** The id of the last complete event (what an EventSource would send as Last-Event-ID). */
  get lastId(): string | undefined {
    return this.events.at(-1)?.id
  }

  get comments(): Extract<SseBlock, { kind: 'comment' }>[] {
    return this.blocks.filter((b): b is Extract<SseBlock, { kind: 'comment' }> => b.kind === 'comment')
  }

  /** The answer's only block when the stream was refused for now (told to reconnect), else undefined. */
  get reconnect(): Extract<SseBlock, { kind: 'reconnect' }> | undefined {
    const [first, ...rest] = this.blocks
    if (first?.kind !== 'reconnect') return undefined
    assert.equal(rest.length, 0, 'nothing follows a reconnect block')
    return first
  }

  /** @internal */
  receive(text: string): void {
    this.raw += text
    this.pending += text
    for (;;) {
      const at = this.pending.indexOf('\n\n')
      if (at < 0) break
      const block = this.pending.slice(0, at)
      this.pending = this.pending.slice(at + 2)
      this.blocks.push(parseBlock(block))
    }
  }

  /** @internal */
  end(): void {
    if (this.ended) return
    this.ended = true
    this.endedAt = performance.now()
    this.finish()
  }

  /** Resolves when the response has ended (or its connection closed). */
  closed(): Promise<void> {
    return this.done
  }

  /** Whether the server ended it (rather than this client). */
  get endedByServer(): boolean {
    return this.ended && !this.closing
  }

  /** Closes the connection (the client goes away); a partial block is dropped, as EventSource does. */
  close(): Promise<void> {
    this.closing = true
    this.socketOf()?.destroy()
    return this.done
  }
}

/**
 * Parses one block strictly: `retry: N` with the start's `id`, a comment line, `id`, `event: change`,
 * `data` in that order, or a refusal's comment with `retry` and maybe the `id` asked for.
 */
function parseBlock(block: string): SseBlock {
  const reconnect = /^: ([^\n]+)\nretry: (\d+)(?:\nid: (0|[1-9]\d*))?$/.exec(block)
  if (reconnect) return { kind: 'reconnect', reason: reconnect[1]!, ms: Number(reconnect[2]), id: reconnect[3] }
  if (block.startsWith(':')) {
    assert.ok(!block.includes('\n'), `a comment block of one line: ${JSON.stringify(block)}`)
    return { kind: 'comment', text: block, at: performance.now() }
  }
  const retry = /^retry: (\d+)\nid: (0|[1-9]\d*)$/.exec(block)
  if (retry) return { kind: 'retry', ms: Number(retry[1]), id: retry[2]! }
  const event = /^id: (\d+)\nevent: change\ndata: ([^\n]*)$/.exec(block)
  assert.ok(event, `not a change event: ${JSON.stringify(block.slice(0, 300))}`)
  return { kind: 'event', id: event[1]!, event: 'change', data: event[2]! }
}

/**
 * GET /v1/inventory/changes/stream on a connection of its own; resolves once the status and headers
 * are in (with the whole body read and parsed when the status is not 200).
 */
export function openStream(baseUrl: string, options: OpenOptions = {}): Promise<SseClient> {
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId
  const url = `${baseUrl}/v1/inventory/changes/stream${options.query ? `?${options.query}` : ''}`
  let socket: Socket | undefined
  const client = new SseClient(() => socket)
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers }, (res) => {
      client.status = res.statusCode!
      client.headers = res.headers
      res.setEncoding('utf8')
      res.on('end', () => (client.complete = true))
      res.on('close', () => client.end())
      res.on('error', () => client.end())
      if (client.status !== 200) {
        let text = ''
        res.on('data', (d) => (text += d))
        res.on('end', () => {
          client.raw = text
          client.body = res.headers['content-type']?.startsWith('application/json') ? parseExact(text) : undefined
          client.end()
          resolve(client)
        })
        return
      }
      res.on('data', (d: string) => {
        client.receive(d)
        if (options.readDelayMs) {
          res.pause()
          setTimeout(() => res.resume(), options.readDelayMs)
        }
      })
      resolve(client)
    })
    req.on('socket', (s) => (socket = s))
    req.on('error', (error) => {
      client.end()
      if (client.status === 0) reject(error)
    })
    req.end()
  })
}

/**
 * A client that sends the request on a raw socket, reads the response's head and first bytes, and
 * then stops reading (socket.pause()): the kernel's buffers fill, then the server's.
 */
export async function openPausedStream(
  baseUrl: string,
  token: string,
): Promise<{ socket: Socket; head: string; closedAt: () => number | undefined }> {
  const { hostname, port } = new URL(baseUrl)
  const socket = connect(Number(port), hostname)
  let head = ''
  let closedAt: number | undefined
  socket.on('close', () => (closedAt = performance.now()))
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.on('data', function onData(d: Buffer) {
      head += d.toString('latin1')
      if (/retry: 1000\nid: \d+\n\n/.test(head)) {
        socket.pause()
        socket.off('data', onData)
        resolve()
      }
    })
    socket.write(
      `GET /v1/inventory/changes/stream HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
    )
  })
  return { socket, head, closedAt: () => closedAt }
}

/** The feed's rows after `after` as its raw JSON texts, page by page (the Link headers followed), exactly as sent. */
export async function feedTexts(baseUrl: string, token: string, after: bigint | number, petId?: bigint | number): Promise<string[]> {
  const rows: string[] = []
  let cursor = BigInt(after)
  for (;;) {
    const res = await fetch(`${baseUrl}/v1/inventory/changes?after=${cursor}&limit=1000${petId === undefined ? '' : `&petId=${petId}`}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    const link = res.headers.get('link')
    // Rows have no nested arrays or objects: split the array's text at the boundaries between rows.
    const page = text === '[]' ? [] : text.slice(1, -1).split(/(?<=\}),(?=\{"seq":)/)
    rows.push(...page)
    if (!link) return rows
    cursor = BigInt(/after=(\d+)/.exec(link)![1]!)
  }
}

/** The seq of the feed's last row (0 when it is empty). */
export async function feedEnd(baseUrl: string, token: string): Promise<bigint> {
  const rows = await feedTexts(baseUrl, token, 0)
  return rows.length === 0 ? 0n : BigInt(/^\{"seq":(\d+),/.exec(rows.at(-1)!)![1]!)
}

/** The seq in a row's JSON text. */
export function seqOf(rowText: string): bigint {
  return BigInt(/^\{"seq":(\d+),/.exec(rowText)![1]!)
}
