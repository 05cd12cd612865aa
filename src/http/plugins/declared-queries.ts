import fp from 'fastify-plugin'

/**
 * Gives every operation that declares no query parameters an empty query schema, so the query
 * validator (validation.ts) refuses any parameter it is sent with 400 before anything runs: a
 * `?status=sold` on an operation that cannot filter must not pass for a filtered answer, and nothing
 * undeclared may ride along on a write. Registered before the routes it is to cover.
 */
export const declaredQueries = fp(
  async (app) => {
    app.addHook('onRoute', (route) => {
      const schema = route.schema as { operationId?: string; querystring?: unknown } | undefined
      if (schema?.operationId === undefined || schema.querystring !== undefined) return
      schema.querystring = { type: 'object', properties: {} }
    })
  },
  { name: 'petstore-declared-queries', dependencies: ['petstore-validation'] },
)
