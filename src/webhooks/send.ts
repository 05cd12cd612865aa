import http from 'node:http'
import https from 'node:https'
import { guardedLookup, refusedLiteral } from './destination.js'

/** Bytes of a receiver's answer that are read (and dropped); a longer one ends its connection. */
const ANSWER_BYTES = 4096

export interface SendOptions {
  timeoutMs: number
  allowPrivate: boolean
}

/**
 * An attempt's outcome: delivered (2xx), or why not, in words for the subscription's lastError and
 * as a low-cardinality type for its span (the status, `timeout`, or the socket error's code).
 */
export type SendOutcome = { ok: true; status: number } | { ok: false; error: string; errorType: string; status?: number }

/**
 * One subscription's connection to its receiver: keep-alive, one request at a time (messages go in
 * order). Redirects are not followed (a 3xx is a failure), and at most ANSWER_BYTES of an answer are read.
 */
export class WebhookSender {
  private readonly agent: http.Agent
  private readonly client: typeof http | typeof https

  constructor(
    readonly url: URL,
    private readonly options: SendOptions,
  ) {
    const secure = url.protocol === 'https:'
    this.client = secure ? https : http
    const agentOptions = { keepAlive: true, maxSockets: 1, ...(options.allowPrivate ? {} : { lookup: guardedLookup }) }
    this.agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions)
  }

  send(headers: Record<string, string>, body: string): Promise<SendOutcome> {
    const refused = refusedLiteral(this.url, this.options.allowPrivate)
    if (refused) return Promise.resolve({ ok: false, error: refused, errorType: 'destination_refused' })
    return new Promise((resolve) => {
      let settled = false
      const settle = (outcome: SendOutcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(outcome)
      }
      const request = this.client.request(this.url, {
        method: 'POST',
        agent: this.agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      })
      // The whole attempt, connecting and the answer included, is bounded.
      const timer = setTimeout(() => {
        settle({ ok: false, error: `no answer within ${this.options.timeoutMs} ms`, errorType: 'timeout' })
        request.destroy()
      }, this.options.timeoutMs)
      request.on('error', (error: NodeJS.ErrnoException) =>
        settle({ ok: false, error: describe(error), errorType: error.code ?? 'connection_failed' }),
      )
      request.on('response', (response) => {
        const status = response.statusCode ?? 0
        let read = 0
        response.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > ANSWER_BYTES) response.destroy()
        })
        const done = () =>
          settle(
            status >= 200 && status < 300
              ? { ok: true, status }
              : {
                  ok: false,
                  error: status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`,
                  errorType: String(status),
                  status,
                },
          )
        response.on('end', done)
        response.on('close', done)
        response.on('error', done)
      })
      request.end(body)
    })
  }

  close(): void {
    this.agent.destroy()
  }
}

/** A connection failure in words, without anything internal beyond the receiver's own address. */
function describe(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused'
    case 'ECONNRESET':
      return 'connection reset'
    case 'ENOTFOUND':
      return 'host not found'
    case 'EREFUSEDADDRESS':
      return error.message
    default:
      return error.code ? `connection failed (${error.code})` : 'connection failed'
  }
}
