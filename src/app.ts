import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { FreshCache } from './cache/fresh-cache.js'
import type { Config } from './config.js'
import { API_PREFIX } from './http/api-prefix.js'
import { ErrorSchema } from './http/error.schema.js'
import { Lifecycle } from './http/lifecycle.js'
import { admission } from './http/plugins/admission.js'
import { auth } from './http/plugins/auth.js'
import { declaredQueries } from './http/plugins/declared-queries.js'
import { deprecation } from './http/plugins/deprecation.js'
import { errors } from './http/plugins/errors.js'
import { requestMetrics } from './http/plugins/metrics.js'
import { openApi } from './http/plugins/openapi.js'
import { rateLimits } from './http/plugins/rate-limits.js'
import { representation } from './http/plugins/representation.js'
import { requestIds } from './http/plugins/request-ids.js'
import { requestLog } from './http/plugins/request-log.js'
import type { RequestTracing } from './tracing/request-tracing.js'
import { validation } from './http/plugins/validation.js'
import { healthRoutes } from './http/routes/health.routes.js'
import { methodNotAllowedRoutes, servedPaths } from './http/routes/method-not-allowed.routes.js'
import { serverOptions } from './http/server-options.js'
import { ChangeStreams } from './changes/change-streams.js'
import { LedgerPruner } from './changes/ledger-pruner.js'
import { LedgerTail } from './changes/ledger-tail.js'
import { streamRoutes } from './changes/stream.routes.js'
import { changesRoutes } from './inventory/changes.routes.js'
import { inventoryBatchRoutes } from './inventory/inventory-batch.routes.js'
import { inventoryRoutes } from './inventory/inventory.routes.js'
import {
  ChangeReasonSchema,
  InventoryChangeSchema,
  InventoryItemSchema,
  InventoryUpdateSchema,
  PetStatusSchema,
} from './inventory/inventory.schema.js'
import { InventoryService } from './inventory/inventory.service.js'
import {
  InventoryAdjustmentSchema,
  InventoryBatchChangeSchema,
  InventoryBatchResultSchema,
  InventoryBatchSchema,
} from './inventory/stock-moves.schema.js'
import { KeysService } from './keys/keys.service.js'
import type { Metrics } from './metrics/metrics.js'
import { OrderCreateSchema, OrderSchema, OrderStatusSchema, OrderUpdateSchema } from './orders/order.schema.js'
import { ordersRoutes } from './orders/orders.routes.js'
import { locationsRoutes } from './locations/locations.routes.js'
import { LocationsService } from './locations/locations.service.js'
import {
  LocationCreateSchema,
  LocationSchema,
  LocationUpdateSchema,
  StockLevelSchema,
  TransferResultSchema,
  TransferSchema,
} from './locations/location.schema.js'
import {
  ReservationCreateSchema,
  ReservationExtendSchema,
  ReservationLineSchema,
  ReservationSchema,
  ReservationStatusSchema,
} from './reservations/reservation.schema.js'
import { HoldExpiry } from './reservations/hold-expiry.js'
import { reservationsRoutes } from './reservations/reservations.routes.js'
import { ReservationsService } from './reservations/reservations.service.js'
import { OrdersService } from './orders/orders.service.js'
import { Deprecation } from './http/deprecation.js'
import { CategorySchema, DeprecatedCallsSchema, PetSchema, TagSchema } from './pets/pet.schema.js'
import { ApiKeyCreateSchema, ApiKeySchema, NewApiKeySchema, ScopeSchema } from './keys/key.schema.js'
import { keysRoutes } from './keys/keys.routes.js'
import { PET_LOOKUP_URL, petsRoutes } from './pets/pets.routes.js'
import { PetsService } from './pets/pets.service.js'
import { logFaultChange } from './storage/faults.js'
import type { Storage } from './storage/ports.js'
import { WebhookDelivery } from './webhooks/delivery.js'
import { NewWebhookSchema, WebhookCreateSchema, WebhookSchema } from './webhooks/webhook.schema.js'
import { webhooksRoutes } from './webhooks/webhooks.routes.js'
import { consoleRoutes } from './console/console.routes.js'
import { WebhooksService } from './webhooks/webhooks.service.js'

export { BODY_LIMIT } from './http/server-options.js'

export const SHARED_SCHEMAS = [
  PetStatusSchema,
  InventoryItemSchema,
  InventoryUpdateSchema,
  InventoryAdjustmentSchema,
  InventoryBatchChangeSchema,
  InventoryBatchSchema,
  InventoryBatchResultSchema,
  ChangeReasonSchema,
  InventoryChangeSchema,
  OrderStatusSchema,
  OrderSchema,
  OrderCreateSchema,
  OrderUpdateSchema,
  ReservationStatusSchema,
  ReservationLineSchema,
  ReservationSchema,
  ReservationCreateSchema,
  ReservationExtendSchema,
  LocationSchema,
  LocationCreateSchema,
  LocationUpdateSchema,
  StockLevelSchema,
  TransferSchema,
  TransferResultSchema,
  CategorySchema,
  TagSchema,
  PetSchema,
  DeprecatedCallsSchema,
  ScopeSchema,
  ApiKeySchema,
  NewApiKeySchema,
  ApiKeyCreateSchema,
  WebhookSchema,
  NewWebhookSchema,
  WebhookCreateSchema,
  ErrorSchema,
]

export interface AppDeps {
  storage: Storage
  logger?: FastifyServerOptions['logger']
  /** Shared with server.ts, which starts the drain on SIGTERM. */
  lifecycle?: Lifecycle
  /** This process's metrics, when METRICS_PORT is set; without them no request is measured. */
  metrics?: Metrics | undefined
  /** Tracing, when the OTEL_* variables turn it on; without it nothing of OpenTelemetry is loaded. */
  tracing?: RequestTracing | undefined
}

/**
 * Builds the whole HTTP application from named plugins, each given the settings it uses; never
 * listens (server.ts does). Each plugin names the ones it needs registered before it (Fastify checks),
 * so the order below is the one they declare; docs/architecture.md lists them.
 */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const { storage, metrics } = deps
  const lifecycle = deps.lifecycle ?? new Lifecycle()
  const petLookup = {
    url: `${API_PREFIX}${PET_LOOKUP_URL}`,
    deprecation: new Deprecation(config.petLookupDeprecatedAt, config.petLookupSunsetAt, `${API_PREFIX}/docs#/pets/getPetById`),
  }
  const app = Fastify(
    serverOptions(config, { logger: deps.logger, metrics, deprecated: petLookup }),
  ).withTypeProvider<TypeBoxTypeProvider>()

  // Cross-cutting, in the order every request meets them; the request's span first, so it covers them all.
  if (deps.tracing) await app.register(deps.tracing.plugin)
  await app.register(errors)
  await app.register(validation, { schemas: SHARED_SCHEMAS })
  await app.register(requestIds)
  await app.register(representation)
  await app.register(admission, {
    maxInFlight: config.maxInFlight,
    shedEventLoopDelayMs: config.shedEventLoopDelayMs,
    shedEventLoopUtilization: config.shedEventLoopUtilization,
    lifecycle,
  })
  if (metrics) await app.register(requestMetrics, { metrics, storage })
  await app.register(requestLog, { idsOf: deps.tracing?.idsOf })

  // What shapes the routes as they are registered.
  await app.register(declaredQueries)
  await app.register(servedPaths)
  await app.register(deprecation, petLookup)
  await app.register(openApi, {
    environment: config.environment,
    publicBaseUrl: config.publicBaseUrl,
    productionBaseUrl: config.productionBaseUrl,
    stagingBaseUrl: config.stagingBaseUrl,
  })

  await app.register(healthRoutes, { storage, lifecycle })

  // The authenticated API.
  const cache = new FreshCache(storage)
  await app.register(rateLimits, {
    rateLimitPerKey: config.rateLimitPerKey,
    rateLimitPerAddress: config.rateLimitPerAddress,
    rateLimitWindowS: config.rateLimitWindowS,
    redisUrl: config.redisUrl,
    redisKeyPrefix: config.redisKeyPrefix,
    observer: metrics?.rateLimitObserver,
  })
  const keys = new KeysService(storage, cache.verifiedKeys)
  await app.register(auth, { keys, cache })
  const inventory = new InventoryService(storage)
  await app.register(changesRoutes, { prefix: API_PREFIX, inventory })
  // Live changes: one tail of the ledger per process, shared by the open streams and webhook delivery.
  const tail = new LedgerTail(storage, app.log)
  const streams = new ChangeStreams(tail, storage, { heartbeatMs: config.streamHeartbeatMs, maxPerKey: config.streamMaxPerKey })
  metrics?.watch({ openStreams: () => streams.size })
  await app.register(streamRoutes, { prefix: API_PREFIX, streams, tail, ledger: storage, lifecycle })
  const delivery = new WebhookDelivery(
    storage,
    storage,
    tail,
    {
      timeoutMs: config.webhookTimeoutMs,
      retryScheduleMs: config.webhookRetryScheduleMs,
      allowPrivate: config.webhookAllowPrivate,
      leaseMs: config.webhookLeaseMs,
      brokerAllowedHosts: config.brokerAllowedHosts,
    },
    app.log,
    metrics?.deliveryObserver,
  )
  // The database's lasting faults (a full disk, read-only after a failover): a line when each begins and ends.
  const faultLines = storage.faults.subscribe((change) => logFaultChange(app.log, change))
  app.addHook('onClose', async () => {
    faultLines()
  })
  // LEDGER_RETENTION: the ledger's old rows removed in the background (none when it is unset).
  const pruner = config.ledgerRetentionMs === undefined ? undefined : new LedgerPruner(storage, config.ledgerRetentionMs, app.log)
  // Holds whose expiresAt has passed give their units back, on every instance (issue 47).
  const holdExpiry = new HoldExpiry(storage, app.log)
  app.addHook('onReady', async () => {
    delivery.start()
    pruner?.start()
    holdExpiry.start()
  })
  // After the routes' own onClose hooks (Fastify runs them last added first), before the storage closes.
  app.addHook('onClose', async () => {
    await holdExpiry.stop()
    await pruner?.stop()
    await delivery.stop()
    tail.stop()
  })
  await app.register(inventoryRoutes, {
    prefix: API_PREFIX,
    inventory,
    list: cache.inventoryList,
    listByStatus: cache.inventoryListByStatus,
    requireIfMatch: config.requireIfMatch,
  })
  await app.register(inventoryBatchRoutes, { prefix: API_PREFIX, inventory })
  await app.register(locationsRoutes, { prefix: API_PREFIX, locations: new LocationsService(storage), inventory })
  await app.register(ordersRoutes, { prefix: API_PREFIX, orders: new OrdersService(storage) })
  await app.register(reservationsRoutes, { prefix: API_PREFIX, reservations: new ReservationsService(storage) })
  await app.register(petsRoutes, {
    prefix: API_PREFIX,
    pets: new PetsService(storage),
    storage,
    deprecatedCallsFlushMs: config.deprecatedCallsFlushMs,
    deprecation: petLookup.deprecation,
  })
  await app.register(keysRoutes, { prefix: API_PREFIX, keys })
  const webhooks = new WebhooksService(
    storage,
    {
      allowPrivate: config.webhookAllowPrivate,
      httpsOnly: config.environment === 'production',
      brokerAllowedHosts: config.brokerAllowedHosts,
    },
    () => void delivery.scan(),
  )
  await app.register(webhooksRoutes, { prefix: API_PREFIX, webhooks })
  // The operator console (outside /v1, no key for the page itself: it signs in with one).
  await app.register(consoleRoutes)

  // Last, outside the authenticated scopes: a wrong method is answered before authentication.
  await app.register(methodNotAllowedRoutes)
  return app
}
