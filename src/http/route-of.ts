import type { FastifyRequest } from 'fastify'

type RouteOptions = FastifyRequest['routeOptions']

const ROUTE = Symbol('petstore.routeOptions')

/**
 * The request's route options, read once per request. Fastify's `request.routeOptions` is a getter
 * that builds a new object of twelve fields, and asks the router about version constraints, on every
 * read; admission, authentication and the request log each need it.
 */
export function routeOf(request: FastifyRequest): RouteOptions {
  const held = request as FastifyRequest & { [ROUTE]?: RouteOptions }
  held[ROUTE] ??= request.routeOptions
  return held[ROUTE]
}
