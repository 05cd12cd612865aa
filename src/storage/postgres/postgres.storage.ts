import pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
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
import { GroupCommit } from '../group-commit.js'
import type { ApiKey, ChangeQuery, ConnectionUse, OrderQuery, Storage, StorageObserver, Versions } from '../storage.js'
import { batchReads, planBatch, type BatchState } from '../../stock/planner.js'
import { IDEMPOTENCY_TTL_MS, claimKey, placementOf, storedPlacement } from '../../stock/claims.js'
import type { Placement, StockResult, StockWrite, ResultOf } from '../../stock/writes.js'
import { migratePostgres } from './migrate.js'
import { LIST_ENTRY_JSON } from '../list-entry-json.js'
import { petColumns, rowToPet, type PetRow } from '../pet-row.js'

export interface PostgresOptions {
  /** Connections in this process's pool. */
  poolSize: number
  /**
   * Bound on each database step of a request: getting a connection and running one statement, or a
   * whole write transaction from the moment it was asked for. Past it the request gets 503.
   */
  timeoutMs: number
  /** Bound on applying migrations at start, the wait for another instance's migration lock included. */
  migrationTimeoutMs: number
  /** Told each group commit's size and duration, and each statement's duration (the metrics). */
  observer?: StorageObserver | undefined
}

interface KeyRow {
  id: number
  name: string
  created_at: Date
  last_used_at: Date | null
  revoked_at: Date | null
}

interface OrderRow {
  id: string
  pet_id: string
  quantity: number
  status: OrderStatus
  placed_at: Date
  updated_at: Date
}
interface ChangeRow {
  seq: string
  pet_id: string
  previous_quantity: number | null
  quantity: number
  reason: ChangeReason
  order_id: string | null
  key_id: number | null
  request_id: string | null
  at: Date
}
const ORDER_COLUMNS = 'id::text AS id, pet_id::text AS pet_id, quantity, status, placed_at, updated_at'
const CHANGE_COLUMNS =
  'seq::text AS seq, pet_id::text AS pet_id, previous_quantity, quantity, reason, order_id::text AS order_id, key_id, request_id, at'

const toOrder = (r: OrderRow): Order => ({
  id: BigInt(r.id),
  petId: BigInt(r.pet_id),
  quantity: r.quantity,
  status: r.status,
  placedAt: r.placed_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
})

const toChange = (r: ChangeRow): InventoryChange => ({
  seq: BigInt(r.seq),
  petId: BigInt(r.pet_id),
  previousQuantity: r.previous_quantity,
  quantity: r.quantity,
  reason: r.reason,
  orderId: r.order_id === null ? null : BigInt(r.order_id),
  keyId: r.key_id,
  requestId: r.request_id,
  at: r.at.toISOString(),
})

const toKey = (row: KeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at.toISOString(),
  lastUsedAt: row.last_used_at?.toISOString() ?? null,
  revokedAt: row.revoked_at?.toISOString() ?? null,
})

// SQLSTATE classes that mean "the database is not reachable or not accepting work right now".
const UNAVAILABLE_CLASSES = ['08', '53', '57']

/**
 * Errors raised by the server about the statement itself keep their meaning; anything else from the
 * driver (refused, reset, timed out, terminated) means the database is unavailable: a 503.
 */
function classify(error: unknown): unknown {
  if (error instanceof pg.DatabaseError && !UNAVAILABLE_CLASSES.includes(error.code?.slice(0, 2) ?? '')) return error
  return unavailable()
}

/**
 * Every transaction that writes the inventory takes the inventory_version row's lock first. The
 * version trigger needs that lock before commit anyway, so writers already commit one at a time;
 * taking it first gives every writer the same lock order (version row, then pet rows), so a batch of
 * PATCHes and a multi-statement import, here or in other instances, can never deadlock.
 */
async function lockInventory(run: Run): Promise<{ lastChange: bigint; lastOrder: bigint }> {
  const [row] = await run<{ last_change: string; last_order: string }>(
    'SELECT last_change::text AS last_change, last_order::text AS last_order FROM inventory_version FOR UPDATE',
  )
  // The ledger's seqs and the order ids are given out from these counters, under this same lock.
  return { lastChange: BigInt(row!.last_change), lastOrder: BigInt(row!.last_order) }
}

/** Runs one statement on a lent connection, within the time the caller has left. */
type Run = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>

/** Rows copied from an import's staging table into the inventory per statement. */
const IMPORT_PIECE = 10_000

/** Replaces, in place, the newline ending each COPY row with the comma between entries; returns how many. */
function newlinesToCommas(chunk: Buffer): number {
  let count = 0
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
    chunk[i] = 44
    count++
  }
  return count
}

const unavailable = () => new UnavailableError('The database is unavailable; retry shortly')

export class PostgresStorage implements Storage {
  readonly dialect = 'postgres'
  private readonly groupCommit: GroupCommit<StockWrite, StockResult>

  private constructor(
    private readonly pool: pg.Pool,
    readonly migrationsApplied: string[],
    private readonly timeoutMs: number,
    private readonly bulkTimeoutMs: number,
    poolSize: number,
    private readonly observer: StorageObserver | undefined,
  ) {
    // Half the pool commits batches; the rest stays free for reads and authentication.
    this.groupCommit = new GroupCommit((batch, deadline) => this.commitStockWrites(batch, deadline), {
      maxInFlight: Math.max(1, poolSize >> 1),
      maxWaitMs: timeoutMs,
      expired: unavailable,
      onBatch: observer && ((writes, seconds) => observer.batchCommitted('postgres', writes, seconds)),
    })
  }

  static async open(url: string, options: PostgresOptions): Promise<PostgresStorage> {
    // Migrations run first, on a connection of their own with their own bound: an instance that
    // starts while another applies a long migration waits for it instead of failing.
    const migrationsApplied = await migratePostgres(url, {
      connectTimeoutMs: options.timeoutMs,
      timeoutMs: options.migrationTimeoutMs,
    })
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize,
      connectionTimeoutMillis: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      keepAlive: true,
      idleTimeoutMillis: 30_000,
      application_name: 'petstore',
      // A 200 means durable, whatever the server's default: commits wait for the WAL flush.
      // Every statement here is short: JIT compilation (picked on cost estimates) would only add milliseconds.
      options: '-c synchronous_commit=on -c jit=off',
    })
    // An idle connection dropped by the server emits here; without a listener it would crash the process.
    pool.on('error', () => {})
    return new PostgresStorage(pool, migrationsApplied, options.timeoutMs, options.migrationTimeoutMs, options.poolSize, options.observer)
  }

  /** One statement on a pooled connection, bounded as a whole (connecting included) by timeoutMs. */
  private async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    return this.withConnection(Date.now() + this.timeoutMs, (run) => run<R>(text, values))
  }

  /**
   * Lends a connection until `deadline`. Every statement gets the time that is left; one that runs out
   * leaves the connection busy with it, so that connection is destroyed, never reused or rolled back
   * in line behind the hung statement (which would double the wait). A transaction left open (the
   * server refused a statement, or the caller's own code threw) is rolled back after the caller has
   * its answer, before the connection goes back to the pool. Errors the server raised about a
   * statement keep their meaning; any other driver failure becomes 503.
   */
  private async withConnection<T>(deadline: number, body: (run: Run) => Promise<T>, statementBoundMs = this.timeoutMs): Promise<T> {
    const client = await this.connect(deadline)
    let broken: Error | undefined
    let inTransaction = false
    const run: Run = async (text, values) => {
      const left = deadline - Date.now()
      if (left <= 0) throw unavailable()
      const started = this.observer ? performance.now() : 0
      try {
        const bound = Math.min(left, statementBoundMs)
        const { rows } = await client.query({ text, values, query_timeout: bound } as pg.QueryConfig)
        if (text.startsWith('BEGIN')) inTransaction = true
        if (text === 'COMMIT') inTransaction = false
        return rows
      } catch (error) {
        if (!(error instanceof pg.DatabaseError)) broken = error as Error
        throw classify(error)
      } finally {
        this.observer?.statementRan((performance.now() - started) / 1000)
      }
    }
    try {
      // Errors from `run` are classified already; anything else (an import file's own error) passes on.
      return await body(run)
    } finally {
      if (inTransaction && !broken) {
        client.query({ text: 'ROLLBACK', query_timeout: this.timeoutMs } as pg.QueryConfig).then(
          () => client.release(),
          (error: Error) => client.release(error),
        )
      } else {
        client.release(broken)
      }
    }
  }

  /** A pooled connection, or 503 at the deadline (a connection that arrives later goes back to the pool). */
  private async connect(deadline: number): Promise<pg.PoolClient> {
    const pending = this.pool.connect()
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable()), Math.max(0, Math.min(deadline - Date.now(), this.timeoutMs)))
    })
    try {
      return await Promise.race([pending, timeout])
    } catch (error) {
      pending.then(
        (client) => client.release(),
        () => {},
      )
      throw classify(error)
    } finally {
      clearTimeout(timer)
    }
  }

  async versions(): Promise<Versions> {
    const rows = await this.query<Versions>(
      'SELECT (SELECT version FROM inventory_version)::text AS inventory, (SELECT version FROM keys_version)::text AS keys',
    )
    return rows[0]!
  }

  /**
   * One COPY of one SELECT, so one snapshot: PostgreSQL writes each entry's JSON (LIST_ENTRY_JSON)
   * and streams it as raw bytes, which reach the caller as they arrive, never decoded into strings.
   * COPY's text format ends every row with a newline (the JSON holds no character COPY would escape:
   * numbers and a status from a closed set); newlines become the commas between entries, the last
   * one is dropped. The stream pauses while `onPiece` works. The whole listing is bounded by
   * DB_MIGRATION_TIMEOUT_MS, as an import is (it grows with the data), and a stall, by DB_TIMEOUT_MS
   * without a byte, as any statement is.
   */
  async forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>): Promise<void> {
    const client = await this.connect(Date.now() + this.timeoutMs)
    let failed: unknown
    let pieceFailed = false
    const pass = async (piece: Buffer, entries: number) => {
      try {
        await onPiece(piece, entries)
      } catch (error) {
        pieceFailed = true
        throw error
      }
    }
    try {
      await client.query({ text: `SET statement_timeout = ${this.bulkTimeoutMs}`, query_timeout: this.timeoutMs } as pg.QueryConfig)
      const rows = client.query(copyTo(`COPY (SELECT ${LIST_ENTRY_JSON} FROM inventory ORDER BY pet_id) TO STDOUT`))
      // A connection that fails mid-COPY reports it on the client (no pool listener while it is lent).
      const onError = (error: Error) => rows.destroy(error)
      client.on('error', onError)
      let stall: NodeJS.Timeout | undefined
      const watch = () => {
        clearTimeout(stall)
        stall = setTimeout(() => rows.destroy(unavailable()), this.timeoutMs)
      }
      try {
        watch()
        // Every piece is passed on once the next one has arrived, so that the last newline can be
        // dropped. Newlines are replaced in place: the chunk is this stream's own bytes.
        let held: Buffer | undefined
        for await (const chunk of rows as AsyncIterable<Buffer>) {
          clearTimeout(stall)
          if (held) await pass(held, newlinesToCommas(held))
          held = chunk
          watch()
        }
        if (held) {
          const entries = newlinesToCommas(held)
          await pass(held.subarray(0, -1), entries)
        }
      } finally {
        clearTimeout(stall)
        client.off('error', onError)
        if (!rows.readableEnded) rows.destroy()
      }
      await client.query({ text: 'RESET statement_timeout', query_timeout: this.timeoutMs } as pg.QueryConfig)
    } catch (error) {
      failed = error
      if (pieceFailed) throw error
      throw error instanceof UnavailableError ? error : classify(error)
    } finally {
      // A connection left mid-COPY, or hung, is destroyed, never reused.
      client.release(failed === undefined ? undefined : failed instanceof Error ? failed : new Error('listing failed'))
    }
  }

  async getInventoryItem(petId: bigint): Promise<InventoryItem | undefined> {
    const rows = await this.query<{ quantity: number; status: PetStatus }>('SELECT quantity, status FROM inventory WHERE pet_id = $1', [
      String(petId),
    ])
    return rows[0] && { petId, quantity: rows[0].quantity, status: rows[0].status }
  }

  writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>> {
    // planBatch answers every write with the result of its own kind.
    return this.groupCommit.submit(write) as Promise<ResultOf<W>>
  }

  /**
   * One transaction, one commit, for a whole batch, applied in submission order. A batch of plain
   * PATCHes is one call of set_inventory_quantities (migration 004): one round trip. Anything else
   * (If-Match preconditions, orders) locks the inventory_version row first, like every inventory
   * writer (see lockInventory), reads what planBatch needs, which no other writer can change until
   * the commit, and writes the plan in one statement.
   */
  private async commitStockWrites(batch: StockWrite[], deadline: number): Promise<StockResult[]> {
    const at = new Date()
    const plain = batch.every((w) => w.kind === 'set' && !w.precondition)
    if (plain) {
      const sets = batch as Extract<StockWrite, { kind: 'set' }>[]
      const rows = await this.withConnection(deadline, (run) =>
        run<{ write_ord: string; write_status: PetStatus }>(
          'SELECT write_ord::text, write_status FROM set_inventory_quantities($1::bigint[], $2::integer[], $3::integer[], $4::text[], $5)',
          [
            sets.map((w) => String(w.petId)),
            sets.map((w) => w.quantity),
            sets.map((w) => w.actor.keyId),
            sets.map((w) => w.actor.requestId),
            at,
          ],
        ),
      )
      const status = new Map(rows.map((r) => [Number(r.write_ord) - 1, r.write_status]))
      return sets.map(({ petId, quantity }, i) => {
        const s = status.get(i)
        return s ? { petId, quantity, status: s } : 'not_found'
      })
    }
    return this.transaction(deadline, async (run) => {
      const reads = batchReads(batch)
      const state: BatchState = { entries: new Map(), orders: new Map(), claims: new Map(), ...(await lockInventory(run)) }
      if (reads.orderIds.size > 0) {
        const rows = await run<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ANY($1::bigint[])`, [
          [...reads.orderIds].map(String),
        ])
        for (const order of rows.map(toOrder)) {
          state.orders.set(order.id, order)
          reads.petIds.add(order.petId)
        }
      }
      const entries = await run<{ pet_id: string; quantity: number; status: PetStatus }>(
        'SELECT pet_id::text AS pet_id, quantity, status FROM inventory WHERE pet_id = ANY($1::bigint[])',
        [[...reads.petIds].map(String)],
      )
      for (const r of entries) state.entries.set(BigInt(r.pet_id), { petId: BigInt(r.pet_id), quantity: r.quantity, status: r.status })
      if (reads.claims.length > 0) await this.readClaims(run, reads.claims, at, state)
      const plan = planBatch(batch, state, at.toISOString())
      await this.writePlan(run, plan, at)
      return plan.results
    })
  }

  /** The batch's unexpired Idempotency-Key claims, with the orders they placed; expired ones are purged a few at a time. */
  private async readClaims(run: Run, claims: { keyId: number; key: string }[], at: Date, state: BatchState) {
    const since = new Date(at.getTime() - IDEMPOTENCY_TTL_MS)
    const rows = await run<{
      key_id: number
      idempotency_key: string
      fingerprint: string
      outcome: Placement['outcome']
      order_id: string | null
      available: number | null
      pet_id: string | null
      quantity: number | null
      placed_at: Date | null
    }>(
      `SELECT c.key_id, c.idempotency_key, c.fingerprint, c.outcome, c.order_id::text AS order_id, c.available,
         o.pet_id::text AS pet_id, o.quantity, o.placed_at
       FROM unnest($1::integer[], $2::text[]) AS k(key_id, idempotency_key)
       JOIN idempotency_keys AS c USING (key_id, idempotency_key)
       LEFT JOIN orders AS o ON o.id = c.order_id
       WHERE c.created_at > $3`,
      [claims.map((c) => c.keyId), claims.map((c) => c.key), since],
    )
    for (const r of rows) {
      const placement = placementOf({
        outcome: r.outcome,
        orderId: r.order_id === null ? null : BigInt(r.order_id),
        available: r.available,
        order: r.pet_id === null ? undefined : { petId: BigInt(r.pet_id), quantity: r.quantity!, placedAt: r.placed_at!.toISOString() },
      })
      state.claims.set(claimKey(r.key_id, r.idempotency_key), {
        keyId: r.key_id,
        key: r.idempotency_key,
        fingerprint: r.fingerprint,
        placement,
      })
    }
    await run(
      `DELETE FROM idempotency_keys WHERE (key_id, idempotency_key) IN
         (SELECT key_id, idempotency_key FROM idempotency_keys WHERE created_at <= $1 ORDER BY created_at LIMIT 100)`,
      [since],
    )
  }

  /** A batch's plan, written by one statement (the transaction holds the inventory_version lock). */
  private async writePlan(run: Run, plan: ReturnType<typeof planBatch>, at: Date) {
    const { quantities, newOrders, changedOrders, changes, claims } = plan
    const stored = claims.map((c) => storedPlacement(c.placement))
    await run(
      `WITH quantities AS (
         UPDATE inventory AS i SET quantity = v.quantity FROM unnest($1::bigint[], $2::integer[]) AS v(pet_id, quantity)
         WHERE i.pet_id = v.pet_id AND cardinality($1::bigint[]) > 0
       ), placed AS (
         INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
         SELECT id, pet_id, quantity, status, $19, $19 FROM unnest($3::bigint[], $4::bigint[], $5::integer[], $6::text[]) AS v(id, pet_id, quantity, status)
       ), moved AS (
         UPDATE orders AS o SET status = v.status, updated_at = $19 FROM unnest($7::bigint[], $8::text[]) AS v(id, status) WHERE o.id = v.id
       ), logged AS (
         INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at)
         SELECT v.*, $19 FROM unnest($9::bigint[], $10::bigint[], $11::integer[], $12::integer[], $13::text[], $14::bigint[], $15::integer[], $16::text[]) AS v
       ), claimed AS (
         INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at)
         SELECT v.*, $19 FROM unnest($20::integer[], $21::text[], $22::text[], $23::text[], $24::bigint[], $25::integer[]) AS v
         ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
           order_id = excluded.order_id, available = excluded.available, created_at = excluded.created_at
       )
       UPDATE inventory_version SET last_change = $17, last_order = $18`,
      [
        [...quantities.keys()].map(String),
        [...quantities.values()],
        newOrders.map((o) => String(o.id)),
        newOrders.map((o) => String(o.petId)),
        newOrders.map((o) => o.quantity),
        newOrders.map((o) => o.status),
        changedOrders.map((o) => String(o.id)),
        changedOrders.map((o) => o.status),
        changes.map((c) => String(c.seq)),
        changes.map((c) => String(c.petId)),
        changes.map((c) => c.previousQuantity),
        changes.map((c) => c.quantity),
        changes.map((c) => c.reason),
        changes.map((c) => (c.orderId === null ? null : String(c.orderId))),
        changes.map((c) => c.keyId),
        changes.map((c) => c.requestId),
        String(plan.lastChange),
        String(plan.lastOrder),
        at,
        claims.map((c) => c.keyId),
        claims.map((c) => c.key),
        claims.map((c) => c.fingerprint),
        stored.map((p) => p.outcome),
        stored.map((p) => (p.orderId === null ? null : String(p.orderId))),
        stored.map((p) => p.available),
      ],
    )
  }

  async getOrder(orderId: bigint): Promise<Order | undefined> {
    const rows = await this.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [String(orderId)])
    return rows[0] && toOrder(rows[0])
  }

  async listOrders({ after, limit, status }: OrderQuery): Promise<Order[]> {
    const rows = await this.query<OrderRow>(
      // Ordered by the column, not by the text alias the select list gives it.
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE id > $1 AND ($2::text IS NULL OR status = $2) ORDER BY orders.id LIMIT $3`,
      [String(after), status ?? null, limit],
    )
    return rows.map(toOrder)
  }

  async listChanges({ after, through, limit, petId, newestFirst = false }: ChangeQuery): Promise<InventoryChange[]> {
    const rows = await this.query<ChangeRow>(
      `SELECT ${CHANGE_COLUMNS} FROM inventory_changes
       WHERE seq > $1 AND ($2::bigint IS NULL OR seq <= $2) AND ($3::bigint IS NULL OR pet_id = $3)
       ORDER BY inventory_changes.seq ${newestFirst ? 'DESC' : ''} LIMIT $4`,
      [String(after), through === undefined ? null : String(through), petId === undefined ? null : String(petId), limit],
    )
    return rows.map(toChange)
  }

  async lastChangeSeq(): Promise<bigint> {
    const [row] = await this.query<{ last: string }>('SELECT last_change::text AS last FROM inventory_version')
    return BigInt(row!.last)
  }

  /**
   * Stages the records in a temporary table of the import's own transaction (no lock on the inventory
   * meanwhile), then takes the inventory lock and copies them in, in pieces.
   */
  async importInventory(chunks: AsyncIterable<ImportRecord[]>): Promise<number> {
    let count = 0
    await this.importTransaction(async (run) => {
      await run(`CREATE TEMP TABLE import_staging (
        pet_id bigint PRIMARY KEY, quantity integer NOT NULL, status text NOT NULL, position integer NOT NULL) ON COMMIT DROP`)
      for await (const chunk of chunks) {
        const staged = await run<{ id: string }>(
          `INSERT INTO import_staging SELECT * FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::integer[])
           ON CONFLICT (pet_id) DO NOTHING RETURNING pet_id::text AS id`,
          [
            chunk.map((r) => String(r.item.petId)),
            chunk.map((r) => r.item.quantity),
            chunk.map((r) => r.item.status),
            chunk.map((r) => r.position),
          ],
        )
        if (staged.length < chunk.length) {
          const ids = chunk.map(({ item, position }) => ({ id: String(item.petId), position }))
          await this.throwFirstDuplicate(run, 'import_staging', 'pet_id', ids, staged)
        }
        count += chunk.length
      }
      // The ledger first, while the entries still hold their previous quantities: a seq per record
      // in file order, from the counter the inventory_version lock guards.
      const { lastChange } = await lockInventory(run)
      await run(
        `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
         SELECT $1::bigint + row_number() OVER (ORDER BY s.position), s.pet_id, i.quantity, s.quantity, 'import', $2
         FROM import_staging AS s LEFT JOIN inventory AS i USING (pet_id)`,
        [String(lastChange), new Date()],
      )
      await run('UPDATE inventory_version SET last_change = last_change + $1', [count])
      for (let after: string | undefined; ; ) {
        const copied = await run<{ last: string | null }>(
          `WITH piece AS (
             SELECT pet_id, quantity, status FROM import_staging
             WHERE $1::bigint IS NULL OR pet_id > $1::bigint ORDER BY pet_id LIMIT ${IMPORT_PIECE})
           , written AS (
             INSERT INTO inventory (pet_id, quantity, status) SELECT * FROM piece
             ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status
             RETURNING pet_id)
           SELECT max(pet_id)::text AS last FROM written`,
          [after ?? null],
        )
        const last = copied[0]?.last
        if (!last) break
        after = last
      }
    })
    return count
  }

  /**
   * A chunk staged fewer rows than it has: the first record, in file order, whose id was already
   * there. `ids` are the chunk's ids as text, in file order, with their positions.
   */
  private async throwFirstDuplicate(
    run: Run,
    table: string,
    idColumn: string,
    ids: { id: string; position: number }[],
    staged: { id: string }[],
  ): Promise<never> {
    const fresh = new Set(staged.map((r) => r.id))
    const earlier = new Map<string, number>()
    for (const { id, position } of ids) {
      const inChunk = earlier.get(id)
      if (inChunk === undefined && fresh.has(id)) {
        earlier.set(id, position)
        continue
      }
      const first = inChunk ?? (await run<{ position: number }>(`SELECT position FROM ${table} WHERE ${idColumn} = $1`, [id]))[0]!.position
      throw new DuplicatePetIdError(BigInt(id), first, position)
    }
    throw new Error('a chunk staged fewer rows than it has, but no duplicate was found')
  }

  async getPet(id: bigint): Promise<Pet | undefined> {
    const rows = await this.query<PetRow>(
      `SELECT p.id::text AS id, p.name, p.category_id::text AS category_id, p.category_name,
         p.photo_urls::text AS photo_urls, p.tags::text AS tags, i.status
       FROM pets AS p LEFT JOIN inventory AS i ON i.pet_id = p.id WHERE p.id = $1`,
      [String(id)],
    )
    return rows[0] && rowToPet(rows[0])
  }

  /**
   * Stages the pets in a temporary table of the import's own transaction (no lock meanwhile), then
   * takes the inventory lock (the transaction writes statuses to the inventory, and the pets rows are
   * written under it too, so two imports never lock pets in opposite orders) and writes the pets and
   * their statuses.
   */
  async importPets(chunks: AsyncIterable<PetImportRecord[]>): Promise<number> {
    let count = 0
    await this.importTransaction(async (run) => {
      await run(`CREATE TEMP TABLE pets_staging (
        id bigint PRIMARY KEY, name text NOT NULL, category_id bigint, category_name text,
        photo_urls jsonb NOT NULL, tags jsonb NOT NULL, status text, position integer NOT NULL) ON COMMIT DROP`)
      for await (const chunk of chunks) {
        // unnest takes one array per column: the chunk's rows transposed, int64 values as text (exact).
        const rows = chunk.map(({ pet, position }) => [...petColumns(pet), pet.status ?? null, position])
        const columns = rows[0]!.map((_, i) => rows.map((row) => (typeof row[i] === 'bigint' ? String(row[i]) : row[i])))
        const staged = await run<{ id: string }>(
          `INSERT INTO pets_staging SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[],
             $5::jsonb[], $6::jsonb[], $7::text[], $8::integer[])
           ON CONFLICT (id) DO NOTHING RETURNING id::text AS id`,
          columns,
        )
        if (staged.length < chunk.length) {
          const ids = chunk.map(({ pet, position }) => ({ id: String(pet.id), position }))
          await this.throwFirstDuplicate(run, 'pets_staging', 'id', ids, staged)
        }
        count += chunk.length
      }
      await lockInventory(run)
      await run(`INSERT INTO pets (id, name, category_id, category_name, photo_urls, tags)
        SELECT id, name, category_id, category_name, photo_urls, tags FROM pets_staging
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, category_id = excluded.category_id,
          category_name = excluded.category_name, photo_urls = excluded.photo_urls, tags = excluded.tags`)
      await this.setStatusesOfStagedPets(run)
    })
    return count
  }

  /**
   * The pets import's one write to the inventory, inside its transaction and under the inventory lock
   * it took first: each staged pet with a status sets its entry's status, creating the entry with
   * quantity 0 when there is none. A created entry is a change of quantity (from none to 0): it gets
   * its ledger row, reason import, with a seq from the counter that lock guards.
   */
  private async setStatusesOfStagedPets(run: Run) {
    const { lastChange } = await lockInventory(run)
    await run(
      `WITH logged AS (
         INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, at)
         SELECT $1::bigint + row_number() OVER (ORDER BY s.position), s.id, NULL, 0, 'import', $2 FROM pets_staging AS s
         WHERE s.status IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inventory AS i WHERE i.pet_id = s.id)
         RETURNING 1)
       UPDATE inventory_version SET last_change = last_change + (SELECT count(*) FROM logged)`,
      [String(lastChange), new Date()],
    )
    await run(`INSERT INTO inventory (pet_id, quantity, status)
      SELECT id, 0, status FROM pets_staging WHERE status IS NOT NULL
      ON CONFLICT (pet_id) DO UPDATE SET status = excluded.status`)
  }

  /**
   * One statement. Rows are upserted in key order, so two instances flushing at once lock the same
   * rows in the same order and never deadlock.
   */
  async addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void> {
    await this.query(
      `INSERT INTO deprecated_calls (key_id, calls, first_call, last_call)
       SELECT * FROM unnest($1::integer[], $2::bigint[], $3::timestamptz[], $4::timestamptz[]) ORDER BY 1
       ON CONFLICT (key_id) DO UPDATE SET calls = deprecated_calls.calls + excluded.calls,
         first_call = least(deprecated_calls.first_call, excluded.first_call),
         last_call = greatest(deprecated_calls.last_call, excluded.last_call)`,
      [calls.map((c) => c.keyId), calls.map((c) => c.calls), calls.map((c) => c.firstCall), calls.map((c) => c.lastCall)],
    )
  }

  async listDeprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]> {
    const rows = await this.query<{ key_id: number; name: string; calls: string; first_call: Date; last_call: Date }>(
      `SELECT d.key_id, k.name, d.calls, d.first_call, d.last_call
       FROM deprecated_calls AS d JOIN api_keys AS k ON k.id = d.key_id ORDER BY d.key_id`,
    )
    return rows.map((r) => ({
      keyId: r.key_id,
      name: r.name,
      calls: Number(r.calls),
      firstCall: r.first_call.toISOString(),
      lastCall: r.last_call.toISOString(),
    }))
  }

  /**
   * An import's one transaction. An import is an operator's bulk job, not a request: it has no
   * deadline, and each of its statements is bounded by DB_MIGRATION_TIMEOUT_MS.
   */
  private importTransaction(body: (run: Run) => Promise<void>): Promise<void> {
    return this.transaction(
      Number.POSITIVE_INFINITY,
      async (run) => {
        await run(`SET LOCAL statement_timeout = ${this.bulkTimeoutMs}`)
        await body(run)
      },
      this.bulkTimeoutMs,
    )
  }

  /**
   * BEGIN … COMMIT on one connection, finished or abandoned by `deadline` (see withConnection for
   * what happens to a transaction that fails: the server rolls back what it never saw committed).
   */
  private transaction<T>(deadline: number, body: (run: Run) => Promise<T>, statementBoundMs?: number): Promise<T> {
    return this.withConnection(
      deadline,
      async (run) => {
        await run('BEGIN')
        const result = await body(run)
        await run('COMMIT')
        return result
      },
      statementBoundMs,
    )
  }

  async findActiveKey(hash: Buffer) {
    const rows = await this.query<{ id: number; hash: Buffer }>(
      'SELECT id, key_hash AS hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [hash],
    )
    return rows[0]
  }

  async touchKey(id: number, at: string): Promise<void> {
    await this.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id])
  }

  /** Conflicts on the active name index only: the loser of a race waits for the winner's commit, then learns the name is taken. */
  async createKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined> {
    const rows = await this.query<KeyRow>(
      `INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
      [name, hash, at],
    )
    return rows[0] && toKey(rows[0])
  }

  /**
   * Two processes on a fresh database both see no key; both then insert the same name, so the second
   * waits on the first's index entry and, once it commits, inserts nothing.
   */
  async createFirstKey(name: string, hash: Buffer, at: string): Promise<ApiKey | undefined> {
    const rows = await this.query<KeyRow>(
      `INSERT INTO api_keys (name, key_hash, created_at)
       SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM api_keys)
       ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
      [name, hash, at],
    )
    return rows[0] && toKey(rows[0])
  }

  async listKeys(): Promise<ApiKey[]> {
    return (await this.query<KeyRow>('SELECT * FROM api_keys ORDER BY id')).map(toKey)
  }

  async revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined> {
    const rows =
      typeof nameOrId === 'number'
        ? await this.query<KeyRow>('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING *', [at, nameOrId])
        : await this.query<KeyRow>('UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL RETURNING *', [at, nameOrId])
    return rows[0] && toKey(rows[0])
  }

  connections(): ConnectionUse {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount }
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1')
  }

  async close(): Promise<void> {
    await this.groupCommit.drain()
    await this.pool.end()
  }
}
