import type { components } from './generated/openapi.js'

/** Every `code` the API documents on its Error object: a `switch` on it is checked by the compiler. */
export type ErrorCode = components['schemas']['Error']['code']

/**
 * The API answered with an error: `status`, `code` and `message` from its Error body, `requestId`
 * from its X-Request-Id header (quote it when reporting a problem). `code` is `invalid_response`
 * when the answer was not an Error object (a proxy's page, say).
 */
export class PetstoreError extends Error {
  override readonly name: string = 'PetstoreError'
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'invalid_response',
    message: string,
    readonly requestId: string | undefined,
    /** Seconds the service asked to wait (Retry-After), when it said. */
    readonly retryAfter?: number,
  ) {
    super(message)
  }
}

/**
 * 410 `cursor_expired` from the changes feed or the change stream: the cursor (`after`, the stream's
 * last seq) is before rows retention removed, or a seq of the history before the service's database
 * was restored from a backup. Reading on from it would skip changes, so nothing is read: read the
 * current state again (`inventory.list`), then continue after `currentSeq` (from the service's
 * message; undefined if it did not say). A PetstoreError too, with `status` 410 and that `code`.
 */
export class PetstoreCursorExpiredError extends PetstoreError {
  override readonly name = 'PetstoreCursorExpiredError'
  /** Where the ledger ends now: continue after it once the state is read again. */
  readonly currentSeq: bigint | undefined
  constructor(message: string, requestId: string | undefined) {
    super(410, 'cursor_expired', message, requestId)
    const current = /current seq, (\d+)\s*$/.exec(message)
    this.currentSeq = current ? BigInt(current[1]!) : undefined
  }
}

/**
 * No answer came from the service, and nothing was applied that repeating could double: it could not
 * be reached, or (for an operation that is safe to repeat, which the client did, up to its retries)
 * the connection dropped or the call timed out.
 */
export class PetstoreConnectionError extends Error {
  override readonly name = 'PetstoreConnectionError'
}

/**
 * Not a PetstoreConnectionError, on purpose: code that repeats a call on a connection error must not
 * repeat this one. The request was sent but its answer was lost (the connection dropped or the call timed out), and
 * repeating it is not harmless (a PATCH would write a second ledger row and a second webhook). It
 * may or may not have been applied: read the resource again before deciding to repeat it.
 */
export class PetstoreUnknownOutcomeError extends Error {
  override readonly name = 'PetstoreUnknownOutcomeError'
}

/** A webhook whose signature, timestamp or body does not verify. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError'
}
