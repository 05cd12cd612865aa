import { Type } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.js'

/**
 * A message each code is sent with, as the service words it, for the document's examples (one per
 * code: a new code needs one).
 */
export const ERROR_EXAMPLES: Record<ErrorCode, string> = {
  invalid_request: 'body.quantity must be integer',
  destination_refused:
    'url names a loopback, private or otherwise non-public address (127.0.0.1); webhooks deliver to public addresses only',
  location_inactive: 'Location 4 is inactive: it takes no stock until it is activated again',
  unauthorized: 'Missing API key: send Authorization: Bearer <API_KEY>',
  insufficient_scope: 'This API key lacks the scope inventory:write, which this operation needs',
  not_found: 'No inventory entry for pet 9007199254740993',
  method_not_allowed: 'PUT is not allowed here; allowed: GET, HEAD, PATCH',
  request_timeout: 'The request took too long to arrive',
  insufficient_stock: 'Pet 9007199254740993 has 1 in stock; the order asks for 2',
  stock_overflow: 'changes[3]: pet 9007199254740993 has 2147483000 in stock; adding 1000 would take it past 2147483647',
  quantity_mismatch: 'Pet 9007199254740993 has 11 in stock, not the expectedQuantity 12; nothing was changed',
  idempotency_key_reused: 'This Idempotency-Key was used with another request body; use a new key for a new order',
  invalid_transition: 'Order 48213 is delivered; it cannot become cancelled',
  reservation_expired: 'Hold 3107 has expired: its units are back in stock',
  reservation_released: 'Hold 3107 was released: its units are back in stock',
  reservation_confirmed: 'Hold 3107 is confirmed already: its lines are orders',
  key_name_taken: "An active key named 'warehouse-sync' already exists",
  webhook_limit_reached: 'There are 100 webhook subscriptions already; remove one first',
  location_name_taken: "A location named 'Harbour Street' already exists",
  location_not_empty: 'Location 4 holds 12 units of 3 pets; move or remove them before deactivating it',
  location_limit_reached: 'There are 1000 locations already',
  gone: 'This operation was removed on 2027-07-01T00:00:00.000Z; see /v1/docs#/pets/getPetById',
  cursor_expired:
    'The ledger no longer holds the changes after 1000: retention removed every change up to 1040. ' +
    'Read the current state again (GET /v1/inventory), then continue after the current seq, 1044',
  precondition_failed: 'The entry for pet 9007199254740993 has changed since the ETag in If-Match was read',
  payload_too_large: 'Request body is too large',
  uri_too_long: 'A path segment is too long',
  unsupported_media_type: 'Unsupported Content-Type: request bodies must be application/json',
  precondition_required: 'Updates need If-Match: GET the entry and send its ETag',
  rate_limited: 'Rate limit exceeded: 6000 requests per 60 s for this API key; retry in 42 s',
  too_many_streams: 'This API key already has 10 open change streams on this instance; close one first',
  headers_too_large: 'Request headers are too large',
  internal_error: 'Internal server error',
  service_unavailable: 'The service is unavailable; retry shortly',
}

export const ErrorSchema = Type.Object(
  {
    code: Type.Unsafe<string>({
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: `Machine-readable error code, stable across releases: ${Object.entries(ERROR_CODES)
        .map(([code, status]) => `\`${code}\` (${status})`)
        .join(', ')}.`,
    }),
    message: Type.String({ description: 'Human-readable description of the error.' }),
    status: Type.Integer({ description: 'The HTTP status code of the response.' }),
  },
  {
    $id: 'Error',
    additionalProperties: false,
    description: 'Every error response of the service has this shape.',
    examples: [{ code: 'not_found', message: ERROR_EXAMPLES.not_found, status: 404 }],
  },
)

/** The 410 of an operation that reads the ledger after a cursor (the feed, the stream). */
export const CURSOR_EXPIRED_RESPONSE = {
  410: Type.Ref('Error', {
    description:
      'Code `cursor_expired`: retention (LEDGER_RETENTION) removed changes after the given cursor, or the cursor is a seq of ' +
      'the history before a restore from a backup (seqs the restore skipped), so reading on from it would skip changes. ' +
      'Read the current state again (listInventory), then continue after the current seq, which the message gives.',
  }),
}

/** Response schemas for the error statuses an operation documents. */
export function errorResponses(...statuses: number[]) {
  const descriptions: Record<number, string> = {
    400: 'The request is invalid: a bad path or query parameter or header, or a body that is missing fields, has unknown fields or invalid values, or is not JSON.',
    401: 'The API key is missing, malformed, unknown or revoked.',
    403: 'The API key is valid but lacks the scope this operation needs (code `insufficient_scope`); the request was not read and nothing changed.',
    404: 'The requested resource could not be found.',
    405: "Sent to the methods this path does not serve, never to this operation itself (code `method_not_allowed`), before authentication; `Allow` lists the methods it serves. Declared here because OpenAPI has no place for a path's other methods.",
    408: 'The request did not arrive in time (HEADERS_TIMEOUT_MS for its headers, REQUEST_TIMEOUT_MS in all); answered by the HTTP server before any route, and the connection is closed. Nothing was done.',
    409: 'The request conflicts with the current state; the code says which rule refused it, and nothing changed.',
    410: 'The operation has reached its sunset (the date in its Sunset header) and is no longer served.',
    412: 'If-Match does not hold: the entry has changed since its ETag was read. Nothing changed.',
    413: 'The request body is larger than 64 KiB.',
    414: 'A path parameter is longer than 8192 characters.',
    415: 'The request body is not application/json.',
    428: 'The service runs with REQUIRE_IF_MATCH=true and the request has no If-Match.',
    429: 'A rate limit is exceeded (see RateLimit-Policy); nothing was done. Retry after Retry-After seconds.',
    431: 'The request headers are larger than MAX_HEADER_BYTES (16 KiB by default); answered by the HTTP server before any route, and the connection is closed. Nothing was done.',
    500: 'Unexpected failure; the body says nothing about internals.',
    503: 'The database is unavailable or cannot take writes now (the message names the cause: its disk is full, it is read-only, its connection limit is reached, it ended the connection, it cancelled the statement), or the service is overloaded (too many requests in progress, or its event loop saturated). Nothing was done; retry later, after Retry-After seconds when it is given.',
  }
  const headers: Record<number, object> = {
    401: {
      'WWW-Authenticate': Type.String({
        description:
          'The challenge (RFC 6750 §3): `Bearer realm="petstore"`, with `error="invalid_token"` added when a key was sent but is not valid.',
        examples: ['Bearer realm="petstore"'],
      }),
    },
    403: {
      'WWW-Authenticate': Type.String({
        description: 'Bearer error="insufficient_scope", scope="<the scope needed>" (RFC 6750 §3.1).',
        examples: ['Bearer error="insufficient_scope", scope="inventory:write"'],
      }),
    },
    405: {
      Allow: Type.String({ description: 'The methods the path serves.', examples: ['GET, HEAD, PATCH'] }),
    },
    503: {
      'Retry-After': Type.Integer({
        description: 'Seconds to wait before retrying; sent when the service refused the request for load, or for the database.',
      }),
    },
  }
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      Type.Ref('Error', { description: descriptions[status] ?? 'Error', ...(headers[status] && { headers: headers[status] }) }),
    ]),
  )
}
