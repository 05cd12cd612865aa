import type { DeprecatedCalls, InventoryChange, InventoryItem, Order, OrderStatus, Pet } from '../domain.js'
import type { StockResult, StockWrite } from './stock-batch.js'

export type { PlaceResult, Precondition, SetResult, StockWrite, TransitionResult } from './stock-batch.js'

/** Ledger rows with a seq in (after, through], optionally of one pet, oldest or newest first. */
export interface ChangeQuery {
  after: bigint
  /** The last seq to read; without it, to the end. */
  through?: bigint | undefined
  limit: number
  petId?: bigint | undefined
  newestFirst?: boolean
}

/** A page of orders: by id after `after`, optionally of one status. */
export interface OrderQuery {
  after: bigint
  limit: number
  status?: OrderStatus | undefined
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

/** An import file names the same pet twice. */
export class DuplicatePetIdError extends Error {
  constructor(
    readonly petId: bigint,
    readonly firstPosition: number,
    readonly position: number,
  ) {
    super(`petId ${petId} appears twice`)
  }
}

export interface Versions {
  inventory: string
  keys: string
}

export interface ApiKey {
  id: number
  name: string
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
}

/**
 * Everything the services need from a database. Implementations own all SQL; they map rows to
 * these domain shapes, keep int64 values exact, and acknowledge a write only once it is durable.
 */
export interface Storage {
  readonly dialect: 'sqlite' | 'postgres'
  /** Migrations this open applied (opening a storage always brings its schema up to date). */
  readonly migrationsApplied: string[]

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
   * inventory never stalls the process nor fills its memory.
   */
  forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>): Promise<void>
  /** One entry, or undefined when the pet has none. */
  getInventoryItem(petId: bigint): Promise<InventoryItem | undefined>
  /**
   * Applies one write that changes stock (a quantity set, if its precondition holds for the entry as
   * it is at that point; an order placed, unless the stock would go below zero; an order's status
   * changed), with its ledger row, and resolves after the commit. Concurrent writes share commits,
   * applied in the order they were asked for, by the rules of planBatch (stock-batch.ts); the result
   * is the one for the write's kind (SetResult, PlaceResult, TransitionResult).
   */
  writeStock(write: StockWrite): Promise<StockResult>
  getOrder(orderId: bigint): Promise<Order | undefined>
  /** Up to `limit` orders with ids above `after`, by id. */
  listOrders(query: OrderQuery): Promise<Order[]>
  /** Up to `limit` ledger rows of the query's seq range, read by the primary key (there is no index by pet). */
  listChanges(query: ChangeQuery): Promise<InventoryChange[]>
  /** The ledger's last seq (0 when empty). */
  lastChangeSeq(): Promise<bigint>
  /**
   * Inserts or replaces every record, all or nothing, reading the chunks as they come: they are
   * staged first (where a repeated petId is found: DuplicatePetIdError), and the inventory is written
   * in one short transaction at the end, with a ledger row per record in file order, so other
   * writers wait only for that. An error thrown by the chunks leaves the inventory as it was.
   * Resolves with the number of records.
   */
  importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number>

  /** One pet, its status read from its inventory entry in the same statement; undefined when there is no such pet. */
  getPet(id: bigint): Promise<Pet | undefined>
  /**
   * Inserts or replaces every pet, all or nothing, staging the chunks as they come (where a repeated
   * id is found: DuplicatePetIdError), then writing in one transaction both the pets and, for each pet
   * with a status, its inventory entry's status (created with quantity 0 when there is none): the
   * inventory keeps the one status of a pet. An error thrown by the chunks changes nothing. Resolves
   * with the number of pets.
   */
  importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number>

  /**
   * Adds counts of deprecated calls to the stored ones, in one transaction: calls summed, the
   * earliest first call and the latest last call kept, so every instance's flushes add up.
   */
  addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void>
  /** The stored counts, one per API key with its name, by key id. */
  listDeprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]>

  /** The id of the non-revoked key with this SHA-256 hash, if any. */
  findActiveKey(hash: Buffer): Promise<{ id: number; hash: Buffer } | undefined>
  touchKey(id: number, at: string): Promise<void>
  /** Creates a key, atomically; undefined when an active key already has this name. */
  createKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined>
  /**
   * Creates a key only if the database has never had one, atomically: of processes racing on a fresh
   * database exactly one gets the key, the others undefined.
   */
  createFirstKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined>
  listKeys(): Promise<ApiKey[]>
  /** Revokes the active key with this name or id; returns it, or undefined when there is none. */
  revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined>

  /** PostgreSQL: the pool's connections now (read by the metrics). */
  connections?(): ConnectionUse

  /** Resolves when the database answers; throws UnavailableError when it does not. */
  ping(): Promise<void>
  close(): Promise<void>
}
