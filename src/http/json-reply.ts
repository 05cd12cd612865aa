import type { FastifyReply } from 'fastify'

/**
 * Sends JSON text the service serialized itself (exact int64 numbers), bypassing the schema
 * serializer. The route's response schema still documents the shape.
 */
export function sendJsonText(reply: FastifyReply, body: string | Buffer) {
  return reply.type('application/json; charset=utf-8').send(body)
}
