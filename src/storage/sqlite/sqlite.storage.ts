import Database from 'better-sqlite3'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import { DuplicatePetIdError, UnavailableError } from '../../errors.js'
import type {
  ChangeReason,
  DeprecatedCalls,
  ImportRecord,
  InventoryChange,
  InventoryItem,
  Order,
  OrderStatus,
  Pet,
  PetImportRecord,
  PetStatus,
} from '../../domain.js'
import type { ApiKey, ChangeQuery, OrderQuery, Storage, StorageObserver, Versions } from '../storage.js'
import { GroupCommit } from '../group-commit.js'
import { batchReads, planBatch, type BatchState } from '../../stock/planner.js'
import { IDEMPOTENCY_TTL_MS, claimKey, placementOf, storedPlacement, type StoredClaim } from '../../stock/claims.js'
import type { Placement, StockResult, StockWrite, ResultOf } from '../../stock/writes.js'
import { migrateSqlite } from './migrate.js'
import { LIST_ENTRY_JSON } from '../list-entry-json.js'
import { petColumns, rowToPet, type PetRow } from '../pet-row.js'

/** Entries read per step of a listing: about 100 KB of JSON, a millisecond or two of work. */
const LIST_PAGE_SIZE = 2000

type InventoryRow = [petId: bigint, quantity: bigint, status: string]
type OrderRow = [id: bigint, petId: bigint, quantity: bigint, status: string, placedAt: string, updatedAt: string]
type ChangeRow = [
  seq: bigint,
  petId: bigint,
  previous: bigint | null,
  quantity: bigint,
  reason: string,
  orderId: bigint | null,
  keyId: bigint | null,
  requestId: string | null,
  at: string,
]
type ClaimRow = [
  fingerprint: string,
  outcome: string,
  orderId: bigint | null,
  available: bigint | null,
  petId: bigint | null,
  quantity: bigint | null,
  placedAt: string | null,
]

const ORDER_COLUMNS = 'id, pet_id, quantity, status, placed_at, updated_at'
const CHANGE_COLUMNS = 'seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at'
interface KeyRow {
  id: number
  name: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

const toItem = ([petId, quantity, status]: InventoryRow): InventoryItem => ({
  petId,
  quantity: Number(quantity),
  status: status as PetStatus,
})

const toOrder = ([id, petId, quantity, status, placedAt, updatedAt]: OrderRow): Order => ({
  id,
  petId,
  quantity: Number(quantity),
  status: status as OrderStatus,
  placedAt,
  updatedAt,
})

const toChange = ([seq, petId, previous, quantity, reason, orderId, keyId, requestId, at]: ChangeRow): InventoryChange => ({
  seq,
  petId,
  previousQuantity: previous === null ? null : Number(previous),
  quantity: Number(quantity),
  reason: reason as ChangeReason,
  orderId,
  keyId: keyId === null ? null : Number(keyId),
  requestId,
  at,
})

const toPlacement = ([, outcome, orderId, available, petId, quantity, placedAt]: ClaimRow): Placement =>
  placementOf({
    outcome: outcome as Placement['outcome'],
    orderId,
    available: available === null ? null : Number(available),
    order: petId === null ? undefined : { petId, quantity: Number(quantity), placedAt: placedAt! },
  })

const toKey = (row: KeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
})

const isBusy = (error: unknown) => error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY')
const busyError = () => new UnavailableError('The database is busy; retry shortly')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

export interface SqliteOptions {
  /** How long a request waits for another process's lock before failing (503). */
  busyTimeoutMs?: number
  /** How long opening and migrating wait for another process's lock (at start, before serving). */
  migrationTimeoutMs?: number
  /** Told each group commit's size and duration (the metrics). */
  observer?: StorageObserver | undefined
}

export function openSqliteDatabase(path: string, options: SqliteOptions = {}): Database.Database {
  if (path !== ':memory:') {
    // The file holds key hashes, orders and the ledger: owner only. SQLite gives its -wal and -shm
    // the database file's mode, so creating the file first, 0600, covers all three; a file or folder
    // that already exists keeps the mode its operator gave it.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    try {
      closeSync(openSync(path, 'wx', 0o600))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  const db = new Database(path)
  db.pragma(`busy_timeout = ${options.migrationTimeoutMs ?? 600_000}`)
  db.pragma('journal_mode = WAL')
  // better-sqlite3 builds with WAL's default at NORMAL, which can lose the last commits on power loss.
  db.pragma('synchronous = FULL')
  db.pragma('foreign_keys = ON')
  return db
}

export class SqliteStorage implements Storage {
  readonly dialect = 'sqlite'
  readonly migrationsApplied: string[]
  private readonly db: Database.Database
  /** This connection's own commits, which data_version does not count (it counts other connections'). */
  private ownInventoryWrites = 0
  private ownKeyWrites = 0
  private readonly groupCommit: GroupCommit<StockWrite, StockResult>

  private readonly stmt

  private readonly busyTimeoutMs: number
  /** The connection listings read from (see forEachInventoryPage); none for an in-memory database. */
  private readonly reader: Database.Database | undefined
  private listings: Promise<void> = Promise.resolve()

  constructor(path: string, options: SqliteOptions = {}) {
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000
    this.db = openSqliteDatabase(path, options)
    this.migrationsApplied = migrateSqlite(this.db)
    // From here on a locked database answers at once, and statements wait in retryBusy without
    // blocking the event loop: SQLite's own busy wait is a synchronous sleep that would stall
    // every request of the process, reads included.
    this.db.pragma('busy_timeout = 0')
    // Imports stage their records in a TEMP table: on disk, so a large file does not grow the heap.
    this.db.pragma('temp_store = FILE')
    if (path !== ':memory:') {
      this.reader = new Database(path, { readonly: true })
      this.reader.pragma('busy_timeout = 0')
    }
    const db = this.db
    this.stmt = {
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      get: db.prepare('SELECT pet_id, quantity, status FROM inventory WHERE pet_id = ?').raw().safeIntegers(),
      // .all(), never .get(): a RETURNING statement left unfinished holds a read mark that stops WAL checkpoints.
      setQuantity: db.prepare('UPDATE inventory SET quantity = ? WHERE pet_id = ?'),
      getOrder: db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ?`).raw().safeIntegers(),
      insertOrder: db.prepare(`INSERT INTO orders (${ORDER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`),
      updateOrder: db.prepare('UPDATE orders SET status = ?, updated_at = ? WHERE id = ?'),
      lastChange: db.prepare('SELECT coalesce(max(seq), 0) FROM inventory_changes').pluck().safeIntegers(),
      lastOrder: db.prepare('SELECT coalesce(max(id), 0) FROM orders').pluck().safeIntegers(),
      insertChange: db.prepare(`INSERT INTO inventory_changes (${CHANGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      getClaim: db
        .prepare(`SELECT c.fingerprint, c.outcome, c.order_id, c.available, o.pet_id, o.quantity, o.placed_at
          FROM idempotency_keys c LEFT JOIN orders o ON o.id = c.order_id
          WHERE c.key_id = ? AND c.idempotency_key = ? AND c.created_at > ?`)
        .raw()
        .safeIntegers(),
      // An expired claim may still be there: the new one replaces it.
      putClaim: db.prepare(`INSERT OR REPLACE INTO idempotency_keys
        (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      purgeClaims: db.prepare(`DELETE FROM idempotency_keys WHERE rowid IN
        (SELECT rowid FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT 100)`),
      findKey: db.prepare('SELECT id, key_hash AS hash FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL'),
      touchKey: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
      // Conflicts on the active name index only: the loser of a race learns the name is taken.
      createKey: db.prepare(`INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)
        ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`),
      createFirstKey: db.prepare(`INSERT INTO api_keys (name, key_hash, created_at)
        SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM api_keys)
        ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`),
      listKeys: db.prepare('SELECT * FROM api_keys ORDER BY id'),
      revokeByName: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL RETURNING *'),
      revokeById: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING *'),
      getPet: db
        .prepare(`SELECT p.id, p.name, p.category_id, p.category_name, p.photo_urls, p.tags, i.status
          FROM pets AS p LEFT JOIN inventory AS i ON i.pet_id = p.id WHERE p.id = ?`)
        .safeIntegers(),
      // Text times in one format (toISOString), so min() and max() order them.
      addDeprecatedCalls: db.prepare(`INSERT INTO deprecated_calls (key_id, calls, first_call, last_call) VALUES (?, ?, ?, ?)
        ON CONFLICT (key_id) DO UPDATE SET calls = calls + excluded.calls,
          first_call = min(first_call, excluded.first_call), last_call = max(last_call, excluded.last_call)`),
      listDeprecatedCalls: db.prepare(`SELECT d.key_id AS keyId, k.name, d.calls, d.first_call AS firstCall, d.last_call AS lastCall
        FROM deprecated_calls AS d JOIN api_keys AS k ON k.id = d.key_id ORDER BY d.key_id`),
    }
    const { observer } = options
    this.groupCommit = new GroupCommit((batch, deadline) => this.write(() => this.applyStockWrites(batch), deadline), {
      maxWaitMs: this.busyTimeoutMs,
      expired: busyError,
      onBatch: observer && ((writes, seconds) => observer.batchCommitted('sqlite', writes, seconds)),
    })
  }

  versions(): Promise<Versions> {
    return this.retryBusy(() => {
      const others = String(this.stmt.dataVersion.get())
      return { inventory: `${others}.${this.ownInventoryWrites}`, keys: `${others}.${this.ownKeyWrites}` }
    })
  }

  /**
   * Pages of LIST_PAGE_SIZE entries, read by keyset on a connection of their own, in one read
   * transaction: WAL gives it a snapshot that later commits do not disturb, while the main connection
   * keeps writing. One listing at a time uses it (a second waits its turn); an in-memory database has
   * no second connection, so there the pages come from the main one.
   */
  forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>): Promise<void> {
    const listing = this.listings.then(async () => {
      const reader = this.reader ?? this.db
      // SQLite writes each page's JSON (LIST_ENTRY_JSON): one string per page reaches JavaScript,
      // not a row object, a bigint and a string per entry.
      const pageSql = (where: string) =>
        reader
          .prepare(`SELECT group_concat(${LIST_ENTRY_JSON}, ',' ORDER BY pet_id), count(*), max(pet_id)
            FROM (SELECT pet_id, quantity, status FROM inventory ${where} ORDER BY pet_id LIMIT ?)`)
          .raw()
          .safeIntegers()
      const first = pageSql('')
      const next = pageSql('WHERE pet_id > ?')
      const inTransaction = this.reader !== undefined
      if (inTransaction) reader.exec('BEGIN')
      try {
        for (let after: bigint | undefined; ; ) {
          const [json, count, last] = (await this.retryBusy(() =>
            after === undefined ? first.get(LIST_PAGE_SIZE) : next.get(after, LIST_PAGE_SIZE),
          )) as [string | null, bigint, bigint | null]
          if (count > 0n) await onPiece(Buffer.from(after === undefined ? json! : `,${json}`), Number(count))
          if (count < BigInt(LIST_PAGE_SIZE)) return
          after = last!
          await nextTurn()
        }
      } finally {
        if (inTransaction) reader.exec('COMMIT')
      }
    })
    this.listings = listing.catch(() => {})
    return listing
  }

  getInventoryItem(petId: bigint): Promise<InventoryItem | undefined> {
    return this.retryBusy(() => {
      const row = this.stmt.get.get(petId) as InventoryRow | undefined
      return row && toItem(row)
    })
  }

  writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>> {
    // planBatch answers every write with the result of its own kind.
    return this.groupCommit.submit(write) as Promise<ResultOf<W>>
  }

  /**
   * A batch of stock writes inside its IMMEDIATE transaction: reads what planBatch needs (SQLite has
   * one writer at a time, so nothing changes meanwhile), then writes its plan.
   */
  private applyStockWrites(batch: StockWrite[]): StockResult[] {
    const st = this.stmt
    const now = Date.now()
    const at = new Date(now).toISOString()
    const reads = batchReads(batch)
    // The last order id is read only when the batch places one.
    const lastOrder = batch.some((w) => w.kind === 'place') ? (st.lastOrder.get() as bigint) : 0n
    const state: BatchState = {
      entries: new Map(),
      orders: new Map(),
      claims: new Map(),
      lastChange: st.lastChange.get() as bigint,
      lastOrder,
    }
    for (const id of reads.orderIds) {
      const row = st.getOrder.get(id) as OrderRow | undefined
      if (!row) continue
      const order = toOrder(row)
      state.orders.set(id, order)
      reads.petIds.add(order.petId)
    }
    for (const petId of reads.petIds) {
      const row = st.get.get(petId) as InventoryRow | undefined
      if (row) state.entries.set(petId, toItem(row))
    }
    if (reads.claims.length > 0) {
      const since = new Date(now - IDEMPOTENCY_TTL_MS).toISOString()
      for (const { keyId, key } of reads.claims) {
        const row = st.getClaim.get(keyId, key, since) as ClaimRow | undefined
        if (row) state.claims.set(claimKey(keyId, key), { keyId, key, fingerprint: row[0], placement: toPlacement(row) })
      }
      st.purgeClaims.run(since)
    }
    const plan = planBatch(batch, state, at)
    for (const o of plan.newOrders) st.insertOrder.run(o.id, o.petId, o.quantity, o.status, o.placedAt, o.updatedAt)
    for (const o of plan.changedOrders) st.updateOrder.run(o.status, o.updatedAt, o.id)
    for (const [petId, quantity] of plan.quantities) st.setQuantity.run(quantity, petId)
    for (const c of plan.changes) {
      st.insertChange.run(c.seq, c.petId, c.previousQuantity, c.quantity, c.reason, c.orderId, c.keyId, c.requestId, c.at)
    }
    for (const claim of plan.claims) this.putClaim(claim, at)
    return plan.results
  }

  private putClaim({ keyId, key, fingerprint, placement }: StoredClaim, at: string) {
    const { outcome, orderId, available } = storedPlacement(placement)
    this.stmt.putClaim.run(keyId, key, fingerprint, outcome, orderId, available, at)
  }

  getOrder(orderId: bigint): Promise<Order | undefined> {
    return this.retryBusy(() => {
      const row = this.stmt.getOrder.get(orderId) as OrderRow | undefined
      return row && toOrder(row)
    })
  }

  listOrders({ after, limit, status }: OrderQuery): Promise<Order[]> {
    const sql = `SELECT ${ORDER_COLUMNS} FROM orders WHERE id > ? ${status ? 'AND status = ?' : ''} ORDER BY id LIMIT ?`
    const args = status ? [after, status, limit] : [after, limit]
    return this.retryBusy(() => (this.prepared(sql).all(...args) as OrderRow[]).map(toOrder))
  }

  listChanges({ after, through, limit, petId, newestFirst = false }: ChangeQuery): Promise<InventoryChange[]> {
    const where = ['seq > ?', ...(through === undefined ? [] : ['seq <= ?']), ...(petId === undefined ? [] : ['pet_id = ?'])]
    const sql = `SELECT ${CHANGE_COLUMNS} FROM inventory_changes WHERE ${where.join(' AND ')} ORDER BY seq ${newestFirst ? 'DESC' : ''} LIMIT ?`
    const args = [after, through, petId, limit].filter((a) => a !== undefined)
    return this.retryBusy(() => (this.prepared(sql).all(...args) as ChangeRow[]).map(toChange))
  }

  lastChangeSeq(): Promise<bigint> {
    return this.retryBusy(() => this.stmt.lastChange.get() as bigint)
  }

  private readonly statements = new Map<string, Database.Statement>()
  /** A statement built from a query's shape (a handful of shapes), prepared once. */
  private prepared(sql: string): Database.Statement {
    let statement = this.statements.get(sql)
    if (!statement) {
      statement = this.db.prepare(sql).raw().safeIntegers()
      this.statements.set(sql, statement)
    }
    return statement
  }

  /** Stages the records (see stage), then copies them into the inventory in one IMMEDIATE transaction. */
  async importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number> {
    const db = this.db
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS import_staging (
      pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, status TEXT NOT NULL, position INTEGER NOT NULL)`)
    try {
      const count = await this.stage(chunks, 'import_staging', 'pet_id', ({ item }) => [item.petId, item.quantity, item.status])
      const at = new Date().toISOString()
      await this.write(() => {
        // The ledger first, while the entries still hold their previous quantities; seqs in file order.
        db.prepare(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at)
          SELECT s.pet_id, i.quantity, s.quantity, 'import', ? FROM temp.import_staging AS s
          LEFT JOIN inventory AS i ON i.pet_id = s.pet_id ORDER BY s.position`).run(at)
        db.exec(`INSERT INTO inventory (pet_id, quantity, status)
          SELECT pet_id, quantity, status FROM temp.import_staging WHERE true
          ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status`)
      })
      return count
    } finally {
      db.exec('DELETE FROM temp.import_staging')
    }
  }

  async getPet(id: bigint): Promise<Pet | undefined> {
    const row = await this.retryBusy(() => this.stmt.getPet.get(id) as PetRow | undefined)
    return row && rowToPet(row)
  }

  /** Stages the pets (see stage), then writes them and their statuses in one IMMEDIATE transaction. */
  async importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number> {
    const db = this.db
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS pets_staging (
      id INTEGER PRIMARY KEY, name TEXT NOT NULL, category_id INTEGER, category_name TEXT,
      photo_urls TEXT NOT NULL, tags TEXT NOT NULL, status TEXT, position INTEGER NOT NULL)`)
    try {
      const count = await this.stage(chunks, 'pets_staging', 'id', ({ pet }) => [...petColumns(pet), pet.status ?? null])
      await this.write(() => {
        db.exec(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
          SELECT id, name, category_id, category_name, photo_urls, tags FROM temp.pets_staging WHERE true
          ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
            category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`)
        this.setStatusesOfStagedPets()
      })
      return count
    } finally {
      db.exec('DELETE FROM temp.pets_staging')
    }
  }

  /**
   * The pets import's one write to the inventory, inside its transaction: each staged pet with a
   * status sets its entry's status, creating the entry with quantity 0 when there is none. A created
   * entry is a change of quantity (from none to 0): it gets its ledger row, reason import.
   */
  private setStatusesOfStagedPets() {
    this.db
      .prepare(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at)
        SELECT s.id, NULL, 0, 'import', ? FROM temp.pets_staging AS s
        WHERE s.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.id)
        ORDER BY s.position`)
      .run(new Date().toISOString())
    this.db.exec(`INSERT INTO inventory (pet_id, quantity, status)
      SELECT id, 0, status FROM temp.pets_staging WHERE status IS NOT NULL
      ON CONFLICT (pet_id) DO UPDATE SET status = excluded.status`)
  }

  /**
   * Stages an import's records in a TEMP table keyed by their id, one transaction per chunk, as they
   * come. The TEMP table is a file of its own: staging takes no lock on the database, so the service
   * keeps writing meanwhile. `columns` gives a record's values, id first; its position comes last. A
   * repeated id throws DuplicatePetIdError with both positions. Resolves with the number of records.
   */
  private async stage<R extends { position: number }>(
    chunks: AsyncIterable<R[]>,
    table: string,
    idColumn: string,
    columns: (record: R) => [bigint, ...unknown[]],
  ): Promise<number> {
    const db = this.db
    const firstAt = db.prepare(`SELECT position FROM temp.${table} WHERE ${idColumn} = ?`).pluck()
    let insert: Database.Statement | undefined
    let count = 0
    for await (const chunk of chunks) {
      db.transaction(() => {
        for (const record of chunk) {
          const values = [...columns(record), record.position]
          insert ??= db.prepare(`INSERT INTO temp.${table} VALUES (${values.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING`)
          if (insert.run(...values).changes === 0) {
            const id = values[0] as bigint
            throw new DuplicatePetIdError(id, firstAt.get(id) as number, record.position)
          }
        }
      })()
      count += chunk.length
    }
    return count
  }

  /** One IMMEDIATE transaction that writes the inventory, counted so this process's cache sees it. */
  private write<T>(body: () => T, deadline?: number): Promise<T> {
    return this.retryBusy(() => {
      const result = this.db.transaction(body).immediate()
      this.ownInventoryWrites++
      return result
    }, deadline)
  }

  /**
   * Runs a statement or transaction, retrying while another process holds a lock it needs (a writer's
   * lock for writes; for reads, a connection in exclusive locking mode or running WAL recovery), until
   * `deadline` (busyTimeoutMs from now by default); past that, 503: nothing was applied, so a retry is
   * safe. The wait is asynchronous, so the rest of the process keeps serving meanwhile.
   */
  private async retryBusy<T>(attempt: () => T, deadline = Date.now() + this.busyTimeoutMs): Promise<T> {
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      try {
        return attempt()
      } catch (error) {
        if (!isBusy(error)) throw error
        if (Date.now() + wait > deadline) throw busyError()
        await sleep(wait)
      }
    }
  }

  findActiveKey(hash: Buffer) {
    return this.retryBusy(() => this.stmt.findKey.get(hash) as { id: number; hash: Buffer } | undefined)
  }

  /** One attempt: a busy database makes it fail fast, and the caller tries again later. */
  async touchKey(id: number, at: string): Promise<void> {
    this.stmt.touchKey.run(at, id)
  }

  createKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined> {
    return this.insertKey(this.stmt.createKey, name, hash, at)
  }

  createFirstKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined> {
    return this.insertKey(this.stmt.createFirstKey, name, hash, at)
  }

  private async insertKey(statement: Database.Statement, name: string, hash: Buffer, at: string) {
    const row = await this.retryBusy(() => statement.all(name, hash, at)[0] as KeyRow | undefined)
    if (!row) return undefined
    this.ownKeyWrites++
    return toKey(row)
  }

  async listKeys(): Promise<ApiKey[]> {
    return (await this.retryBusy(() => this.stmt.listKeys.all() as KeyRow[])).map(toKey)
  }

  async revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined> {
    const rows = (await this.retryBusy(() =>
      typeof nameOrId === 'number' ? this.stmt.revokeById.all(at, nameOrId) : this.stmt.revokeByName.all(at, nameOrId),
    )) as KeyRow[]
    this.ownKeyWrites++
    return rows[0] && toKey(rows[0])
  }

  /** One IMMEDIATE transaction; not an inventory write, so not counted as one. */
  async addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void> {
    await this.retryBusy(() =>
      this.db
        .transaction(() => {
          for (const c of calls) this.stmt.addDeprecatedCalls.run(c.keyId, c.calls, c.firstCall, c.lastCall)
        })
        .immediate(),
    )
  }

  async listDeprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]> {
    return this.retryBusy(() => this.stmt.listDeprecatedCalls.all() as (DeprecatedCalls & { name: string })[])
  }

  async ping(): Promise<void> {
    await this.versions()
  }

  async close(): Promise<void> {
    await this.groupCommit.drain()
    await this.listings
    this.reader?.close()
    this.db.close()
  }
}
