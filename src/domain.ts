/**
 * The store's domain types, in one place: storage, services and the HTTP layer all import them
 * from here, and this module imports nothing. The HTTP schemas (src/inventory/inventory.schema.ts)
 * describe these same shapes on the wire.
 */

/** The sales statuses of a pet and its inventory entry, in the spec's order. */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = (typeof PET_STATUSES)[number]

/** Quantities fit a signed 32-bit integer: the spec says "integer", we bound it for every client and backend. */
export const MAX_QUANTITY = 2147483647

/** One pet's stock: petId is an exact int64, carried as a bigint everywhere. */
export interface InventoryItem {
  petId: bigint
  quantity: number
  status: PetStatus
}

/**
 * Why a quantity set by a PATCH (or a set in a batch) changed, as its client says: stock arrived,
 * stock came back, a physical count, units damaged or lost (shrinkage: theft, expiry, miscounts
 * found), or any other adjustment (the default). The other reasons are the store's own.
 */
export const SET_REASONS = ['adjustment', 'arrival', 'return', 'count', 'damage', 'loss'] as const
export type SetReason = (typeof SET_REASONS)[number]

/** Why a quantity moved by a delta: a set's reasons but `count`, which states a whole quantity. */
export const DELTA_REASONS = ['adjustment', 'arrival', 'return', 'damage', 'loss'] as const satisfies readonly SetReason[]
export type DeltaReason = (typeof DELTA_REASONS)[number]

/**
 * Why a quantity changed: a client's reason, an import, an order placed, an order cancelled, units
 * held for a checkout (reservation), given back by a client (release) or by the hold's expiry, units
 * moved between two locations (transfer: a row at each, sharing a transfer id).
 */
export const CHANGE_REASONS = [...SET_REASONS, 'import', 'order', 'cancellation', 'reservation', 'release', 'expiry', 'transfer'] as const
export type ChangeReason = (typeof CHANGE_REASONS)[number]

/** The most changes one batch (POST /v1/inventory/batch) holds. */
export const MAX_BATCH_CHANGES = 1000

/** The longest note a change may carry, in characters (Unicode code points, as the validator counts). */
export const NOTE_MAX_LENGTH = 500

/** Who asked for a change: the API key and request, or neither for the CLI. */
export interface Actor {
  keyId: number | null
  requestId: string | null
  /** With tracing on: the request's span as a W3C traceparent, kept on its ledger rows (InventoryChange). */
  traceContext?: string | undefined
  /** The locations its key is held to (AuthenticatedKey.locations); absent: every one. */
  locations?: readonly number[] | undefined
}

export const CLI_ACTOR: Actor = { keyId: null, requestId: null }

/**
 * One row of the ledger: every change to a quantity appends one, in the transaction of the change.
 * `seq` increases in commit order, so a reader that polls with the last seq it saw misses nothing.
 */
export interface InventoryChange {
  seq: bigint
  petId: bigint
  /** null when the change created the entry. */
  previousQuantity: number | null
  quantity: number
  reason: ChangeReason
  /** The PATCH's note; null when it gave none, and for every other reason. */
  note: string | null
  orderId: bigint | null
  /**
   * The hold the change took units for (reason reservation), gave back from (release, expiry) or
   * confirmed (order); absent on every other row.
   */
  reservationId?: bigint | undefined
  /**
   * The location whose quantity changed: absent at the default location, so a store with one location
   * sees its rows as before. previousQuantity and quantity are that location's.
   */
  locationId?: number | undefined
  /** A transfer's two rows (reason transfer, out of one location and into another) share its id; absent on every other row. */
  transferId?: string | undefined
  /**
   * The batch the change was part of (POST /v1/inventory/batch): every row of one batch carries its
   * id, and they are contiguous in seq order. null for a change made alone.
   */
  batchId: string | null
  keyId: number | null
  requestId: string | null
  /** RFC 3339, UTC, milliseconds. */
  at: string
  /**
   * With tracing on, the span of the request that made the change, as a W3C traceparent: each
   * delivery of the row is linked to it. Absent otherwise; never part of any message or body.
   */
  traceContext?: string | undefined
}

/**
 * A jump of the ledger's seqs (`petstore restore --bump-seq`, `petstore ledger bump-seq`): no row
 * has a seq in (after, through], and none ever will; a cursor there is from a history the database
 * no longer holds (the one before a restore or a point-in-time recovery).
 */
export interface LedgerJump {
  after: bigint
  through: bigint
  /** RFC 3339, UTC: when the jump was made. */
  at: string
}

/** The order statuses, and the transitions between them: anything else is refused. */
export const ORDER_STATUSES = ['placed', 'approved', 'delivered', 'cancelled'] as const
export type OrderStatus = (typeof ORDER_STATUSES)[number]
export const ORDER_TRANSITIONS: Readonly<Record<OrderStatus, readonly OrderStatus[]>> = {
  placed: ['approved', 'cancelled'],
  approved: ['delivered', 'cancelled'],
  delivered: [],
  cancelled: [],
}

/** Units of a line (an order, a hold's line) taken from one location. */
export interface Allocation {
  locationId: number
  quantity: number
}

/**
 * An order reserves its quantity of a pet's stock from placement until it is cancelled, taken from
 * the locations `allocations` names (in the order taken); absent when all of it came from the
 * default location, so a store with one location sees its orders as before.
 */
export interface Order {
  id: bigint
  petId: bigint
  quantity: number
  status: OrderStatus
  placedAt: string
  updatedAt: string
  allocations?: Allocation[] | undefined
}

/**
 * A hold's statuses: active while it holds its units; then confirmed (its lines became orders),
 * released (a client gave the units back) or expired (they came back by themselves at expiresAt).
 */
export const RESERVATION_STATUSES = ['active', 'confirmed', 'released', 'expired'] as const
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number]

/** Bounds on a hold (POST /v1/store/reservations), for every client and backend alike. */
export const RESERVATION_LIMITS = {
  lines: 100,
  minSeconds: 10,
  maxSeconds: 14_400,
  defaultSeconds: 900,
  referenceLength: 255,
} as const

/** One line of a hold: units of one pet, and once the hold is confirmed the order they became. */
export interface ReservationLine {
  petId: bigint
  quantity: number
  orderId: bigint | null
  /** Where its units were taken from (as an order's); absent when all came from the default location. */
  allocations?: Allocation[] | undefined
}

/**
 * Units of stock held for a checkout: taken from each line's entry when the hold is placed (so the
 * inventory shows what can still be sold), given back when it is released or expires, turned into
 * orders when it is confirmed (each order taking its line's allocations).
 */
export interface Reservation {
  id: bigint
  status: ReservationStatus
  lines: ReservationLine[]
  /** RFC 3339, UTC, milliseconds: when an active hold gives its units back by itself. */
  expiresAt: string
  /** The caller's own reference (a cart id), or null. */
  reference: string | null
  createdAt: string
  updatedAt: string
}

/**
 * A place that holds stock (a shop, a warehouse). Every entry's stock is the sum of its levels at the
 * locations; location DEFAULT_LOCATION_ID exists from the start (the migration creates it, holding
 * every entry's stock) and is where a write that names no location applies. A location is deactivated
 * only while it holds nothing, and takes no stock while inactive; the default one is never.
 */
export interface Location {
  id: number
  name: string
  active: boolean
  createdAt: string
  updatedAt: string
}

export const DEFAULT_LOCATION_ID = 1

/** Bounds on locations: a name's length in characters, and how many a store may have. */
export const LOCATION_LIMITS = { nameLength: 100, locations: 1000, perKey: 100 } as const

/** One pet's stock at one location. */
export interface StockLevel {
  petId: bigint
  locationId: number
  quantity: number
  status: PetStatus
}

/** A category or a tag of a pet, as in the public Petstore: an exact int64 id and a name. */
export interface Category {
  id: bigint
  name: string
}
export type Tag = Category

/**
 * A pet, as the public Petstore's Pet. It has no status of its own: `status` is its inventory
 * entry's (the inventory is the one source of truth), absent when the pet has no entry.
 */
export interface Pet {
  id: bigint
  name: string
  category?: Category | undefined
  photoUrls: string[]
  tags: Tag[]
  status?: PetStatus | undefined
}

/**
 * Bounds on a pet record, for every client and backend alike: they keep one pet's row (and an
 * import's chunk of them) to a known size. Lengths count characters (Unicode code points).
 */
export const PET_LIMITS = {
  nameLength: 255,
  photoUrls: 20,
  photoUrlLength: 2048,
  tags: 20,
} as const

/** Calls of the deprecated pet lookup by one API key, as flushed to the database. */
export interface DeprecatedCalls {
  keyId: number
  calls: number
  /** RFC 3339 UTC with milliseconds. */
  firstCall: string
  lastCall: string
}

/** One record of an import file, with its position there (entry or line number) for messages. */
export interface ImportRecord {
  item: InventoryItem
  position: number
}

/** One record of a pets import file, with its position there (entry number) for messages. */
export interface PetImportRecord {
  pet: Pet
  position: number
}

/**
 * What an API key may do. Each scope grants exactly what it names: `inventory:write` does not
 * include `inventory:read`, and `admin` (keys, the deprecated-lookup report) includes no other.
 * The order here is the order every listing shows them in.
 */
export const SCOPES = ['inventory:read', 'inventory:write', 'orders:read', 'orders:write', 'pets:read', 'admin'] as const
export type Scope = (typeof SCOPES)[number]

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value)

/** Who a valid key is, and what it may do: what authentication makes of a request's token. */
export interface AuthenticatedKey {
  id: number
  scopes: readonly Scope[]
  /** The locations it is held to, by id: it reads and writes only their stock. Absent: every location. */
  locations?: readonly number[] | undefined
}

/** A webhook's URL and description: bounds on what an admin may store. */
export const WEBHOOK_LIMITS = { urlLength: 2048, descriptionLength: 500, subscriptions: 100 } as const

/**
 * A webhook subscription and where its delivery stands. Every ledger row after `deliveredThrough`
 * is still to be delivered, in seq order; the others were answered 2xx.
 */
export interface Webhook {
  id: number
  /** Where it delivers, a broker URL's password (or token) masked as `***`. */
  url: string
  description: string | null
  createdAt: string
  deliveredThrough: bigint
  lastSuccessAt: string | null
  /** When the first failure of the message now being retried happened; null while deliveries succeed. */
  failingSince: string | null
  /** Failed attempts of the message now being retried. */
  failedAttempts: number
  /** When the next attempt is due; null when no retry is waiting. */
  nextAttemptAt: string | null
  lastError: string | null
  disabledAt: string | null
  disabledReason: string | null
}

/** What delivering a subscription needs beyond its state: never shown after it is created. */
export interface WebhookTarget extends Webhook {
  /** The URL as given, credentials included (`url` is it masked): for delivery only, never shown. */
  destination: string
  /** `whsec_` and the base64 key the messages are signed with. */
  secret: string
  /** Makes this subscription's message ids its own: `msg_<tag>_<seq>`. */
  messageTag: string
}
