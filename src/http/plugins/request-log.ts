import fp from 'fastify-plugin'
import { routeOf } from '../route-of.js'

/** A request target without its query string. */
const pathOf = (url: string) => url.split('?', 1)[0]!

/**
 * One log line per request, at info (the server is built with Fastify's own request logging off);
 * below that level the hook is not even registered. The path without its query: a client that sends
 * its key as ?access_token=… must not have it written down.
 */
export const requestLog = fp(
  async (app) => {
    if (!['trace', 'debug', 'info'].includes(app.log.level)) return
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          route: routeOf(request).url,
          path: pathOf(request.url),
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      )
      done()
    })
  },
  { name: 'petstore-request-log', dependencies: ['petstore-request-ids'] },
)
