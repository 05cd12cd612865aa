/** The versioned API's path prefix: every operation's route is under it, and every server URL ends in it. */
export const API_PREFIX = '/v1'

/**
 * The plugins every route group of the API needs registered before it: the error shape, validation
 * (and the refusal of undeclared queries), the served paths for the 405s, the OpenAPI document that
 * lists its operations, and authentication with its rate limits.
 */
export const API_ROUTE_DEPENDENCIES = [
  'petstore-errors',
  'petstore-validation',
  'petstore-declared-queries',
  'petstore-served-paths',
  'petstore-openapi',
  'petstore-rate-limits',
  'petstore-auth',
]
