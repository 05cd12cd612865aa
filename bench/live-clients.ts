// Change-stream clients for the live-changes scenarios, run as their own process (forked, with an IPC
// channel) so their work is not the server's: raw TCP sockets, each sending one
// GET /v1/inventory/changes/stream and reading the Server-Sent Events as bytes. Counting is an
// indexOf per chunk; with `record`, each event id's arrival time is kept per socket (epoch ms).
import { connect, type Socket } from 'node:net'

export interface OpenRequest {
  port: number
  token: string
  path: string
  count: number
  /** Keep each event id's arrival times (the 1,000-stream scenario); otherwise only count. */
  record: boolean
}
export type ClientsRequest = { open: OpenRequest } | { collect: number } | { close: true }
export interface ClientsCollected {
  open: number
  /** Sockets that closed or failed after opening. */
  closed: number
  events: number
  bytes: number
  /** Event id -> the arrival time of that event on each socket that got it (epoch ms). */
  arrivals: Record<string, number[]>
}
export type ClientsReply =
  | { opened: number; failed: number; firstError?: string; ms: number }
  | { collected: ClientsCollected; id: number }
  | { closedAll: true }

const OPEN_BATCH = 50
const OPEN_TIMEOUT_MS = 10_000
const CHANGE = Buffer.from('event: change\n')
const ID = /(?:^|\n)id: (\d+)(?:\n|$)/
const now = (): number => performance.timeOrigin + performance.now()

const sockets = new Set<Socket>()
let events = 0
let bytes = 0
let closed = 0
const arrivals = new Map<string, number[]>()

/**
 * The events that end in `chunk`: `edge` is the end of the socket's previous chunk (fewer bytes than
 * the marker), so a marker that a chunk boundary splits is counted once, with the chunk it ends in
 * (at 100,000 events a second a read of 64 KiB splits one about every twentieth time).
 */
function count(edge: Buffer, chunk: Buffer): number {
  const text = edge.length === 0 ? chunk : Buffer.concat([edge, chunk])
  let n = 0
  for (let at = text.indexOf(CHANGE); at !== -1; at = text.indexOf(CHANGE, at + CHANGE.length)) n++
  return n
}

/** The last bytes of what a socket has read, fewer than the marker: the start of a marker the next chunk may end. */
const edgeOf = (edge: Buffer, chunk: Buffer): Buffer =>
  chunk.length >= CHANGE.length - 1
    ? Buffer.from(chunk.subarray(chunk.length - (CHANGE.length - 1)))
    : Buffer.concat([edge, chunk]).subarray(-(CHANGE.length - 1))

/** One stream: resolves once the 200 status line and the first bytes after the headers have come. */
function openOne(request: OpenRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: request.port })
    let head = ''
    let open = false
    let carry = ''
    let edge: Buffer = Buffer.alloc(0)
    const timer = setTimeout(() => fail(new Error(`no answer within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS)
    function fail(error: Error): void {
      clearTimeout(timer)
      socket.destroy()
      reject(error)
    }
    socket.once('connect', () => {
      socket.write(
        `GET ${request.path} HTTP/1.1\r\nHost: 127.0.0.1:${request.port}\r\nAuthorization: Bearer ${request.token}\r\nAccept: text/event-stream\r\n\r\n`,
      )
    })
    socket.on('error', (error) => {
      if (!open) fail(error)
    })
    socket.on('close', () => {
      if (open && sockets.delete(socket)) closed++
    })
    socket.on('data', (chunk: Buffer) => {
      const at = now()
      if (!open) {
        head += chunk.toString('latin1')
        const end = head.indexOf('\r\n\r\n')
        if (end === -1) return
        if (!head.startsWith('HTTP/1.1 200')) return fail(new Error(head.split('\r\n')[0] ?? 'no status line'))
        open = true
        clearTimeout(timer)
        sockets.add(socket)
        resolve()
        chunk = Buffer.from(head.slice(end + 4), 'latin1')
      }
      bytes += chunk.length
      events += count(edge, chunk)
      edge = edgeOf(edge, chunk)
      if (!request.record) return
      const text = carry + chunk.toString('latin1')
      const last = text.lastIndexOf('\n\n')
      carry = last === -1 ? text.slice(-4096) : text.slice(last + 2)
      // Each change's block; not the stream's first, which carries only the id it starts after.
      for (const block of last === -1 ? [] : text.slice(0, last).split('\n\n')) {
        if (!block.includes('event: change')) continue
        const id = block.match(ID)?.[1]
        if (id === undefined) continue
        const times = arrivals.get(id)
        if (times === undefined) arrivals.set(id, [at])
        else times.push(at)
      }
    })
  })
}

async function openAll(request: OpenRequest): Promise<ClientsReply> {
  const started = performance.now()
  let opened = 0
  let failed = 0
  let firstError: string | undefined
  for (let i = 0; i < request.count; i += OPEN_BATCH) {
    const batch = Array.from({ length: Math.min(OPEN_BATCH, request.count - i) }, () => openOne(request))
    for (const outcome of await Promise.allSettled(batch)) {
      if (outcome.status === 'fulfilled') opened++
      else {
        failed++
        firstError ??= outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason)
      }
    }
  }
  return { opened, failed, ms: performance.now() - started, ...(firstError === undefined ? {} : { firstError }) }
}

process.on('message', (m: ClientsRequest) => {
  if ('open' in m) void openAll(m.open).then((reply) => process.send?.(reply))
  else if ('collect' in m) {
    const collected: ClientsCollected = { open: sockets.size, closed, events, bytes, arrivals: Object.fromEntries(arrivals) }
    process.send?.({ collected, id: m.collect } satisfies ClientsReply)
  } else {
    // Closed on purpose: the next target's counts start from zero.
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    events = 0
    bytes = 0
    closed = 0
    arrivals.clear()
    process.send?.({ closedAll: true } satisfies ClientsReply)
  }
})
process.on('disconnect', () => process.exit(0))
process.once('SIGTERM', () => process.exit(0))
