// The API as objects: one method per thing an integrator does, each naming the operation it calls.
import { supportsExactJson } from './json.js'
import { page, walk } from './paging.js'
import { type StreamOptions, streamChanges } from './stream.js'
import { type CallOptions, type ClientOptions, type Repeat, Transport } from './transport.js'
import type {
  ApiKey,
  ApiKeyCreate,
  ChangeReason,
  DeprecatedCalls,
  InventoryAdjustment,
  InventoryBatch,
  InventoryBatchResult,
  InventoryChange,
  InventoryItem,
  InventoryUpdate,
  NewApiKey,
  NewWebhook,
  OperationId,
  Order,
  OrderCreate,
  OrderStatus,
  OrderUpdate,
  Reservation,
  ReservationCreate,
  ReservationStatus,
  Page,
  Pet,
  PetStatus,
  Webhook,
  WebhookCreate,
  Location,
  LocationCreate,
  LocationUpdate,
  StockLevel,
  Transfer,
  TransferResult,
} from './types.js'

/** Every operation of the document and the methods that call it: the compiler fails when one is missing. */
export const OPERATIONS = {
  listInventory: ['inventory.list', 'inventory.iterate', 'inventory.page'],
  getInventoryItem: ['inventory.get'],
  updateInventory: ['inventory.set'],
  adjustInventory: ['inventory.adjust'],
  applyInventoryBatch: ['inventory.batch'],
  listInventoryChanges: ['changes.list', 'changes.page'],
  streamInventoryChanges: ['changes.stream'],
  placeOrder: ['orders.place'],
  listOrders: ['orders.list', 'orders.page'],
  getOrder: ['orders.get'],
  updateOrder: ['orders.update'],
  createReservation: ['reservations.hold'],
  listReservations: ['reservations.list', 'reservations.page'],
  getReservation: ['reservations.get'],
  extendReservation: ['reservations.extend'],
  releaseReservation: ['reservations.release'],
  confirmReservation: ['reservations.confirm'],
  getPetById: ['pets.get'],
  listDeprecatedCalls: ['deprecations.list'],
  listKeys: ['keys.list'],
  createKey: ['keys.create'],
  getCurrentKey: ['keys.current'],
  getKey: ['keys.get'],
  revokeKey: ['keys.revoke'],
  listWebhooks: ['webhooks.list'],
  createWebhook: ['webhooks.create'],
  getWebhook: ['webhooks.get'],
  deleteWebhook: ['webhooks.remove'],
  enableWebhook: ['webhooks.enable'],
  listLocations: ['locations.list'],
  createLocation: ['locations.create'],
  getLocation: ['locations.get'],
  updateLocation: ['locations.update'],
  listLocationInventory: ['locations.stock', 'locations.stockPage'],
  getInventoryLocations: ['inventory.locations'],
  transferInventory: ['inventory.transfer'],
} as const satisfies Record<OperationId, readonly string[]>

/** An entry with its ETag, for a conditional update (`ifMatch`). */
export interface Tagged<T> {
  item: T
  etag: string
}

export interface PageOptions extends CallOptions {
  /** Items per page, 1 to 1,000 (the service's default: 100). */
  pageSize?: number
}

export type PetstoreClient = ReturnType<typeof createClient>

export function createClient(options: ClientOptions) {
  if (!supportsExactJson()) {
    throw new Error(
      'petstore-client needs JSON.parse source text access and JSON.rawJSON (Node.js 22+, current browsers) to read int64s exactly',
    )
  }
  const http = new Transport(options)
  const id = (value: bigint) => {
    if (typeof value !== 'bigint') throw new TypeError(`An id must be a bigint (got ${typeof value}): write 1n, or BigInt(text)`)
    return encodeURIComponent(value.toString())
  }
  const get = async <T>(path: string, call?: CallOptions, query?: Record<string, string | bigint | number | undefined>) =>
    (await http.json<T>({ method: 'GET', path, query, repeat: 'safe', options: call })).body
  const send = async <T>(
    method: 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body: unknown,
    call: CallOptions | undefined,
    repeat: Repeat = 'unsafe',
  ) => http.json<T>({ method, path, body, repeat, options: call })
  const tagged = <T>(answer: { headers: Headers; body: T }): Tagged<T> => ({ item: answer.body, etag: answer.headers.get('etag') ?? '' })

  return {
    inventory: {
      /** Every entry (of a status), sorted by petId, in one answer. For a large store, `iterate`. */
      list: (query: { status?: PetStatus } = {}, call?: CallOptions) => get<InventoryItem[]>('inventory', call, query),
      /** Every entry a page at a time: memory holds one page. */
      iterate: (query: { status?: PetStatus; after?: bigint } & PageOptions = {}) =>
        walk<InventoryItem>(http, { method: 'GET', path: 'inventory', query: pageQuery(query, 100), repeat: 'safe', options: query }),
      /** One page of entries with a petId above `after`. */
      page: async (query: { status?: PetStatus; after?: bigint } & PageOptions = {}): Promise<Page<InventoryItem>> =>
        page<InventoryItem>(http, { method: 'GET', path: 'inventory', query: pageQuery(query, 100), repeat: 'safe', options: query }),
      /** One entry and its ETag. */
      get: async (petId: bigint, call?: CallOptions): Promise<Tagged<InventoryItem>> =>
        tagged(await http.json<InventoryItem>({ method: 'GET', path: `inventory/${id(petId)}`, repeat: 'safe', options: call })),
      /**
       * Sets an entry's quantity (a ledger row, a webhook). With `ifMatch` (an ETag from `get`), only if the
       * entry is unchanged since: else PetstoreError 412 `precondition_failed`. Never repeated after a lost
       * answer: that is PetstoreUnknownOutcomeError.
       */
      set: async (petId: bigint, update: InventoryUpdate, call: CallOptions & { ifMatch?: string } = {}): Promise<Tagged<InventoryItem>> =>
        tagged(
          await http.json<InventoryItem>({
            method: 'PATCH',
            path: `inventory/${id(petId)}`,
            body: update,
            headers: call.ifMatch === undefined ? {} : { 'if-match': call.ifMatch },
            repeat: 'unsafe',
            options: call,
          }),
        ),
      /**
       * Adds `delta` units to an entry (a negative delta removes them) with no read first: concurrent
       * adjustments all count. Below 0 or past the maximum is PetstoreError 409 (`insufficient_stock`,
       * `stock_overflow`) and changes nothing. Sent with an Idempotency-Key (generated unless given) and
       * repeated under it when the answer is lost, so it counts once whatever the network does.
       */
      adjust: async (
        petId: bigint,
        adjustment: InventoryAdjustment,
        call: CallOptions & { idempotencyKey?: string } = {},
      ): Promise<Tagged<InventoryItem>> =>
        tagged(
          await http.json<InventoryItem>({
            method: 'POST',
            path: `inventory/${id(petId)}/adjustments`,
            body: adjustment,
            headers: { 'idempotency-key': call.idempotencyKey ?? idempotencyKey() },
            repeat: 'safe',
            options: call,
          }),
        ),
      /**
       * Applies 1 to 1,000 changes (sets and deltas) in order, all or nothing, in one transaction: the
       * entries they left, in their order, and the batch's id (on each of its ledger rows). A change that
       * cannot apply is PetstoreError 409 or 404 whose message starts `changes[i]: `, and nothing is
       * written. Idempotent as `adjust` is.
       */
      batch: async (changes: InventoryBatch['changes'], call: CallOptions & { idempotencyKey?: string } = {}) =>
        (
          await http.json<InventoryBatchResult>({
            method: 'POST',
            path: 'inventory/batch',
            body: { changes },
            headers: { 'idempotency-key': call.idempotencyKey ?? idempotencyKey() },
            repeat: 'safe',
            options: call,
          })
        ).body,
      /** The pet's stock at each location (the default one first); their sum is its quantity. */
      locations: (petId: bigint, call?: CallOptions) => get<StockLevel[]>(`inventory/${id(petId)}/locations`, call),
      /**
       * Moves units of a pet from one location to another, in one transaction (the source never below 0:
       * PetstoreError 409 `insufficient_stock`). Idempotent as `adjust` is.
       */
      transfer: async (petId: bigint, transfer: Transfer, call: CallOptions & { idempotencyKey?: string } = {}) =>
        (
          await http.json<TransferResult>({
            method: 'POST',
            path: `inventory/${id(petId)}/transfers`,
            body: transfer,
            headers: { 'idempotency-key': call.idempotencyKey ?? idempotencyKey() },
            repeat: 'safe',
            options: call,
          })
        ).body,
    },

    locations: {
      list: (call?: CallOptions) => get<Location[]>('locations', call),
      get: (locationId: bigint, call?: CallOptions) => get<Location>(`locations/${id(locationId)}`, call),
      /** Creates a location (admin), active and empty. Not repeated after a lost answer: `list` tells. */
      create: async (location: LocationCreate, call?: CallOptions): Promise<Location> =>
        (await send<Location>('POST', 'locations', location, call)).body,
      /** Renames, deactivates (only while it holds nothing: else PetstoreError 409 `location_not_empty`) or activates one (admin). */
      update: async (locationId: bigint, change: LocationUpdate, call?: CallOptions): Promise<Location> =>
        (await send<Location>('PATCH', `locations/${id(locationId)}`, change, call, 'safe')).body,
      /** The stock at one location, by petId, a page at a time. */
      stock: (locationId: bigint, query: { status?: PetStatus; after?: bigint } & PageOptions = {}) =>
        walk<StockLevel>(http, {
          method: 'GET',
          path: `locations/${id(locationId)}/inventory`,
          query: pageQuery(query),
          repeat: 'safe',
          options: query,
        }),
      stockPage: (locationId: bigint, query: { status?: PetStatus; after?: bigint } & PageOptions = {}) =>
        page<StockLevel>(http, {
          method: 'GET',
          path: `locations/${id(locationId)}/inventory`,
          query: pageQuery(query),
          repeat: 'safe',
          options: query,
        }),
    },

    orders: {
      /**
       * Places an order, which takes the stock. Sent with an Idempotency-Key (generated unless given) and
       * repeated under it when the answer is lost, so it places one order whatever the network does.
       */
      place: async (order: OrderCreate, call: CallOptions & { idempotencyKey?: string } = {}): Promise<Order> => {
        const key = call.idempotencyKey ?? idempotencyKey()
        return (
          await http.json<Order>({
            method: 'POST',
            path: 'store/orders',
            body: order,
            headers: { 'idempotency-key': key },
            repeat: 'safe',
            options: call,
          })
        ).body
      },
      get: (orderId: bigint, call?: CallOptions) => get<Order>(`store/orders/${id(orderId)}`, call),
      /** Moves an order along: placed → approved or cancelled; approved → delivered or cancelled. */
      update: async (orderId: bigint, change: OrderUpdate, call?: CallOptions): Promise<Order> =>
        (await send<Order>('PATCH', `store/orders/${id(orderId)}`, change, call)).body,
      /** Every order (of a status), oldest first, a page at a time. */
      list: (query: { status?: OrderStatus; after?: bigint } & PageOptions = {}) =>
        walk<Order>(http, { method: 'GET', path: 'store/orders', query: pageQuery(query), repeat: 'safe', options: query }),
      page: (query: { status?: OrderStatus; after?: bigint } & PageOptions = {}) =>
        page<Order>(http, { method: 'GET', path: 'store/orders', query: pageQuery(query), repeat: 'safe', options: query }) as Promise<
          Page<Order>
        >,
    },

    reservations: {
      /**
       * Holds every line or none (409 `insufficient_stock` names each short line): the units leave the
       * inventory at once and come back by themselves at `expiresAt` unless confirmed, released or
       * extended first. Sent with an Idempotency-Key (generated unless given) and repeated under it
       * when the answer is lost, so it holds once whatever the network does.
       */
      hold: async (hold: ReservationCreate, call: CallOptions & { idempotencyKey?: string } = {}): Promise<Reservation> =>
        (
          await http.json<Reservation>({
            method: 'POST',
            path: 'store/reservations',
            body: hold,
            headers: { 'idempotency-key': call.idempotencyKey ?? idempotencyKey() },
            repeat: 'safe',
            options: call,
          })
        ).body,
      get: (reservationId: bigint, call?: CallOptions) => get<Reservation>(`store/reservations/${id(reservationId)}`, call),
      /** A new expiry, `expiresInSeconds` (10 to 14,400) from now; repeated when the answer is lost (it only sets the time again). */
      extend: async (reservationId: bigint, expiresInSeconds: number, call?: CallOptions): Promise<Reservation> =>
        (await send<Reservation>('POST', `store/reservations/${id(reservationId)}/extend`, { expiresInSeconds }, call, 'safe')).body,
      /**
       * Gives the units back now. Not repeated after a lost answer (PetstoreUnknownOutcomeError): `get`
       * tells whether it was released; a second release is PetstoreError 409 `reservation_released`.
       */
      release: async (reservationId: bigint, call?: CallOptions): Promise<Reservation> =>
        (await send<Reservation>('POST', `store/reservations/${id(reservationId)}/release`, undefined, call)).body,
      /**
       * Turns each line into a placed order, at most once (a second confirm is PetstoreError 409
       * `reservation_confirmed`); the lines' `orderId` name them. Not repeated after a lost answer: `get` tells.
       */
      confirm: async (reservationId: bigint, call?: CallOptions): Promise<Reservation> =>
        (await send<Reservation>('POST', `store/reservations/${id(reservationId)}/confirm`, undefined, call)).body,
      /** Every hold (of a status), oldest first, a page at a time. */
      list: (query: { status?: ReservationStatus; after?: bigint } & PageOptions = {}) =>
        walk<Reservation>(http, { method: 'GET', path: 'store/reservations', query: pageQuery(query), repeat: 'safe', options: query }),
      page: (query: { status?: ReservationStatus; after?: bigint } & PageOptions = {}) =>
        page<Reservation>(http, {
          method: 'GET',
          path: 'store/reservations',
          query: pageQuery(query),
          repeat: 'safe',
          options: query,
        }) as Promise<Page<Reservation>>,
    },

    changes: {
      /**
       * The ledger a page at a time: after `after` in seq order (default: from the start), or with
       * `before`, below it newest first (INT64_MAX: from the newest row). Throws
       * PetstoreCursorExpiredError (410) when `after` is before rows retention removed or from the
       * history before a restore: read `inventory.list` again, then continue after its `currentSeq`.
       */
      list: (query: ChangesQuery & PageOptions = {}) =>
        walk<InventoryChange>(http, {
          method: 'GET',
          path: 'inventory/changes',
          query: changesQuery(query),
          repeat: 'safe',
          options: query,
        }),
      /** One page; its `next` is the `after`, or with `before` the `before`, of the page that follows. Throws as `list`. */
      page: (query: ChangesQuery & PageOptions = {}) =>
        page<InventoryChange>(http, {
          method: 'GET',
          path: 'inventory/changes',
          query: changesQuery(query),
          repeat: 'safe',
          options: query,
        }),
      /**
       * Every row committed after `after` (default: from now on), live, for as long as it is iterated or
       * until `signal` aborts. Reconnects after a drop from the last seq it yielded: none missed, none twice.
       * Throws PetstoreCursorExpiredError (410), from the first connection or a reconnection, when that
       * seq is no longer in the ledger's history (retention removed what follows it, or the service's
       * database was restored from a backup taken before it): read `inventory.list` again, then stream
       * again with `after: error.currentSeq`.
       */
      stream: (query: StreamOptions = {}) => streamChanges(http, query),
    },

    pets: {
      /** @deprecated The service answers 410 from its sunset date on (see the Sunset header). */
      get: (petId: bigint, call?: CallOptions) => get<Pet>(`pets/${id(petId)}`, call),
    },

    deprecations: {
      /** Who still calls the deprecated pet lookup (admin). */
      list: (call?: CallOptions) => get<DeprecatedCalls[]>('deprecations', call),
    },

    keys: {
      /** The key this client uses: its name and scopes (any key). */
      current: (call?: CallOptions) => get<ApiKey>('keys/current', call),
      list: (call?: CallOptions) => get<ApiKey[]>('keys', call),
      get: (keyId: bigint, call?: CallOptions) => get<ApiKey>(`keys/${id(keyId)}`, call),
      /** Creates a key (admin); its `token` is in this answer only. */
      create: async (key: ApiKeyCreate, call?: CallOptions): Promise<NewApiKey> => (await send<NewApiKey>('POST', 'keys', key, call)).body,
      revoke: async (keyId: bigint, call?: CallOptions): Promise<void> => {
        await send<undefined>('DELETE', `keys/${id(keyId)}`, undefined, call)
      },
    },

    webhooks: {
      list: (call?: CallOptions) => get<Webhook[]>('webhooks', call),
      get: (webhookId: bigint, call?: CallOptions) => get<Webhook>(`webhooks/${id(webhookId)}`, call),
      /** Subscribes a URL (admin); its signing `secret` is in this answer only: keep it for verifyWebhook. */
      create: async (webhook: WebhookCreate, call?: CallOptions): Promise<NewWebhook> =>
        (await send<NewWebhook>('POST', 'webhooks', webhook, call)).body,
      remove: async (webhookId: bigint, call?: CallOptions): Promise<void> => {
        await send<undefined>('DELETE', `webhooks/${id(webhookId)}`, undefined, call)
      },
      /** Resumes a disabled subscription from its cursor. */
      enable: async (webhookId: bigint, call?: CallOptions): Promise<Webhook> =>
        (await send<Webhook>('POST', `webhooks/${id(webhookId)}/enable`, undefined, call)).body,
    },
  }
}

/** A random UUID v4; crypto.randomUUID exists only in secure contexts (HTTPS, localhost), getRandomValues everywhere. */
function idempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

function pageQuery(query: { status?: string; after?: bigint; pageSize?: number }, defaultLimit?: number) {
  return { status: query.status, after: query.after, limit: query.pageSize ?? defaultLimit }
}

/** A read of the ledger: oldest first after `after`, or newest first below `before` (the service refuses both). */
export type ChangesQuery = { petId?: bigint; reason?: ChangeReason } & (
  | { after?: bigint; before?: undefined }
  | { before?: bigint; after?: undefined }
)

function changesQuery(query: ChangesQuery & { pageSize?: number }) {
  return { after: query.after, before: query.before, petId: query.petId, reason: query.reason, limit: query.pageSize }
}
