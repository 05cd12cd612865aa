import type { FastifyReply, FastifyRequest } from 'fastify'
import { Readable } from 'node:stream'
import { Type } from 'typebox'
import type { ByteSource } from '../cache/spool.js'
import { entityTag, noneMatch } from '../entity-tags.js'
import { sendJsonText } from './json-reply.js'

/** The ETag response header, as documented on every response that carries one. */
export const ETAG_HEADER = {
  ETag: Type.String({
    description:
      'Strong entity tag of the exact response bytes: equal on every instance and across restarts, and changed whenever the representation changes.',
  }),
}

/** An entity tag as the service writes them (22 base64url characters of SHA-256, quoted). */
const ETAG_EXAMPLE = '"hMuo0Y5d3AzHkSPs2LEq2g"'

// Header names in their canonical case, as the document shows them; validated by their lower-case names (plugins/validation.ts).

/** The optional conditional-request header of the GETs. */
export const IfNoneMatchHeaders = Type.Object({
  'If-None-Match': Type.Optional(
    Type.String({
      description:
        'Entity tags from earlier responses (a list, weak or strong, or `*`). When one matches the current representation, the answer is 304 with no body.',
      examples: [ETAG_EXAMPLE],
    }),
  ),
})

/** The optional (or, with REQUIRE_IF_MATCH, required) precondition of an update. */
export const IfMatchHeaders = Type.Object({
  'If-Match': Type.Optional(
    Type.String({
      examples: [ETAG_EXAMPLE],
      description:
        'The ETag of the entry as the client last read it (or `*`). The update applies only if the entry still has it, ' +
        'checked in the same transaction as the write; otherwise 412 and nothing changes. Compared strongly: a weak tag never matches. ' +
        'Required (428 without it) when the service runs with REQUIRE_IF_MATCH=true.',
    }),
  ),
})

/** The 304 response of a GET with If-None-Match. */
export const notModifiedResponse = {
  304: Type.Null({
    description: 'Not modified: the representation still has one of the tags in If-None-Match. No body.',
    headers: ETAG_HEADER,
  }),
}

/**
 * Sends a JSON representation with its strong ETag (and, to a GET, `Cache-Control: private, no-cache`);
 * a GET (or HEAD) whose If-None-Match matches it
 * gets 304 and no body instead, and a byte source is then never read. A body in several pieces or
 * in a byte source (a large list) is streamed, never joined; its tag must then be given (a cached
 * list keeps its tag with it).
 */
export function sendRepresentation(request: FastifyRequest, reply: FastifyReply, body: string | Buffer): FastifyReply
export function sendRepresentation(
  request: FastifyRequest,
  reply: FastifyReply,
  body: Buffer | Buffer[] | ByteSource,
  tag: string,
): FastifyReply
export function sendRepresentation(
  request: FastifyRequest,
  reply: FastifyReply,
  body: string | Buffer | Buffer[] | ByteSource,
  tag = entityTag(body as string | Buffer),
) {
  reply.header('etag', tag)
  const safe = request.method === 'GET' || request.method === 'HEAD'
  // Only the client may keep a read, and it must ask again before using it: with its ETag in
  // If-None-Match, which costs a 304 while nothing changed.
  if (safe) reply.header('cache-control', 'private, no-cache')
  if (safe && noneMatch(request.headers['if-none-match'], tag)) return reply.code(304).send()
  if (typeof body === 'string' || Buffer.isBuffer(body)) return sendJsonText(reply, body)
  if (Array.isArray(body) && body.length === 1) return sendJsonText(reply, body[0]!)
  const length = Array.isArray(body) ? body.reduce((n, b) => n + b.length, 0) : body.length
  reply.header('content-length', length)
  // HEAD: Fastify would read a stream to its end only to discard it, and it keeps the length
  // given above only for a stream, so an empty one stands in.
  if (request.method === 'HEAD') return sendJsonText(reply, Readable.from([]))
  return sendJsonText(reply, Array.isArray(body) ? Readable.from(body, { objectMode: false }) : body.stream())
}
