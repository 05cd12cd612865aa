// The change stream (`text/event-stream`) read with fetch, so it carries the Authorization header in
// a browser too. It reconnects after a drop with `Last-Event-ID` (the last seq seen, or the seq the
// stream started after, which the service sends first), so no row is missed, and yields a row only
// if its seq is past the last one yielded, so none is repeated.
import { PetstoreError } from './errors.js'
import { parseExact } from './json.js'
import { type CallOptions, sleep, type Transport } from './transport.js'
import type { InventoryChange } from './types.js'

export interface StreamOptions extends Pick<CallOptions, 'signal'> {
  /** Start after this seq (default: at the current end). */
  after?: bigint
  /** Only this pet's rows. */
  petId?: bigint
  /** A connection with no bytes for this long is dropped and made again (default 45,000 ms: three heartbeats). */
  idleTimeoutMs?: number
  /** Called when the connection drops and when it is back, for a "disconnected" indicator. */
  onConnection?: (state: 'connected' | 'disconnected', error?: unknown) => void
}

interface Block {
  event: string
  data: string[]
  id: string | undefined
  retry: number | undefined
}

/** The longest line the stream may send (a change is well under 4 KiB); past it the connection is dropped. */
const MAX_LINE = 1024 * 1024

export async function* streamChanges(transport: Transport, options: StreamOptions = {}): AsyncGenerator<InventoryChange, void, undefined> {
  const { signal, petId, onConnection } = options
  const idleMs = options.idleTimeoutMs ?? 45_000
  let last = options.after
  let retryMs = 1000
  // Connections in a row that ended before a change came: the wait before the next one doubles with each.
  let failures = 0
  while (!signal?.aborted) {
    const connection = new AbortController()
    const abort = () => connection.abort(signal?.reason)
    signal?.addEventListener('abort', abort, { once: true })
    let askedMs = 0
    try {
      const response = await transport.open({
        method: 'GET',
        path: 'inventory/changes/stream',
        query: { petId },
        headers: { accept: 'text/event-stream', ...(last === undefined ? {} : { 'last-event-id': String(last) }) },
        repeat: 'safe',
        options: { signal: connection.signal, maxRetries: 0 },
      })
      const type = response.headers.get('content-type') ?? ''
      if (!/^text\/event-stream\b/i.test(type)) {
        await response.body?.cancel()
        throw new PetstoreError(
          response.status,
          'invalid_response',
          `The stream answered ${type || 'no content type'}, not text/event-stream`,
          undefined,
        )
      }
      onConnection?.('connected')
      for await (const block of blocks(response, connection, idleMs)) {
        // The service's reconnection delay, within reason (0 would reconnect in a tight loop).
        if (block.retry !== undefined) retryMs = Math.min(30_000, Math.max(250, block.retry))
        if (block.event === 'change' && block.data.length > 0) {
          const change = parseExact<InventoryChange>(block.data.join('\n'))
          failures = 0
          if (last !== undefined && change.seq <= last) continue
          last = change.seq
          yield change
        } else if (block.id !== undefined && /^\d+$/.test(block.id)) {
          // The first block: where this stream starts.
          const start = BigInt(block.id)
          if (last === undefined || start > last) last = start
        }
      }
      // The service ended the stream (its instance is shutting down): reconnect, to another instance.
      onConnection?.('disconnected')
    } catch (error) {
      if (signal?.aborted) return
      if (error instanceof PetstoreError && !retried(error)) throw error
      onConnection?.('disconnected', error)
      if (error instanceof PetstoreError && error.retryAfter !== undefined) askedMs = error.retryAfter * 1000
    } finally {
      connection.abort()
      signal?.removeEventListener('abort', abort)
    }
    // The service's retry, doubled for each connection in a row that brought no change (up to 30 s),
    // with jitter, so the clients of a restarted instance do not all come back in the same instant.
    const backoff = Math.min(30_000, retryMs * 2 ** Math.min(failures, 5)) * (0.75 + Math.random() / 2)
    failures++
    try {
      await sleep(Math.max(askedMs, backoff), signal)
    } catch {
      return
    }
  }
}

/** 503 (shutting down, overloaded), a gateway's 502/504 and 429 rate_limited pass; too_many_streams, 4xx and the rest are the caller's to see. */
function retried(error: PetstoreError): boolean {
  return error.status === 503 || error.status === 502 || error.status === 504 || error.code === 'rate_limited'
}

/** The stream's blocks (events, and the first block's retry and id), parsed as the SSE specification says. */
async function* blocks(response: Response, connection: AbortController, idleMs: number): AsyncGenerator<Block, void, undefined> {
  if (response.body === null) return
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let idle: ReturnType<typeof setTimeout> | undefined
  const watch = () => {
    clearTimeout(idle)
    idle = setTimeout(() => connection.abort(new DOMException(`no bytes for ${idleMs} ms`, 'TimeoutError')), idleMs)
  }
  let buffer = ''
  let block: Block = { event: '', data: [], id: undefined, retry: undefined }
  let fields = false
  const lineEnd = /\r\n|\r|\n/g
  try {
    watch()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      const scanFrom = Math.max(0, buffer.length - 1) // a CR ending the last chunk may pair with an LF
      buffer += decoder.decode(value, { stream: true })
      lineEnd.lastIndex = scanFrom
      let consumed = 0
      const ready: Block[] = []
      for (let match = lineEnd.exec(buffer); match !== null; match = lineEnd.exec(buffer)) {
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (match[0] === '\r' && match.index === buffer.length - 1) break
        const line = buffer.slice(consumed, match.index)
        consumed = match.index + match[0].length
        if (line === '') {
          if (fields) ready.push(block)
          block = { event: '', data: [], id: undefined, retry: undefined }
          fields = false
          continue
        }
        if (line.startsWith(':')) continue
        const colon = line.indexOf(':')
        const name = colon < 0 ? line : line.slice(0, colon)
        const field = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1))
        fields = true
        if (name === 'data') block.data.push(field)
        else if (name === 'event') block.event = field
        else if (name === 'id' && !field.includes('\0')) block.id = field
        else if (name === 'retry' && /^\d+$/.test(field)) block.retry = Number(field)
      }
      buffer = buffer.slice(consumed)
      if (buffer.length > MAX_LINE) throw new Error(`The stream sent a line over ${MAX_LINE} characters`)
      // The idle clock stops while the consumer holds a row: a slow consumer is not a silent stream.
      clearTimeout(idle)
      yield* ready
      watch()
    }
  } finally {
    clearTimeout(idle)
    await reader.cancel().catch(() => {})
  }
}
