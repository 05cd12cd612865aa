import type { LedgerJump } from './domain.js'

/**
 * The stable set of Error `code` values the API returns, each with the one HTTP status it is sent
 * with. Clients may branch on these; a new code is an API change. Every status the service sends has
 * a code here: the HTTP layer never sends a status without one (see http/errors.ts).
 */
export const ERROR_CODES = {
  invalid_request: 400,
  destination_refused: 400,
  location_inactive: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  insufficient_stock: 409,
  stock_overflow: 409,
  quantity_mismatch: 409,
  idempotency_key_reused: 409,
  invalid_transition: 409,
  reservation_expired: 409,
  reservation_released: 409,
  reservation_confirmed: 409,
  key_name_taken: 409,
  webhook_limit_reached: 409,
  location_name_taken: 409,
  location_not_empty: 409,
  location_limit_reached: 409,
  gone: 410,
  cursor_expired: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  precondition_required: 428,
  rate_limited: 429,
  too_many_streams: 429,
  headers_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
} as const

export type ErrorCode = keyof typeof ERROR_CODES

/**
 * Codes that name one domain rule and share their status with others: only the domain raises them,
 * and a bare status is never mapped to one (a 409 from a plugin is a bug, not a stock shortage).
 */
export const RULE_CODES: readonly ErrorCode[] = [
  'destination_refused',
  'location_inactive',
  'insufficient_stock',
  'stock_overflow',
  'quantity_mismatch',
  'idempotency_key_reused',
  'invalid_transition',
  'reservation_expired',
  'reservation_released',
  'reservation_confirmed',
  'key_name_taken',
  'webhook_limit_reached',
  'location_name_taken',
  'location_not_empty',
  'location_limit_reached',
  'too_many_streams',
  'cursor_expired',
]

const STATUS_TO_CODE = new Map<number, ErrorCode>(
  Object.entries(ERROR_CODES)
    .filter(([code]) => !RULE_CODES.includes(code as ErrorCode))
    .map(([code, status]) => [status, code as ErrorCode]),
)

/** The code for a status, for errors that carry only a status (the framework's own). */
export function codeForStatus(status: number): ErrorCode | undefined {
  return STATUS_TO_CODE.get(status)
}

/** Domain errors carry a code, never an HTTP status: the HTTP layer maps one to the other. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message)
    this.name = new.target.name
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super('not_found', message)
  }
}

export class InvalidInputError extends DomainError {
  constructor(message: string) {
    super('invalid_request', message)
  }
}

export class UnauthorizedError extends DomainError {
  /** @param tokenSent a key was sent but is not valid (malformed, unknown, revoked), rather than missing */
  constructor(
    message: string,
    readonly tokenSent = false,
  ) {
    super('unauthorized', message)
  }
}

/** A valid key without the scope an operation needs (RFC 6750 §3.1); `scope` is the one needed. */
export class InsufficientScopeError extends DomainError {
  constructor(readonly scope: string) {
    super('insufficient_scope', `This API key lacks the scope ${scope}, which this operation needs`)
  }
}

export class PreconditionFailedError extends DomainError {
  constructor(message: string) {
    super('precondition_failed', message)
  }
}

export class PreconditionRequiredError extends DomainError {
  constructor(message: string) {
    super('precondition_required', message)
  }
}

/**
 * Why the service cannot serve a request now (nothing is wrong with the request): this instance is
 * shutting down, it is overloaded, or its database does not answer. Each passes by itself, which is
 * why a client is told to come back and why none is logged as an error.
 */
export type UnavailableReason = 'draining' | 'overloaded' | 'database'

/**
 * What is wrong with the database, when the driver says (src/storage/faults.ts words each for an
 * operator, and says which last until they are seen gone).
 */
export type DatabaseFault = 'disk_full' | 'read_only' | 'connection_limit' | 'terminated' | 'io_error' | 'cancelled'

export class UnavailableError extends DomainError {
  constructor(
    message: string,
    readonly reason: UnavailableReason,
    /** The database's fault behind a `database` refusal, when known; `lasting` when it holds until seen gone. */
    readonly fault?: { cause: DatabaseFault; lasting: boolean },
  ) {
    super('service_unavailable', message)
  }
}

export class RateLimitedError extends DomainError {
  constructor(message: string) {
    super('rate_limited', message)
  }
}

export class ConflictError extends DomainError {
  constructor(
    code:
      | 'insufficient_stock'
      | 'stock_overflow'
      | 'quantity_mismatch'
      | 'idempotency_key_reused'
      | 'invalid_transition'
      | 'reservation_expired'
      | 'reservation_released'
      | 'reservation_confirmed'
      | 'key_name_taken'
      | 'webhook_limit_reached'
      | 'location_name_taken'
      | 'location_not_empty'
      | 'location_limit_reached',
    message: string,
  ) {
    super(code, message)
  }
}

/** A write names a location that is inactive (one that does not exist is a NotFoundError). */
export class LocationInactiveError extends DomainError {
  constructor(locationId: number) {
    super('location_inactive', `Location ${locationId} is inactive: it takes no stock until it is activated again`)
  }
}

/** A key holds as many open change streams as a process allows it (STREAM_MAX_PER_KEY). */
export class TooManyStreamsError extends DomainError {
  constructor(max: number) {
    super('too_many_streams', `This API key already has ${max} open change streams on this instance; close one first`)
  }
}

/**
 * A cursor (`after`, `Last-Event-ID`) before rows that retention removed (LEDGER_RETENTION), or in
 * the seqs a restore or a bump skipped (a history the database no longer holds): reading on from it
 * would skip rows silently, so the reader is told to start again from the current state. `why` says
 * which, as the end of a sentence.
 */
export class CursorExpiredError extends DomainError {
  constructor(after: bigint, why: string, last: bigint) {
    super(
      'cursor_expired',
      `The ledger no longer holds the changes after ${after}: ${why}. ` +
        `Read the current state again (GET /v1/inventory), then continue after the current seq, ${last}`,
    )
  }
}

/** Why a cursor in a jump's seqs is expired, for its error and a webhook subscription's. */
export const jumpedOver = (jump: LedgerJump) =>
  `the database was restored from a backup (or its seqs bumped) at ${jump.at}, and seqs ${jump.after + 1n} to ${jump.through} ` +
  `are of the history before that, which it no longer holds`

/** A webhook URL the service will not deliver to (a private address, a scheme it does not speak). */
export class DestinationRefusedError extends DomainError {
  constructor(message: string) {
    super('destination_refused', message)
  }
}

/** An import file names the same pet twice (found by the storage while staging; see refusingDuplicates). */
export class DuplicatePetIdError extends Error {
  constructor(
    readonly petId: bigint,
    readonly firstPosition: number,
    readonly position: number,
  ) {
    super(`petId ${petId} appears twice`)
  }
}
