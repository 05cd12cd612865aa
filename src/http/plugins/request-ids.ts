import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'

/** The X-Request-Id a client may choose; a generated UUID matches it too (the document declares it). */
export const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/**
 * Every request's id: the client's X-Request-Id when it is short and plain (so it cannot forge log
 * lines), otherwise a fresh UUID; it is in every log line of the request and sent back as
 * X-Request-Id (by the representation plugin's one hook, which writes every answer's own headers).
 * Registered before admission, so a refused request carries it too. (The server is built with
 * `requestIdHeader: false`, so nothing else reads the header.)
 */
export const requestIds = fp(
  async (app) => {
    app.setGenReqId((req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    })
  },
  { name: 'petstore-request-ids' },
)
