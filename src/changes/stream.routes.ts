import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyError } from 'fastify'
import fp from 'fastify-plugin'
import { assertReachesEverywhere } from '../http/plugins/auth.js'
import { Type } from 'typebox'
import { InvalidInputError, UnavailableError } from '../errors.js'
import { API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { CURSOR_EXPIRED_RESPONSE, errorResponses } from '../http/error.schema.js'
import { handleError } from '../http/errors.js'
import type { Lifecycle } from '../http/lifecycle.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { RECONNECT_MIN_MS, RECONNECT_SPREAD_MS, sendReconnect } from '../http/reconnect.js'
import { requires } from '../http/scopes.js'
import { BIG_PET_ID, Int64Schema } from '../http/int64.schema.js'
import { parseInt64 } from '../int64.js'
import { CHANGE_EXAMPLES } from '../inventory/inventory.schema.js'
import { assertCursorKept, type CursorChecks } from '../inventory/inventory.service.js'
import { type ChangeStream, HEARTBEAT, STREAM_BUFFER_BYTES } from './change-stream.js'
import type { ChangeStreams } from './change-streams.js'
import { changeEvent, type LedgerTail } from './ledger-tail.js'

/** What a new stream says first: how long an EventSource waits before it reconnects (ms). */
const RETRY_MS = 1000
/**
 * The first block: the reconnection delay, and the seq the stream starts after as its `id` (no event
 * is dispatched for a block without data, but a client's last event id is set), so a client that
 * loses the connection before any change resumes from where it started, not at a later end.
 */
const preamble = (start: bigint) => Buffer.from(`retry: ${RETRY_MS}\nid: ${start}\n\n`)
/**
 * How long the drain waits, at most, for the rows committed before it began to reach the open
 * streams before it ends them: a read of where the ledger ends and one read of the tail, unless the
 * database is away (then they end with what they have, and their clients resume from there).
 */
const DRAIN_FLUSH_MS = 500

/**
 * The document's example of a stream: the start of one after the seq before the ledger's example
 * rows, their events, a heartbeat. Written by the writers a real stream uses, so its form cannot drift
 * from what is sent (test/changes/stream-example.test.ts holds it against a real stream all the same).
 */
const STREAM_EXAMPLE = preamble(CHANGE_EXAMPLES[0].seq - 1n).toString() + CHANGE_EXAMPLES.map(changeEvent).join('') + HEARTBEAT.toString()

const StreamQuerySchema = Type.Object(
  {
    after: Type.Optional(
      Int64Schema(
        'Start after this seq (the last one you saw), from 0. Last-Event-ID, when sent, takes its place. Without either: at the current end.',
        { minimum: 0, examples: [1043n] },
      ),
    ),
    petId: Type.Optional(Int64Schema("Only this pet's changes.", { examples: [BIG_PET_ID] })),
  },
  { additionalProperties: false },
)

export interface StreamRoutesOptions {
  streams: ChangeStreams
  tail: LedgerTail
  ledger: CursorChecks
  lifecycle: Lifecycle
}

/** The ledger as a live stream of Server-Sent Events; registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<StreamRoutesOptions> = async (app, { streams, tail, ledger, lifecycle }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  // What only passes (this instance draining, the database away) is answered so that an EventSource
  // comes back, where a 503 would make it give up for good (see http/reconnect.ts).
  app.setErrorHandler((error: FastifyError, request, reply) =>
    error instanceof UnavailableError ? sendReconnect(reply, error.reason, error.message) : handleError(error, request, reply),
  )

  /**
   * Resolves once the tail has handed the open streams every row committed before now (bounded by
   * DRAIN_FLUSH_MS): rows the tail had not read yet (its reads are coalesced, another process's
   * commits are signalled later) would otherwise leave a client that keeps up for another instance.
   */
  const flush = async () => {
    if (streams.size === 0) return
    const signal = AbortSignal.timeout(DRAIN_FLUSH_MS)
    const timeout = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
    const end = await Promise.race([ledger.lastChangeSeq(), timeout])
    tail.wake()
    await tail.beyond(end - 1n, signal)
  }
  // Streams end when the drain starts, with the rows committed before it, and before the listener
  // closes (one would hold the close).
  let ending: Promise<void> | undefined
  const stopListening = lifecycle.onDrain(() => {
    ending = flush()
      .catch(() => {})
      .then(() => streams.endAll())
  })
  app.addHook('preClose', async () => {
    stopListening()
    await ending
    streams.close()
  })

  app.get(
    '/inventory/changes/stream',
    {
      config: { stream: true },
      schema: {
        operationId: 'streamInventoryChanges',
        security: requires('inventory:read'),
        summary: 'Follow the ledger live (Server-Sent Events)',
        description:
          'Every ledger row committed after the start, through any instance or the CLI, as a Server-Sent Event: `id: <seq>`, ' +
          '`event: change`, `data: <the row, as listInventoryChanges writes it>`. It starts after `Last-Event-ID` (the header ' +
          'EventSource sends when it reconnects), else after `after`, else at the current end; a client that reconnects with ' +
          'the last id it saw gets exactly the rows after it, in seq order, on any instance. A comment line comes every ' +
          'STREAM_HEARTBEAT_MS (15 s by default). A client that stops reading is cut off once its buffer (about ' +
          `${STREAM_BUFFER_BYTES / 1024} KiB here, besides the kernel's) has waited two heartbeats; a stream also ends when its ` +
          'instance starts to shut down. Either way, reconnect with Last-Event-ID. When the instance cannot serve a stream ' +
          'now (it is shutting down or overloaded, or its database is unavailable), the answer is still a 200 ' +
          'text/event-stream, since an EventSource gives up for good on any other: a comment saying why, `retry:` (from ' +
          `${RECONNECT_MIN_MS} to ${RECONNECT_MIN_MS + RECONNECT_SPREAD_MS} ms, at random), the \`id:\` the request resumes ` +
          'after (when it names one), then the end of the response and its connection: reconnect after that wait. The error ' +
          'answers below close an EventSource for good. A page cannot use EventSource (it sends no Authorization header): ' +
          'read it with fetch and a ReadableStream (docs/api.md shows how). Keys never go in URLs.',
        tags: ['inventory'],
        querystring: StreamQuerySchema,
        // Canonical case, as the document shows it; validated by its lower-case name (plugins/validation.ts).
        headers: Type.Object({
          'Last-Event-ID': Type.Optional(
            Type.String({
              description: 'The id (seq) of the last event received: the stream resumes after it. Empty: none.',
              examples: ['1043'],
            }),
          ),
        }),
        response: {
          200: {
            description: 'The stream: it stays open until the client closes it or the instance shuts down.',
            content: {
              'text/event-stream': {
                schema: Type.String({
                  description: 'Server-Sent Events: `retry` with the `id` the stream starts after, then `change` events and comment lines.',
                }),
                example: STREAM_EXAMPLE,
              },
            },
          },
          ...errorResponses(400, 401, 403, 500),
          ...CURSOR_EXPIRED_RESPONSE,
          429: Type.Ref('Error', {
            description:
              'A rate limit is exceeded (code `rate_limited`, with Retry-After), or this key already has STREAM_MAX_PER_KEY ' +
              'streams open on this instance (code `too_many_streams`): close one first.',
          }),
        },
      },
    },
    async (request, reply) => {
      assertReachesEverywhere(request, "the stream shows every location's changes")
      const query = request.query as { after?: bigint; petId?: bigint }
      const lastEventId = request.headers['last-event-id']
      let start = query.after
      // An empty Last-Event-ID means none (the SSE specification's reset).
      if (lastEventId !== undefined && lastEventId !== '') {
        start = parseInt64(lastEventId)
        if (start === undefined || start < 0n) throw new InvalidInputError('Last-Event-ID must be a seq: a decimal integer from 0')
      }
      if (lifecycle.draining) throw new UnavailableError('This instance is shutting down; reconnect to another', 'draining')
      const release = streams.reserve(request.apiKeyId)
      let stream: ChangeStream
      try {
        await tail.start()
        const end = await ledger.lastChangeSeq()
        if (start !== undefined && start > end) {
          // Past the end but in a jump's seqs: a cursor from the history before a restore (410), not a typo (400).
          await assertCursorKept(ledger, start)
          throw new InvalidInputError(
            `There is no change ${start} yet: the ledger ends at ${end}. Reconnect without an id to start at the end`,
          )
        }
        // The drain may have begun during the reads above: its endAll() would have missed this stream.
        if (lifecycle.draining) throw new UnavailableError('This instance is shutting down; reconnect to another', 'draining')
        start ??= end
        stream = streams.openStream(start, query.petId, release)
      } catch (error) {
        release()
        throw error
      }
      stream.push(preamble(start))
      try {
        await stream.start()
      } catch (error) {
        stream.destroy()
        throw error
      }
      const socket = request.raw.socket
      stream.sent = () => socket.bytesWritten - socket.writableLength
      stream.unsent = () => socket.writableLength
      // Fastify destroys the stream when the client goes; the stream's close gives its place back.
      // A stream ends only when this instance stops serving it (the drain, the close): its connection
      // is never worth keeping, and the reconnection's new one may go to another instance.
      reply
        .header('content-type', 'text/event-stream')
        .header('cache-control', 'no-store')
        .header('x-accel-buffering', 'no')
        .header('connection', 'close')
      return reply.send(stream)
    },
  )
}

export const streamRoutes = fp(routes, {
  name: 'petstore-stream-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES, 'petstore-admission'],
  encapsulate: true,
})
