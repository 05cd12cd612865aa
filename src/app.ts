import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './config.js'
import { apiKeyAuthentication } from './http/auth.js'
import { ErrorSchema } from './http/error.schema.js'
import { registerAdmission } from './http/admission.js'
import { healthRoutes } from './http/health.routes.js'
import { Lifecycle } from './http/lifecycle.js'
import { documentRateLimits, RateLimits } from './http/rate-limit.js'
import { handleClientError, handleError, methodNotAllowedForServedPaths, registerErrorHandling } from './http/errors.js'
import { API_PREFIX, registerOpenApi } from './http/openapi.js'
import { refuseUndeclaredQueries } from './http/declared-query.js'
import { inventoryRoutes } from './inventory/inventory.routes.js'
import {
  ChangeReasonSchema,
  InventoryChangeSchema,
  InventoryItemSchema,
  InventoryUpdateSchema,
  PetStatusSchema,
} from './inventory/inventory.schema.js'
import { changesRoutes } from './inventory/changes.routes.js'
import { OrderCreateSchema, OrderSchema, OrderStatusSchema, OrderUpdateSchema } from './orders/order.schema.js'
import { ordersRoutes } from './orders/orders.routes.js'
import { OrdersService } from './orders/orders.service.js'
import { InventoryService } from './inventory/inventory.service.js'
import { FreshCache } from './cache/fresh-cache.js'
import { DeprecatedCallCounter } from './pets/deprecated-calls.js'
import { Deprecation, deprecateRoutes, withDeprecationOnUnrouted } from './pets/deprecation.js'
import { CategorySchema, PetSchema, TagSchema } from './pets/pet.schema.js'
import { PET_LOOKUP_URL, petsRoutes } from './pets/pets.routes.js'
import { PetsService } from './pets/pets.service.js'
import { KeysService } from './keys/keys.service.js'
import type { Metrics } from './metrics/metrics.js'
import { countedClientErrors, countedFrameworkErrors, registerRequestMetrics } from './metrics/request-metrics.js'
import type { Storage } from './storage/storage.js'
import { compileParamsValidator, compileQueryValidator, createValidator, describeValidationError } from './validation.js'

/** The documented request body limit (64 KiB). */
export const BODY_LIMIT = 64 * 1024

export const SHARED_SCHEMAS = [
  PetStatusSchema,
  InventoryItemSchema,
  InventoryUpdateSchema,
  ChangeReasonSchema,
  InventoryChangeSchema,
  OrderStatusSchema,
  OrderSchema,
  OrderCreateSchema,
  OrderUpdateSchema,
  CategorySchema,
  TagSchema,
  PetSchema,
  ErrorSchema,
]

/** A request target without its query string. */
const pathOf = (url: string) => url.split('?', 1)[0]!

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

export interface AppDeps {
  storage: Storage
  logger?: FastifyServerOptions['logger']
  /** Shared with server.ts, which starts the drain on SIGTERM. */
  lifecycle?: Lifecycle
  /** This process's metrics, when METRICS_PORT is set; without them no request is measured. */
  metrics?: Metrics | undefined
}

/** The rate limits the configuration asks for, if any, closed with the app. */
function rateLimits(app: FastifyInstance, config: Config, metrics: Metrics | undefined): RateLimits | undefined {
  if (config.rateLimitPerKey === 0 && config.rateLimitPerAddress === 0) return undefined
  app.decorateReply('rateLimits', null)
  const limits = RateLimits.fromConfig(
    config,
    {
      onFailure: (error, first) => {
        metrics?.rateLimitObserver.storeFailed()
        if (first) app.log.error({ err: error }, 'rate limit store (Redis) unavailable: counting in this process until it answers')
      },
      onRecovery: () => app.log.info('rate limit store (Redis) available again'),
    },
    metrics?.rateLimitObserver,
  )
  app.addHook('onClose', () => limits.close())
  return limits
}

/** Builds the whole HTTP application; never listens (server.ts does). */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const petLookup = new Deprecation(config.petLookupDeprecatedAt, config.petLookupSunsetAt, `${API_PREFIX}/docs#/pets/getPetById`)
  const app = Fastify({
    logger: deps.logger ?? {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    },
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    // A client's X-Request-Id is kept when it is short and plain, so it cannot forge log lines.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    bodyLimit: BODY_LIMIT,
    // Behind a load balancer the client's address comes from X-Forwarded-For, trusted as configured.
    trustProxy: config.trustProxy as boolean | string,
    // Slow or idle clients must not hold sockets forever. A client gets HEADERS_TIMEOUT_MS to send its
    // headers and REQUEST_TIMEOUT_MS for the whole request (408 past either); an idle keep-alive
    // connection lasts KEEP_ALIVE_TIMEOUT_MS, longer than a load balancer's idle timeout, so the
    // balancer, not the service, closes it (no request lost in the race). Node enforces the first two
    // only every connectionsCheckingInterval (30 s by default): 1 s here, so the bounds hold to the second.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
      maxHeaderSize: config.maxHeaderBytes,
    },
    return503OnClosing: false,
    // A long petId must reach the validator (400), not fall out of the router as a 404.
    routerOptions: { maxParamLength: 8192 },
    clientErrorHandler: deps.metrics ? countedClientErrors(deps.metrics) : handleClientError,
    frameworkErrors: withDeprecationOnUnrouted(
      deps.metrics ? countedFrameworkErrors(deps.metrics) : handleError,
      `${API_PREFIX}${PET_LOOKUP_URL}`,
      petLookup,
    ),
    schemaErrorFormatter: (errors, dataVar) => new Error(errors[0] ? describeValidationError(errors[0], dataVar) : `${dataVar} is invalid`),
  }).withTypeProvider<TypeBoxTypeProvider>()

  const ajv = createValidator(SHARED_SCHEMAS)
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'params'
      ? compileParamsValidator(schema as object)
      : httpPart === 'querystring'
        ? compileQueryValidator(schema as object)
        : ajv.compile(schema),
  )
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  app.removeContentTypeParser('text/plain')

  const lifecycle = deps.lifecycle ?? new Lifecycle()
  const admission = await registerAdmission(app, config, lifecycle)
  if (deps.metrics) {
    deps.metrics.watch({ inFlight: admission.inFlight, storage: deps.storage })
    registerRequestMetrics(app, deps.metrics)
  }
  // One log line per request, at info; below that level the hook is not even registered. The path
  // without its query: a client that sends its key as ?access_token=… must not have it written down.
  if (['trace', 'debug', 'info'].includes(app.log.level)) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          route: request.routeOptions.url,
          path: pathOf(request.url),
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      )
      done()
    })
  }

  registerErrorHandling(app)
  refuseUndeclaredQueries(app)
  const registerMethodNotAllowed = methodNotAllowedForServedPaths(app)
  deprecateRoutes(app, `${API_PREFIX}${PET_LOOKUP_URL}`, petLookup)
  await registerOpenApi(app, config)
  await app.register(healthRoutes, { storage: deps.storage, lifecycle })

  const inventory = new InventoryService(deps.storage)
  const cache = new FreshCache(deps.storage)
  const keys = new KeysService(deps.storage, cache.verifiedKeys)
  const limits = rateLimits(app, config, deps.metrics)
  await limits?.ready()
  const authenticate = apiKeyAuthentication(app, keys, cache, limits)
  await app.register(
    async (secured) => {
      secured.addHook('onRequest', authenticate)
      documentRateLimits(secured)
      await secured.register(changesRoutes, { inventory })
      await secured.register(inventoryRoutes, { inventory, list: cache.inventoryList, requireIfMatch: config.requireIfMatch })
      await secured.register(ordersRoutes, { orders: new OrdersService(deps.storage) })
    },
    { prefix: API_PREFIX },
  )
  const deprecatedCalls = new DeprecatedCallCounter(deps.storage, {
    flushMs: config.deprecatedCallsFlushMs,
    onFlushError: (error, keys) =>
      app.log.error({ err: error, keys }, 'cannot write the counts of deprecated calls; they are kept for the next try'),
  })
  // Storage must still be open: server.ts closes it only after the app.
  app.addHook('onClose', () => deprecatedCalls.close())
  await app.register(
    async (pets) => {
      documentRateLimits(pets)
      await pets.register(petsRoutes, { pets: new PetsService(deps.storage), authenticate, deprecatedCalls, deprecation: petLookup })
    },
    { prefix: API_PREFIX },
  )
  // Last, outside the authenticated scope: a wrong method is answered before authentication.
  await app.register(registerMethodNotAllowed)
  return app
}
