import type { DatabaseFaults } from './faults.js'
import type {
  ChangeReason,
  DeprecatedCalls,
  ImportRecord,
  InventoryChange,
  InventoryItem,
  LedgerJump,
  Location,
  Order,
  OrderStatus,
  Pet,
  PetImportRecord,
  PetStatus,
  Reservation,
  ReservationStatus,
  Scope,
  StockLevel,
  Webhook,
  WebhookTarget,
} from '../domain.js'
import type { ResultOf, StockWrite } from '../stock/writes.js'
import type { InvariantChecks } from './invariants.js'

/*
 * What the services need from a database, as one narrow port per concept: a service names the ports
 * it uses, and a backend (sqlite/, postgres/) implements them all as `Storage`. Implementations own
 * all SQL; they map rows to the domain's shapes, keep int64 values exact, and acknowledge a write only
 * once it is durable. test/storage/ states each port's promises, for every backend.
 */

/** Ledger rows with a seq in (after, through], optionally of one pet, oldest or newest first. */
export interface ChangeQuery {
  after: bigint
  /** The last seq to read; without it, to the end. */
  through?: bigint | undefined
  limit: number
  petId?: bigint | undefined
  /** Only rows of this reason (read by the ledger's reason index, or with petId by the pet's). */
  reason?: ChangeReason | undefined
  newestFirst?: boolean
  /**
   * Read each row's traceContext too (delivery, with tracing on; not with petId). Only then: a column
   * more in every read of the feed made PostgreSQL plan its newest-first page with a sort.
   */
  traceContexts?: boolean | undefined
}

/** A page of orders: by id after `after`, optionally of one status. */
export interface OrderQuery {
  after: bigint
  limit: number
  status?: OrderStatus | undefined
}

/** A page of the inventory: by petId (signed 64-bit) above `after`, or from the smallest without it, optionally of one status. */
export interface InventoryQuery {
  after?: bigint | undefined
  limit: number
  status?: PetStatus | undefined
}

export interface Versions {
  inventory: string
  keys: string
}

export interface ApiKey {
  id: number
  name: string
  /** In the order of SCOPES; never empty. */
  scopes: Scope[]
  /** The locations it is held to, by id; absent when it reaches every one. */
  locations?: number[] | undefined
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
}

/** A PostgreSQL pool's connections at one moment. */
export interface ConnectionUse {
  /** Open connections, lent or idle. */
  total: number
  idle: number
  /** Requests waiting for a connection. */
  waiting: number
}

/**
 * What storage reports as it works, for the metrics (src/metrics/): storage calls it, never imports
 * them. Without an observer, storage does not even read a clock for it.
 */
export interface StorageObserver {
  /** A group commit's batch ended, committed or failed: how many writes it held and how long it took. */
  batchCommitted(backend: Storage['dialect'], writes: number, seconds: number): void
  /** A PostgreSQL statement ended, answered or failed. */
  statementRan(seconds: number): void
  /** A PostgreSQL stock batch found what it read changed by another writer, and was planned again under the lock. */
  stockReplanned(): void
}

/** The inventory as it is now, and the change counters that say when it moved. */
export interface InventoryReads {
  /**
   * Opaque change counters, read together in one step: `inventory` moves whenever any writer (this
   * process, the CLI, another instance) commits a change to the inventory; `keys` whenever a key is
   * created or revoked. Equal values mean unchanged data. Read them before the data they guard.
   */
  versions(): Promise<Versions>
  /**
   * The whole inventory as the list's JSON without its brackets: every entry as `itemJson` writes it
   * (src/inventory/inventory.json.ts), sorted by petId ascending, comma-separated, all from one
   * consistent snapshot taken after the call. It is handed to `onPiece` in pieces of bounded size as
   * it is read (an entry may span two), with the number of entries each piece completes; the next
   * piece is read once `onPiece` has resolved, and the event loop runs between pieces, so a large
   * inventory never stalls the process nor fills its memory. With `status`, only the entries of that
   * status, read the same way: each step reads a bounded number of entries whatever few of them match.
   */
  forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>, status?: PetStatus): Promise<void>
  /**
   * Up to `limit` entries of the query, sorted by petId ascending, read in one statement (one
   * snapshot). Keyset paging: a walk that continues after the last petId of each page never shows an
   * entry twice, and never skips one that existed (and matched) for the whole walk.
   */
  listInventory(query: InventoryQuery): Promise<InventoryItem[]>
  /** One entry, or undefined when the pet has none. */
  getInventoryItem(petId: bigint): Promise<InventoryItem | undefined>
}

/** Every write that changes stock, with its ledger rows. */
export interface StockWrites {
  /**
   * Applies one write that changes stock (a quantity set, if its precondition holds for the entry as
   * it is at that point; an order placed, unless the stock would go below zero; an order's status
   * changed), with its ledger row, and resolves after the commit with the result of the write's kind.
   * Concurrent writes share commits, applied in the order they were asked for, by the rules of
   * src/stock/planner.ts.
   */
  writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>>
}

/** The ledger: one row per change to a quantity, in commit order. */
export interface LedgerReads {
  /** Up to `limit` ledger rows of the query's seq range (of one pet: read by the ledger's index by pet). */
  listChanges(query: ChangeQuery): Promise<InventoryChange[]>
  /** The ledger's last seq (0 when empty). */
  lastChangeSeq(): Promise<bigint>
}

/** Retention: the ledger's oldest rows removed, a prefix at a time (LEDGER_RETENTION). */
export interface LedgerRetention {
  /**
   * The highest seq removed so far (0 when none): a cursor before it has lost rows. Read it after the
   * rows a reader returns: it only grows, so a value at or below the cursor then means none of those
   * rows' predecessors were missing when they were read.
   */
  prunedThrough(): Promise<bigint>
  /**
   * Removes up to `maxRows` of the oldest rows, in seq order, while their `at` is before `before`
   * (ISO 8601); it stops at the first row that is not, so what stays is every row after some seq,
   * and it never removes the newest row. One short transaction; with PostgreSQL, one instance at a
   * time (another gets 0 at once). Resolves with how many rows it removed.
   */
  pruneLedger(before: string, maxRows: number): Promise<number>
}

/**
 * Jumps of the ledger's seqs (domain.ts LedgerJump): after a restore or a point-in-time recovery, the
 * next seq is made to pass every seq a consumer may have seen, and the seqs skipped stay expired.
 */
export interface LedgerJumps {
  /** The jump whose skipped seqs hold `cursor` (after < cursor <= through), if any: such a cursor is expired. */
  jumpOver(cursor: bigint): Promise<LedgerJump | undefined>
  /**
   * Makes the next seq given out at least the last row's seq + `by` + 1, and at least the next one
   * as it was, in one transaction with the writers (a running service's next write takes its seq
   * after the jump). Resolves with the jump: after = the last row's seq.
   */
  bumpSeq(by: bigint): Promise<LedgerJump>
}

/** Wake-ups when the ledger may have grown, whoever committed: this process, another, the CLI. */
export interface LedgerSignals {
  /**
   * Calls `onChange` soon (well within a second) after any writer commits ledger rows; a call may
   * come without a new row, never a new row without a call. Returns the function that stops it.
   */
  watchLedger(onChange: () => void): () => void
}

/** The state a delivery attempt leaves: a failure, with the next attempt or the reason it stops. */
export interface WebhookFailure {
  at: string
  error: string
  failedAttempts: number
  /** When to try again; undefined disables the subscription (with `error` as its reason). */
  nextAttemptAt?: string | undefined
}

/** Webhook subscriptions, their durable cursors and which process delivers each. */
export interface WebhookStore {
  /**
   * Creates a subscription that starts at the ledger's current end (it receives the rows committed
   * after it), unless `max` subscriptions exist already: then undefined.
   */
  createWebhook(
    webhook: Pick<WebhookTarget, 'url' | 'description' | 'secret' | 'messageTag' | 'createdAt'>,
    max: number,
  ): Promise<Webhook | undefined>
  /** Every subscription, by id. */
  listWebhooks(): Promise<Webhook[]>
  getWebhook(id: number): Promise<Webhook | undefined>
  /** Deletes one; false when there was none. */
  deleteWebhook(id: number): Promise<boolean>
  /**
   * Clears a subscription's disabled state and failures; undefined when there is none. Its cursor
   * stays, unless it is before `expiredBefore` (rows after it were removed by retention): then it
   * moves to `end`, the ledger's current end.
   */
  enableWebhook(id: number, expiredBefore: bigint, end: bigint): Promise<Webhook | undefined>
  /**
   * Takes the lease of every enabled subscription that is free, expired or `owner`'s own, for
   * `leaseMs` from now, and returns those `owner` now holds.
   */
  leaseWebhooks(owner: string, leaseMs: number): Promise<WebhookTarget[]>
  /** Gives up `owner`'s leases (a graceful stop), so another process takes them at once. */
  releaseWebhooks(owner: string): Promise<void>
  /** Moves the cursor to `seq` after a 2xx; false when `owner` no longer holds the lease (or the subscription is gone). */
  recordDelivery(id: number, owner: string, seq: bigint, at: string): Promise<boolean>
  /** Records a failed attempt (disabling the subscription when it has no next attempt); false as recordDelivery. */
  recordFailure(id: number, owner: string, failure: WebhookFailure): Promise<boolean>
}

/** Orders as they are stored (placing and moving them are stock writes). */
export interface OrderReads {
  getOrder(orderId: bigint): Promise<Order | undefined>
  /** Up to `limit` orders with ids above `after`, by id. */
  listOrders(query: OrderQuery): Promise<Order[]>
}

/** A page of holds: by id after `after`, optionally of one status. */
export interface ReservationQuery {
  after: bigint
  limit: number
  status?: ReservationStatus | undefined
}

/** Holds as they are stored (placing, ending and extending them are stock writes). */
export interface ReservationReads {
  getReservation(reservationId: bigint): Promise<Reservation | undefined>
  /** Up to `limit` holds with ids above `after`, by id, lines included. */
  listReservations(query: ReservationQuery): Promise<Reservation[]>
  /** Up to `limit` active holds whose expiry is at or before `now` (RFC 3339), soonest first: the sweep's work. */
  dueReservations(now: string, limit: number): Promise<bigint[]>
}

/** What a location's update asks: a new name, active or not (each optional). */
export interface LocationUpdate {
  name?: string | undefined
  active?: boolean | undefined
}

/** A location as an update left it, or why it left it alone. */
export type LocationUpdateResult =
  | Location
  | 'not_found'
  | 'name_taken'
  /** The default location is never deactivated. */
  | 'default_location'
  /** Deactivating it while it holds stock: how much, and of how many pets. */
  | { refused: 'not_empty'; units: number; pets: number }

/**
 * Locations (domain.ts Location) and the stock at each. Creating and updating one are writes of their
 * own, serialised with the stock writes (PostgreSQL: under the inventory_version lock), so a location
 * is never deactivated while a write puts stock there.
 */
export interface LocationStore {
  /** Every location, by id. */
  listLocations(): Promise<Location[]>
  getLocation(id: number): Promise<Location | undefined>
  /** Creates an active location, unless one has this name (case aside) or `max` exist already. */
  createLocation(name: string, at: string, max: number): Promise<Location | 'name_taken' | 'limit_reached'>
  updateLocation(id: number, update: LocationUpdate, at: string): Promise<LocationUpdateResult>
  /**
   * Up to `limit` pets' stock at one location, by petId as listInventory pages entries, in one
   * statement: at the default location every entry (its quantity less its stock elsewhere), at
   * another the pets stocked there.
   */
  listLocationStock(locationId: number, query: InventoryQuery): Promise<StockLevel[]>
  /** One pet's stock at the default location and at each other active location it was stocked at, by location id; undefined when it has no entry. */
  petStock(petId: bigint): Promise<StockLevel[] | undefined>
  /**
   * Up to `limit` entries of the query as a key held to `locations` sees them: each quantity the sum
   * of the pet's stock there (0 where it has none), by petId as listInventory pages them, in one
   * statement; with `petId`, that one entry (or none).
   */
  listReachableInventory(locations: readonly number[], query: InventoryQuery & { petId?: bigint | undefined }): Promise<InventoryItem[]>
}

/** Whole files written at once, all or nothing. */
export interface Imports {
  /**
   * Inserts or replaces every record, all or nothing, reading the chunks as they come: they are
   * staged first (where a repeated petId is found: DuplicatePetIdError), and the inventory is written
   * in one short transaction at the end, with a ledger row per record in file order, so other
   * writers wait only for that. An error thrown by the chunks leaves the inventory as it was.
   * Resolves with the number of records.
   */
  importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number>
  /**
   * Inserts or replaces every pet, all or nothing, staging the chunks as they come (where a repeated
   * id is found: DuplicatePetIdError), then writing in one transaction both the pets and, for each pet
   * with a status, its inventory entry's status (created with quantity 0 when there is none): the
   * inventory keeps the one status of a pet. An error thrown by the chunks changes nothing. Resolves
   * with the number of pets.
   */
  importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number>
}

export interface PetReads {
  /** One pet, its status read from its inventory entry in the same statement; undefined when there is no such pet. */
  getPet(id: bigint): Promise<Pet | undefined>
}

/** Calls of the deprecated pet lookup, counted per key. */
export interface DeprecatedCallStore {
  /**
   * Adds counts of deprecated calls to the stored ones, in one transaction: calls summed, the
   * earliest first call and the latest last call kept, so every instance's flushes add up.
   */
  addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void>
  /** The stored counts, one per API key with its name, by key id. */
  listDeprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]>
}

/** API keys, by the SHA-256 of their tokens (a token itself is never stored). */
export interface KeyStore {
  /** The non-revoked key with this SHA-256 hash, if any. */
  findActiveKey(hash: Buffer): Promise<{ id: number; hash: Buffer; scopes: Scope[]; locations?: number[] | undefined } | undefined>
  touchKey(id: number, at: string): Promise<void>
  /** Creates a key (held to `locations` when given), atomically; undefined when an active key already has this name. */
  createKey(name: string, scopes: readonly Scope[], hash: Buffer, at: string, locations?: readonly number[]): Promise<ApiKey | undefined>
  /**
   * Creates a key only if the database has never had one, atomically: of processes racing on a fresh
   * database exactly one gets the key, the others undefined.
   */
  createFirstKey(name: string, scopes: readonly Scope[], hash: Buffer, at: string): Promise<ApiKey | undefined>
  /** Every key, revoked ones too, by id. */
  listKeys(): Promise<ApiKey[]>
  /** The non-revoked key with this id, if any. */
  getActiveKey(id: number): Promise<ApiKey | undefined>
  /** Revokes the active key with this name or id; returns it, or undefined when there is none. */
  revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined>
}

/** Whether the database answers, whether it takes writes, and how its connections are used. */
export interface Health {
  /** Resolves when the database answers; throws UnavailableError when it does not. */
  ping(): Promise<void>
  /** The database's lasting fault (a full disk, read-only, ...), from when a statement meets it until a probe write succeeds. */
  readonly faults: Pick<DatabaseFaults, 'current' | 'subscribe'>
  /** PostgreSQL: the pool's connections now (read by the metrics). */
  connections?(): ConnectionUse
}

/** A whole backend: every port, opened (and migrated) on one database. */
export interface Storage
  extends InventoryReads,
    StockWrites,
    LedgerReads,
    LedgerRetention,
    LedgerJumps,
    LedgerSignals,
    WebhookStore,
    OrderReads,
    ReservationReads,
    LocationStore,
    Imports,
    PetReads,
    DeprecatedCallStore,
    KeyStore,
    InvariantChecks,
    Health {
  readonly dialect: 'sqlite' | 'postgres'
  /** Migrations this open applied (opening a storage always brings its schema up to date). */
  readonly migrationsApplied: string[]
  close(): Promise<void>
}
