import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { randomUUID } from 'node:crypto'
import { STATUS_CODES as STATUS_CODES_TEXT } from 'node:http'
import type { Duplex } from 'node:stream'
import {
  DomainError,
  ERROR_CODES,
  InsufficientScopeError,
  UnauthorizedError,
  UnavailableError,
  codeForStatus,
  type ErrorCode,
  type UnavailableReason,
} from '../errors.js'

/**
 * The 401's challenge (RFC 6750 §3): a request that sent no key gets the bare challenge; one whose
 * key was sent but is not valid (malformed, unknown, revoked) is told so with error="invalid_token".
 */
export function bearerChallenge(tokenSent: boolean): string {
  return tokenSent ? 'Bearer realm="petstore", error="invalid_token"' : 'Bearer realm="petstore"'
}

/** The 403's challenge (RFC 6750 §3.1): the key is valid, and this is the scope it lacks. */
export function insufficientScopeChallenge(scope: string): string {
  return `Bearer error="insufficient_scope", scope="${scope}"`
}

/** Writes the spec's Error body; the single way any error leaves the service. */
export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  options: { tokenSent?: boolean; scope?: string | undefined } = {},
) {
  const status = ERROR_CODES[code]
  // The request-ids hook sets it on every routed request; a URL the router refused (400, 414) never met that hook.
  if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', reply.request.id)
  if (code === 'unauthorized') reply.header('www-authenticate', bearerChallenge(options.tokenSent ?? false))
  if (code === 'insufficient_scope' && options.scope) reply.header('www-authenticate', insufficientScopeChallenge(options.scope))
  return (
    reply
      .code(status)
      // Also here, not only in the representation plugin's hook: errors the router raises come before any hook.
      .header('x-content-type-options', 'nosniff')
      .type('application/json; charset=utf-8')
      .send({ code, message, status })
  )
}

// Fastify's own errors whose message is better replaced, by their stable codes (never by message text).
const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type: request bodies must be application/json',
  FST_ERR_BAD_URL: 'Malformed URL',
  FST_ERR_INVALID_URL: 'Malformed URL',
  FST_ERR_MAX_PARAM_LENGTH: 'A path segment is too long',
}

/**
 * The Error body for any error: a domain error keeps its code; anything else (the framework's, the
 * JSON parser's) keeps the status it carries, with that status's code. A 4xx message is about the
 * request and is passed on; a 5xx says nothing about internals. A status with no documented code is a
 * bug, answered as a 500 and logged, so the service never sends a status the document does not list.
 */
export function classify(error: FastifyError): { code: ErrorCode; message: string; undocumented?: number } {
  if (error instanceof DomainError) return { code: error.code, message: error.message }
  const status = error.statusCode ?? 500
  // The framework's only 403s come from the docs page's static files refusing a path outside their
  // folder (a traversal attempt): answered as any file that is not there, so a scanner learns nothing.
  if (status === 403) return { code: 'not_found', message: 'Not found' }
  const code = codeForStatus(status)
  if (!code) return { code: 'internal_error', message: 'Internal server error', undocumented: status }
  if (status >= 500)
    return { code, message: code === 'internal_error' ? 'Internal server error' : 'The service is unavailable; retry shortly' }
  return { code, message: (error.code && FRAMEWORK_MESSAGES[error.code]) || error.message }
}

/** The Error body for a status, as raw HTTP/1.1 bytes: for connections too broken for a reply object. */
function rawErrorResponse(code: ErrorCode, message: string, requestId: string): string {
  const status = ERROR_CODES[code]
  const body = JSON.stringify({ code, message, status })
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES_TEXT[status] ?? 'Error'}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Content-Type-Options: nosniff\r\n` +
    `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  )
}

/**
 * For Fastify's `clientErrorHandler`: requests Node's HTTP parser rejects before any route runs
 * (bad framing, oversized headers, timeouts) still get the Error shape. Returns the status sent, if any.
 */
export function handleClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex): number | undefined {
  if (error.code === 'ECONNRESET' || !socket.writable) return undefined
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'Request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'The request took too long to arrive']
        : ['invalid_request', 'Malformed HTTP request']
  // Nothing of the request can be trusted here, not even its X-Request-Id: a fresh one is made.
  const reqId = randomUUID()
  this.log.info({ reqId, statusCode: ERROR_CODES[code], reason: error.code }, 'request rejected by the HTTP parser')
  closeAfterWriting(socket, rawErrorResponse(code, message, reqId))
  return ERROR_CODES[code]
}

/** How long a refused client gets to take its answer before its connection is cut regardless. */
const REFUSED_LINGER_MS = 1000

/**
 * Writes the answer and closes the connection for good. The HTTP server is half-open (a client may
 * keep its side open after ours ends), so `end` alone would let a client that neither reads nor
 * closes hold the socket, its file descriptor, its place under MAX_CONNECTIONS and, for a slow body,
 * its request's MAX_IN_FLIGHT slot: the socket is destroyed once the answer is flushed, or after
 * REFUSED_LINGER_MS when the client does not even take it.
 */
function closeAfterWriting(socket: Duplex, answer: string) {
  const cut = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref()
  socket.end(answer, () => {
    clearTimeout(cut)
    socket.destroy()
  })
}

/**
 * A request the service cannot serve now, through nothing wrong with it or with the service's code:
 * one line, without a stack (there is no fault to trace). A drain's refusals are routine (every
 * rolling restart has them): info. Load and the database are worth watching, and pass by themselves:
 * warn. Error stays for what an operator must act on, so alerting on it pages no one for a restart.
 */
export function logRefusal(request: FastifyRequest, reason: UnavailableReason, detail: string, extra: object = {}): void {
  const fields = { refusal: reason, detail, ...extra }
  if (reason === 'draining') request.log.info(fields, 'request refused')
  else request.log.warn(fields, 'request refused')
}

/** What a 503 of the database's tells a client to wait before retrying: about a probe and a half. */
const DATABASE_RETRY_AFTER_SECONDS = 2

/** Every error that reaches Fastify's error handler or its `frameworkErrors` hook leaves through here. */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const { code, message, undocumented } = classify(error)
  if (undocumented) request.log.error({ err: error, status: undocumented }, 'an error carried a status with no error code')
  else if (error instanceof UnavailableError) {
    if (error.reason === 'database') reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
    // A lasting fault of the database has its own lines, when it begins and when it ends: a line per
    // request refused meanwhile would be a flood saying the same (each request's own line has its 503).
    if (error.fault?.lasting !== true) logRefusal(request, error.reason, error.message)
  } else if (ERROR_CODES[code] >= 500) request.log.error({ err: error }, 'request failed')
  return sendError(reply, code, message, {
    tokenSent: error instanceof UnauthorizedError && error.tokenSent,
    scope: error instanceof InsufficientScopeError ? error.scope : undefined,
  })
}
