import fp from 'fastify-plugin'
import { sendError } from '../errors.js'

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const

declare module 'fastify' {
  interface FastifyInstance {
    /** Every path the app serves, with the methods it serves it for (filled in as routes are registered). */
    servedMethods: Map<string, Set<string>>
    /** Each path of servedMethods as its routes spell it, with or without a trailing slash. */
    servedSpellings: Map<string, Set<string>>
  }
}

/**
 * Notes every path the app serves and its methods, for the 405s. Registered before any route it is
 * to cover: a route registered earlier is not seen.
 */
export const servedPaths = fp(
  async (app) => {
    const served = new Map<string, Set<string>>()
    const spellings = new Map<string, Set<string>>()
    app.decorate('servedMethods', served)
    app.decorate('servedSpellings', spellings)
    app.addHook('onRoute', (route) => {
      // A plugin's '/' route is served both with and without the trailing slash: one path here,
      // whose methods are refused under each spelling the routes use (/console and /console/).
      const url = route.url.length > 1 ? route.url.replace(/\/$/, '') : route.url
      const methods = served.get(url) ?? new Set<string>()
      for (const method of [route.method].flat()) methods.add(method)
      served.set(url, methods)
      spellings.set(url, (spellings.get(url) ?? new Set<string>()).add(route.url))
    })
  },
  { name: 'petstore-served-paths' },
)

/**
 * Makes every path the app serves answer 405, with an Allow header, to the methods it does not
 * serve. Registered last, once every other route is in place (hence its dependencies), and on the
 * root, outside the authenticated scopes: a wrong method is answered before authentication.
 */
export const methodNotAllowedRoutes = fp(
  async (app) => {
    for (const [url, methods] of [...app.servedMethods]) {
      const allow = ALL_METHODS.filter((m) => methods.has(m))
      const refused = ALL_METHODS.filter((m) => !methods.has(m))
      if (refused.length === 0) continue
      for (const spelling of app.servedSpellings.get(url) ?? [url]) {
        app.route({
          method: refused,
          url: spelling,
          schema: { hide: true },
          handler: (request, reply) => {
            reply.header('allow', allow.join(', '))
            return sendError(reply, 'method_not_allowed', `${request.method} is not allowed here; allowed: ${allow.join(', ')}`)
          },
        })
      }
    }
  },
  {
    name: 'petstore-method-not-allowed-routes',
    dependencies: [
      'petstore-errors',
      'petstore-served-paths',
      'petstore-deprecation',
      'petstore-openapi',
      'petstore-health-routes',
      'petstore-changes-routes',
      'petstore-stream-routes',
      'petstore-inventory-routes',
      'petstore-orders-routes',
      'petstore-pets-routes',
      'petstore-keys-routes',
      'petstore-webhooks-routes',
    ],
  },
)
