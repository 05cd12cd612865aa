import { Type } from 'typebox'
import { ERROR_CODES } from '../errors.js'

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
  { $id: 'Error', additionalProperties: false, description: 'Every error response of the service has this shape.' },
)

/** The 410 of an operation that reads the ledger after a cursor (the feed, the stream). */
export const CURSOR_EXPIRED_RESPONSE = {
  410: Type.Ref('Error', {
    description:
      'Code `cursor_expired`: retention (LEDGER_RETENTION) removed changes after the given cursor, so reading on from it ' +
      'would skip them. Read the current state again (listInventory), then continue after the current seq, which the message gives.',
  }),
}

/** Response schemas for the error statuses an operation documents. */
export function errorResponses(...statuses: number[]) {
  const descriptions: Record<number, string> = {
    400: 'The request is invalid: a bad path or query parameter or header, or a body that is missing fields, has unknown fields or invalid values, or is not JSON.',
    401: 'The API key is missing, malformed, unknown or revoked.',
    403: 'The API key is valid but lacks the scope this operation needs (code `insufficient_scope`); the request was not read and nothing changed.',
    404: 'The requested resource could not be found.',
    409: 'The request conflicts with the current state; the code says which rule refused it, and nothing changed.',
    410: 'The operation has reached its sunset (the date in its Sunset header) and is no longer served.',
    412: 'If-Match does not hold: the entry has changed since its ETag was read. Nothing changed.',
    413: 'The request body is larger than 64 KiB.',
    414: 'A path parameter is longer than 8192 characters.',
    415: 'The request body is not application/json.',
    428: 'The service runs with REQUIRE_IF_MATCH=true and the request has no If-Match.',
    429: 'A rate limit is exceeded (see RateLimit-Policy); nothing was done. Retry after Retry-After seconds.',
    500: 'Unexpected failure; the body says nothing about internals.',
    503: 'The database is unavailable, or the service is overloaded (too many requests in progress, or its event loop saturated); retry later, after Retry-After seconds when it is given.',
  }
  const headers: Record<number, object> = {
    403: {
      'WWW-Authenticate': Type.String({ description: 'Bearer error="insufficient_scope", scope="<the scope needed>" (RFC 6750 §3.1).' }),
    },
    503: {
      'Retry-After': Type.Integer({ description: 'Seconds to wait before retrying; sent when the service refused the request for load.' }),
    },
  }
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      Type.Ref('Error', { description: descriptions[status] ?? 'Error', ...(headers[status] && { headers: headers[status] }) }),
    ]),
  )
}
