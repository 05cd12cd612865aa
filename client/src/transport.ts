// One call to the API: the URL, the key, a timeout per attempt, retries where they are safe, and
// every failure turned into one of the client's errors.
import {
  type ErrorCode,
  PetstoreConnectionError,
  PetstoreCursorExpiredError,
  PetstoreError,
  PetstoreUnknownOutcomeError,
} from './errors.js'
import { parseExact, stringifyExact } from './json.js'

export interface ClientOptions {
  /** The API's base URL, with its `/v1`: `http://127.0.0.1:8080/v1`. */
  baseUrl: string
  /** The API key, or a function that gives it (asked on every request, so a page can sign out). */
  token: string | (() => string)
  /** How long one attempt may take, to the last byte of its answer (the stream: to its headers), in ms (default 30,000). */
  timeoutMs?: number
  /** Attempts after the first, for 429, 503 and, where repeating is harmless, a lost answer (default 2). */
  maxRetries?: number
  /** The longest `Retry-After` the client waits out, in ms (default 60,000); a longer one is thrown at once. */
  maxRetryAfterMs?: number
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch
}

/** Options every operation takes. */
export interface CallOptions {
  signal?: AbortSignal
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number
  /** Overrides the client's maxRetries for this call. */
  maxRetries?: number
}

/**
 * Whether a request whose answer was lost may be sent again: `safe` for reads and for order
 * placement under its Idempotency-Key; `unsafe` for the rest, whose lost answers surface as
 * PetstoreUnknownOutcomeError. A request that never left (connection refused) is retried either way,
 * and so are 429 and 503, which the service answers before it acts.
 */
export type Repeat = 'safe' | 'unsafe'

export type Query = Record<string, string | number | bigint | undefined>

export interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /** A path under the base URL (`inventory/1`), or a URL the API gave (a `Link`). */
  path: string | URL
  query?: Query
  body?: unknown
  headers?: Record<string, string>
  repeat: Repeat
  options?: CallOptions | undefined
}

export interface Answer<T> {
  status: number
  headers: Headers
  body: T
}

// Node's codes for a connection that was never made: nothing was sent, so any request may be tried
// again. Unreachable host or network count only while connecting: on an open keep-alive socket they
// may come after the request was written. (A browser's fetch says only TypeError: there every lost
// request counts as sent.)
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT'])
const NOT_CONNECTED = new Set(['EHOSTUNREACH', 'ENETUNREACH'])

export class Transport {
  readonly base: URL
  private readonly token: () => string
  private readonly fetch: typeof fetch
  private readonly timeoutMs: number
  private readonly maxRetries: number
  private readonly maxRetryAfterMs: number

  constructor(options: ClientOptions) {
    this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`)
    const token = options.token
    this.token = typeof token === 'function' ? token : () => token
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.timeoutMs = options.timeoutMs ?? 30_000
    this.maxRetries = options.maxRetries ?? 2
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000
  }

  /** A call whose answer is JSON (or nothing, for 204): read whole, int64s exact. */
  json<T>(call: Call): Promise<Answer<T>> {
    return this.attempts(call, false, async (response) => {
      const text = await response.text()
      if (response.status === 204) return { status: response.status, headers: response.headers, body: undefined as T }
      if (text === '')
        throw new PetstoreError(response.status, 'invalid_response', `HTTP ${response.status} with no body`, requestIdOf(response))
      return { status: response.status, headers: response.headers, body: parse<T>(text, response) }
    })
  }

  /** A call whose answer is read as it comes (the change stream): the caller's signal stays on the body. */
  open(call: Call): Promise<Response> {
    return this.attempts(call, true, async (response) => response)
  }

  url(path: string | URL, query?: Query): URL {
    const url = typeof path === 'string' ? new URL(path, this.base) : new URL(path, this.base)
    // The key goes to the API's own origin only, whatever a Link says.
    if (url.origin !== this.base.origin)
      throw new PetstoreError(0, 'invalid_response', `The API pointed at another origin: ${url.origin}`, undefined)
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue
      // A number here past 2^53 has already lost digits: int64 query values come as bigints (see Query).
      if (typeof value === 'number' && !Number.isSafeInteger(value))
        throw new TypeError(`${name} must be a bigint or a safe integer, got ${value}`)
      url.searchParams.set(name, String(value))
    }
    return url
  }

  private async attempts<T>(call: Call, streaming: boolean, consume: (response: Response) => Promise<T>): Promise<T> {
    const url = this.url(call.path, call.query)
    const what = `${call.method} ${url.pathname}`
    const retries = call.options?.maxRetries ?? this.maxRetries
    const timeoutMs = call.options?.timeoutMs ?? this.timeoutMs
    const signal = call.options?.signal
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers, authorization: `Bearer ${this.token()}` }
    let body: string | undefined
    if (call.body !== undefined) {
      body = stringifyExact(call.body)
      headers['content-type'] = 'application/json'
    }
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted()
      const controller = new AbortController()
      const abort = () => controller.abort(signal?.reason)
      signal?.addEventListener('abort', abort, { once: true })
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        controller.abort(new DOMException(`${what} timed out after ${timeoutMs} ms`, 'TimeoutError'))
      }, timeoutMs)
      let done = false
      try {
        const response = await this.fetch(url, { method: call.method, headers, body, signal: controller.signal })
        if (response.status === 429 || response.status === 503) {
          const wait = retryAfterMs(response.headers) ?? backoffMs(attempt)
          if (attempt < retries && wait <= this.maxRetryAfterMs) {
            await response.body?.cancel()
            clearTimeout(timer)
            await sleep(wait, signal)
            continue
          }
        }
        if (response.status >= 400) throw await errorOf(response)
        const value = await consume(response)
        done = true
        return value
      } catch (error) {
        if (error instanceof PetstoreError) throw error
        if (signal?.aborted) throw signal.reason
        const unsent = !timedOut && notSent(error)
        const reason = timedOut ? `timed out after ${timeoutMs} ms` : describe(error)
        if (unsent || call.repeat === 'safe') {
          if (attempt < retries) {
            clearTimeout(timer)
            await sleep(backoffMs(attempt), signal)
            continue
          }
          throw new PetstoreConnectionError(`${what}: no answer from the service (${reason})`, { cause: error })
        }
        throw new PetstoreUnknownOutcomeError(
          `${what}: the request was sent but its answer was lost (${reason}); it may or may not have been applied: read it again before repeating it`,
          { cause: error },
        )
      } finally {
        clearTimeout(timer)
        // A stream's body still needs the caller's signal; anything else is finished with it.
        if (!(streaming && done)) signal?.removeEventListener('abort', abort)
      }
    }
  }
}

function parse<T>(text: string, response: Response): T {
  try {
    return parseExact<T>(text)
  } catch {
    throw new PetstoreError(response.status, 'invalid_response', `The answer was not JSON: ${text.slice(0, 200)}`, requestIdOf(response))
  }
}

async function errorOf(response: Response): Promise<PetstoreError> {
  const requestId = requestIdOf(response)
  const retryAfter = retryAfterMs(response.headers)
  const seconds = retryAfter === undefined ? undefined : retryAfter / 1000
  let text = ''
  try {
    text = await response.text()
    const body = parseExact<{ code?: unknown; message?: unknown; status?: unknown }>(text)
    if (typeof body?.code === 'string' && typeof body.message === 'string') {
      if (body.code === 'cursor_expired' && response.status === 410) return new PetstoreCursorExpiredError(body.message, requestId)
      return new PetstoreError(response.status, body.code as ErrorCode, body.message, requestId, seconds)
    }
  } catch {
    // Not an Error object: said below.
  }
  return new PetstoreError(response.status, 'invalid_response', `HTTP ${response.status}: ${text.slice(0, 200)}`, requestId, seconds)
}

const requestIdOf = (response: Response) => response.headers.get('x-request-id') ?? undefined

/** Retry-After in ms: delay-seconds or an HTTP date. */
function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('retry-after')
  if (value === null) return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  // An HTTP date (IMF-fixdate); anything else is no Retry-After at all.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(value.trim())) return undefined
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** Exponential backoff with jitter: about 0.5, 1, 2, 4 s …, at most 8 s. */
function backoffMs(attempt: number): number {
  return Math.min(8000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2)
}

/** Waits, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop)
      resolve()
    }, ms)
    const stop = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', stop, { once: true })
  })
}

function notSent(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const { code, syscall } = e as { code?: unknown; syscall?: unknown }
    if (typeof code !== 'string') continue
    if (NOT_SENT.has(code)) return true
    if (NOT_CONNECTED.has(code) && (syscall === 'connect' || syscall === 'getaddrinfo')) return true
  }
  return false
}

function describe(error: unknown): string {
  const parts: string[] = []
  for (let e: unknown = error; e instanceof Error && parts.length < 3; e = e.cause) {
    const code = (e as { code?: unknown }).code
    parts.push(typeof code === 'string' ? `${e.message} [${code}]` : e.message)
  }
  return parts.join(': ') || String(error)
}
