import fp from 'fastify-plugin'
import { handleError, sendError } from '../errors.js'

/**
 * Every error a route or hook throws, and every request no route matches, leaves as the spec's Error
 * body (see errors.ts). Registered first: a route keeps the error handler it was registered under.
 */
export const errors = fp(
  async (app) => {
    app.setErrorHandler(handleError)
    app.setNotFoundHandler((request, reply) =>
      sendError(reply, 'not_found', `No route for ${request.method} ${request.url.split('?', 1)[0]}`),
    )
  },
  { name: 'petstore-errors' },
)
