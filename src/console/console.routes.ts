import { existsSync, readdirSync, readFileSync } from 'node:fs'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { sendError } from '../http/errors.js'

/** Where `npm run build` writes the console (scripts/build-console.mjs): dist/console beside dist/src. */
const BUILT = new URL('../../console/', import.meta.url)

/**
 * Everything the page loads comes from here: no inline script or style, no other origin, not framed.
 * The API calls go to this origin's /v1 with the key the page holds.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' }

/**
 * The operator console at /console/, outside /v1: the page needs no key (the key is typed into it).
 * Its files are read once at start: index.html (revalidated on every load) and the hashed assets
 * (kept for a year: a new build has new names).
 */
const routes: FastifyPluginAsync = async (app) => {
  const index = existsSync(new URL('index.html', BUILT)) ? readFileSync(new URL('index.html', BUILT)) : undefined
  const assets = new Map<string, Buffer>()
  if (index !== undefined)
    for (const name of readdirSync(new URL('assets/', BUILT))) assets.set(name, readFileSync(new URL(`assets/${name}`, BUILT)))

  app.addHook('onSend', async (_request, reply) => {
    reply.header('content-security-policy', CONSOLE_CSP).header('referrer-policy', 'no-referrer')
  })

  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/', 301))
  app.get('/console/', { schema: { hide: true } }, async (_request, reply) => {
    if (index === undefined) return sendError(reply, 'not_found', 'The console is not built: run npm run build')
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(index)
  })
  app.get('/console/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const { name } = request.params as { name: string }
    const body = assets.get(name)
    const type = TYPES[name.slice(name.lastIndexOf('.') + 1)]
    if (body === undefined || type === undefined) return sendError(reply, 'not_found', 'No such console asset')
    return reply.type(type).header('cache-control', 'public, max-age=31536000, immutable').send(body)
  })
}

export const consoleRoutes = fp(routes, { name: 'petstore-console-routes', dependencies: ['petstore-errors'], encapsulate: true })
