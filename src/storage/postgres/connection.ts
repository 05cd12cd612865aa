import pg from 'pg'
import { type DatabaseFault, UnavailableError } from '../../errors.js'
import { DatabaseFaults, faultError } from '../faults.js'
import type { ConnectionUse, StorageObserver } from '../ports.js'
import { migratePostgres } from './migrate.js'

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

// SQLSTATE classes that mean "the database is not reachable or not accepting work right now".
const UNAVAILABLE_CLASSES = ['08', '53', '57']

/** The SQLSTATEs that name a fault of the database (src/storage/faults.ts words each). */
const FAULTS_BY_SQLSTATE: Readonly<Record<string, DatabaseFault>> = {
  '25006': 'read_only', // read_only_sql_transaction: a standby, or default_transaction_read_only
  '53100': 'disk_full',
  '53300': 'connection_limit', // too_many_connections: the server's, a role's or a database's limit
  '57P01': 'terminated', // admin_shutdown: pg_terminate_backend, or a fast shutdown
  '57P02': 'terminated', // crash_shutdown
  '57P03': 'terminated', // cannot_connect_now: the server starting or stopping
  '57014': 'cancelled', // query_canceled: the statement timeout, or pg_cancel_backend
}

export const unavailable = () => new UnavailableError('The database is unavailable; retry shortly', 'database')

/** The fault an error names, if any. */
export function faultOf(error: unknown): DatabaseFault | undefined {
  return error instanceof pg.DatabaseError && error.code !== undefined ? FAULTS_BY_SQLSTATE[error.code] : undefined
}

/**
 * Errors raised by the server about the statement itself keep their meaning; a fault it names
 * becomes that fault's 503; anything else from the driver (refused, reset, timed out) means the
 * database is unavailable: a 503.
 */
export function classify(error: unknown): unknown {
  const fault = faultOf(error)
  if (fault !== undefined) return faultError(fault)
  if (error instanceof pg.DatabaseError && !UNAVAILABLE_CLASSES.includes(error.code?.slice(0, 2) ?? '')) return error
  return unavailable()
}

/** Runs one statement on a lent connection, within the time the caller has left. */
export type Run = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>

/**
 * Every transaction that writes the inventory takes the inventory_version row's lock first. The
 * version trigger needs that lock before commit anyway, so writers already commit one at a time;
 * taking it first gives every writer the same lock order (version row, then pet rows), so a batch of
 * PATCHes and a multi-statement import, here or in other instances, can never deadlock.
 */
export async function lockInventory(run: Run): Promise<{ lastChange: bigint; lastOrder: bigint }> {
  const [row] = await run<{ last_change: string; last_order: string }>(
    'SELECT last_change::text AS last_change, last_order::text AS last_order FROM inventory_version FOR UPDATE',
  )
  // The ledger's seqs and the order ids are given out from these counters, under this same lock.
  return { lastChange: BigInt(row!.last_change), lastOrder: BigInt(row!.last_order) }
}

/** The pool, its bounds and its observer: what every concept of the PostgreSQL backend runs on. */
/**
 * A connection lent by the pool, listened to until it is released. pg emits a broken connection's
 * error on the client as well as failing its statement, and the pool listens only while a client is
 * idle: without this, a connection that dies while lent (reset, server restart, network cut) would
 * throw an uncaught error and end the process. The statement in flight fails with the error anyway;
 * a later one is refused by pg, and the caller releases the client as broken, so it is discarded.
 */
function lent(client: pg.PoolClient): pg.PoolClient {
  const ignore = () => {}
  client.on('error', ignore)
  const release = client.release.bind(client)
  client.release = (error?: Error | boolean) => {
    client.off('error', ignore)
    release(error)
  }
  return client
}

/** A pooled connection, marked with the pool's era when it was opened (see PostgresConnection.era). */
type EraClient = pg.PoolClient & { era?: number }

export class PostgresConnection {
  /** The database's lasting fault, if one holds, seen by every statement and connection of the pool. */
  readonly faults = new DatabaseFaults(() => this.probe())
  /**
   * Moves on when a lasting fault ends: a connection opened before (during a read-only spell, say,
   * whose sessions stay read-only for their life) is closed at its next checkout instead of used.
   */
  private era = 0

  private constructor(
    private readonly pool: pg.Pool,
    readonly migrationsApplied: string[],
    readonly timeoutMs: number,
    /** Bound on an operator's bulk job (an import, a whole listing): DB_MIGRATION_TIMEOUT_MS. */
    readonly bulkTimeoutMs: number,
    readonly poolSize: number,
    readonly observer: StorageObserver | undefined,
    /** The connection URL, for a connection of its own outside the pool (signals.ts). */
    readonly url: string,
  ) {}

  static async open(url: string, options: PostgresOptions): Promise<PostgresConnection> {
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
    const connection = new PostgresConnection(
      pool,
      migrationsApplied,
      options.timeoutMs,
      options.migrationTimeoutMs,
      options.poolSize,
      options.observer,
      url,
    )
    pool.on('connect', (client: EraClient) => {
      client.era = connection.era
    })
    connection.faults.subscribe((change) => {
      if (change.fault === undefined) connection.era++
    })
    return connection
  }

  /** One statement on a pooled connection, bounded as a whole (connecting included) by timeoutMs. */
  async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
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
  async withConnection<T>(deadline: number, body: (run: Run) => Promise<T>, statementBoundMs = this.timeoutMs): Promise<T> {
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
        const classified = this.classify(error)
        // A driver failure, the server ending the session (57P01 when an administrator terminates it
        // or the server shuts down, and the other unavailable classes), or a session that answered
        // read-only (a standby, or an old primary after a failover: the next connection may reach the
        // new one behind the same address): the connection is not reused. The server's other
        // refusals (a constraint, a lock timeout) leave it sound.
        if (!(error instanceof pg.DatabaseError) || classified instanceof UnavailableError) broken = error as Error
        throw classified
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
  async connect(deadline: number): Promise<pg.PoolClient> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable()), Math.max(0, Math.min(deadline - Date.now(), this.timeoutMs)))
    })
    try {
      for (;;) {
        const pending = this.pool.connect()
        let client: EraClient
        try {
          client = (await Promise.race([pending, timeout])) as EraClient
        } catch (error) {
          pending.then(
            (late) => late.release(),
            () => {},
          )
          throw this.classify(error)
        }
        // Opened before the last fault ended: closed, and another taken (opened since).
        if (client.era === undefined || client.era === this.era) return lent(client)
        client.release(true)
      }
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * BEGIN … COMMIT on one connection, finished or abandoned by `deadline` (see withConnection for
   * what happens to a transaction that fails: the server rolls back what it never saw committed).
   */
  transaction<T>(deadline: number, body: (run: Run) => Promise<T>, statementBoundMs?: number): Promise<T> {
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

  /** classify(), and a fault it names becomes the state the probe watches. */
  classify(error: unknown): unknown {
    const fault = faultOf(error)
    if (fault !== undefined) this.faults.seen(fault)
    return classify(error)
  }

  /** Whether writes succeed again: one real write of the probe's row. Resolves with the lasting fault still found, or undefined. */
  private async probe(): Promise<DatabaseFault | undefined> {
    try {
      await this.transaction(Date.now() + this.timeoutMs, (run) => run('UPDATE database_probe SET probed_at = now() WHERE id = 1'))
      return undefined
    } catch (error) {
      return error instanceof UnavailableError && error.fault?.lasting ? error.fault.cause : this.faults.current
    }
  }

  connections(): ConnectionUse {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount }
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1')
  }

  /** Ends the pool; the caller has drained its writes first. */
  async close(): Promise<void> {
    this.faults.stop()
    await this.pool.end()
  }
}
