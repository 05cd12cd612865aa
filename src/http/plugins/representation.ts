import fp from 'fastify-plugin'

/**
 * What the service reads and writes is JSON, and only JSON: request bodies of any other type are
 * refused (415; Fastify would take text/plain), and every answer carries
 * `X-Content-Type-Options: nosniff`, so no browser may sniff a JSON error into a page, and its
 * request's `X-Request-Id` (request-ids.ts chooses it). Both in one hook: each hook a request passes
 * costs every request (measured: about 0.6 µs of CPU each for a header). Registered before
 * admission, so its refusals carry the headers too, and before any route scope (each copies the body
 * parsers it is created with). Sending a representation with its ETag is representation.ts.
 */
export const representation = fp(
  async (app) => {
    app.removeContentTypeParser('text/plain')
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id)
      reply.header('x-content-type-options', 'nosniff')
      done()
    })
  },
  { name: 'petstore-representation', dependencies: ['petstore-request-ids'] },
)
