import type { FastifyReply } from 'fastify'
import type { Readable } from 'node:stream'

/**
 * Sends JSON text the service serialized itself (exact int64 numbers), bypassing the schema
 * serializer. The route's response schema still documents the shape.
 */
export function sendJsonText(reply: FastifyReply, body: string | Buffer | Readable) {
  return reply.type('application/json; charset=utf-8').send(body)
}
