import type { FastifyReply, FastifyRequest } from 'fastify'
import type { UnavailableReason } from '../errors.js'
import { parseInt64 } from '../int64.js'
import { logRefusal } from './errors.js'

/**
 * How long a change stream's client that is refused for now waits before it comes back: at least
 * RECONNECT_MIN_MS, plus up to RECONNECT_SPREAD_MS at random, so the clients of an instance that
 * restarts or sheds load do not all return in the same instant (and a drain of a few seconds is
 * mostly over when they do).
 */
export const RECONNECT_MIN_MS = 2000
export const RECONNECT_SPREAD_MS = 3000

/** A wait from RECONNECT_MIN_MS to RECONNECT_MIN_MS + RECONNECT_SPREAD_MS, in whole milliseconds. */
export function reconnectDelayMs(random: () => number = Math.random): number {
  return RECONNECT_MIN_MS + Math.floor(random() * (RECONNECT_SPREAD_MS + 1))
}

/**
 * Where the stream request asked to start: a valid Last-Event-ID, else a valid `after` (parsed by
 * validation or still text, for a refusal that comes before it), else nowhere.
 */
export function resumePoint(request: FastifyRequest): bigint | undefined {
  const lastEventId = request.headers['last-event-id']
  // An empty Last-Event-ID is none (the SSE specification's reset); a list is no id at all.
  if (typeof lastEventId === 'string' && lastEventId !== '') return seq(lastEventId)
  const after = (request.query as { after?: unknown } | undefined)?.after
  return typeof after === 'bigint' ? after : typeof after === 'string' ? seq(after) : undefined
}

function seq(text: string): bigint | undefined {
  const value = parseInt64(text)
  return value !== undefined && value >= 0n ? value : undefined
}

/**
 * Refuses a change stream for now, in the one way every EventSource retries. The EventSource standard
 * fails a connection for good on any answer other than a 200 `text/event-stream` (a 503 and a 204
 * too), and reconnects after a stream that ends; so the refusal is a 200 stream that ends at once,
 * holding a comment saying why, the `retry:` to wait, and the `id:` the request asked to resume
 * after, when it named one (a client keeps its last event id across a block without one, but a
 * client that resets it for a new response gets it back). `Connection: close`: the reconnection
 * opens a new connection, which a balancer may send to another instance.
 */
export function sendReconnect(reply: FastifyReply, reason: UnavailableReason, detail: string): FastifyReply {
  const retryMs = reconnectDelayMs()
  const resume = resumePoint(reply.request)
  logRefusal(reply.request, reason, detail, { retryMs })
  // A comment is one line: a line break in it would start a field.
  const comment = detail.replace(/[\r\n]+/g, ' ')
  return reply
    .code(200)
    .header('content-type', 'text/event-stream')
    .header('cache-control', 'no-store')
    .header('connection', 'close')
    .send(`: ${comment}\nretry: ${retryMs}\n${resume === undefined ? '' : `id: ${resume}\n`}\n`)
}
