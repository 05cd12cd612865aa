import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { randomUUID } from 'node:crypto'
import { STATUS_CODES as STATUS_CODES_TEXT } from 'node:http'
import type { Duplex } from 'node:stream'
import { DomainError, ERROR_CODES, type ErrorCode } from '../errors.js'

/** Writes the spec's Error body; the single way any error leaves the service. */
export function sendError(reply: FastifyReply, code: ErrorCode, message: string) {
  const status = ERROR_CODES[code]
  if (code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="petstore"')
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ code, message, status })
}

// Fastify's own client errors, by their stable codes (never by message text).
const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_VALIDATION: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
}

const STATUS_CODES = new Map<number, ErrorCode>(
  Object.entries(ERROR_CODES).map(([code, status]) => [status, code as ErrorCode]),
)

function classify(error: FastifyError): { code: ErrorCode; message: string } {
  if (error instanceof DomainError) return { code: error.code, message: error.message }
  const known = error.code ? FRAMEWORK_CODES[error.code] : undefined
  if (known === 'unsupported_media_type') {
    return { code: known, message: 'Unsupported Content-Type: request bodies must be application/json' }
  }
  if (known) return { code: known, message: error.message }
  // A client error from the JSON parser or elsewhere in the framework: its message is about the request.
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return { code: STATUS_CODES.get(status) ?? 'invalid_request', message: error.message }
  }
  return { code: 'internal_error', message: 'Internal server error' }
}

/** The Error body for a status, as raw HTTP/1.1 bytes: for connections too broken for a reply object. */
function rawErrorResponse(code: ErrorCode, message: string, requestId: string): string {
  const status = ERROR_CODES[code]
  const body = JSON.stringify({ code, message, status })
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES_TEXT[status] ?? 'Error'}\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  )
}

/**
 * For Fastify's `clientErrorHandler`: requests Node's HTTP parser rejects before any route runs
 * (bad framing, oversized headers, timeouts) still get the Error shape.
 */
export function handleClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex) {
  if (error.code === 'ECONNRESET' || !socket.writable) return
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'Request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'The request took too long to arrive']
        : ['invalid_request', 'Malformed HTTP request']
  // Nothing of the request can be trusted here, not even its X-Request-Id: a fresh one is made.
  const reqId = randomUUID()
  this.log.info({ reqId, statusCode: ERROR_CODES[code], reason: error.code }, 'request rejected by the HTTP parser')
  socket.end(rawErrorResponse(code, message, reqId))
}

/** For Fastify's `frameworkErrors`: a URL that cannot be decoded. */
export function handleFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, 'invalid_request', error.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Invalid request')
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const { code, message } = classify(error)
    if (ERROR_CODES[code] >= 500) request.log.error({ err: error }, 'request failed')
    return sendError(reply, code, message)
  })

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`),
  )
}

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

/**
 * Makes every path the app serves answer 405, with an Allow header, to the methods it does not
 * serve. Call it before registering routes; the 405 routes are added once the others are in place.
 */
export function methodNotAllowedForServedPaths(app: FastifyInstance) {
  const served = new Map<string, Set<string>>()
  app.addHook('onRoute', (route) => {
    // A plugin's '/' route is served both with and without the trailing slash: one path here.
    const url = route.url.length > 1 ? route.url.replace(/\/$/, '') : route.url
    const methods = served.get(url) ?? new Set<string>()
    for (const method of [route.method].flat()) methods.add(method)
    served.set(url, methods)
  })
  return async function registerMethodNotAllowed() {
    for (const [url, methods] of [...served]) {
      const allow = ALL_METHODS.filter((m) => methods.has(m))
      const refused = ALL_METHODS.filter((m) => !methods.has(m))
      if (refused.length === 0) continue
      app.route({
        method: refused,
        url,
        schema: { hide: true },
        handler: (request, reply) => {
          reply.header('allow', allow.join(', '))
          return sendError(reply, 'method_not_allowed', `${request.method} is not allowed here; allowed: ${allow.join(', ')}`)
        },
      })
    }
  }
}
