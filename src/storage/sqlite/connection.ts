import Database from 'better-sqlite3'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { statfs } from 'node:fs/promises'
import { dirname } from 'node:path'
import { type DatabaseFault, UnavailableError } from '../../errors.js'
import { DatabaseFaults, faultError } from '../faults.js'
import { migrateSqlite } from './migrate.js'

export interface SqliteOptions {
  /** How long a request waits for another process's lock before failing (503). */
  busyTimeoutMs?: number
  /** How long opening and migrating wait for another process's lock (at start, before serving). */
  migrationTimeoutMs?: number
}

const isBusy = (error: unknown) => error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY')

/** SQLite's result codes that are a fault of the database's file or disk, not of the statement. */
function faultOf(error: unknown): DatabaseFault | undefined {
  if (!(error instanceof Database.SqliteError)) return undefined
  const { code } = error
  if (code === 'SQLITE_FULL') return 'disk_full'
  if (code.startsWith('SQLITE_READONLY')) return 'read_only'
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CANTOPEN')) return 'io_error'
  return undefined
}

/**
 * Free space below which a full disk is not seen gone, though the probe's one-row write may fit:
 * SQLite reuses the WAL's file from its start after a checkpoint, so a small write can succeed on a
 * full disk while a batch that must grow the file cannot.
 */
const DISK_FREE_BYTES = 8 * 1024 * 1024
export const busyError = () => new UnavailableError('The database is busy; retry shortly', 'database')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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

/**
 * Ends a long read (a backup's copy, a check) on `reader` and at once checkpoints, from `writer` (a
 * read-write connection to the same file, opened beforehand), what the WAL gathered while the read
 * held its snapshot. Otherwise the service's next commit would: SQLite checkpoints on the commit
 * that finds the WAL past 1,000 pages, in the committing process, so that PATCH waited for the whole
 * catch-up (10 to 19 MiB after a backup or a check under 200 PATCHes/s: 52 and 56 ms). A PASSIVE
 * checkpoint waits for no one, and while it runs, the service's own attempt finds the checkpoint
 * lock taken and returns at once.
 */
export function endLongRead(reader: Database.Database, writer: Database.Database): void {
  reader.exec('COMMIT')
  try {
    writer.pragma('wal_checkpoint(PASSIVE)')
  } catch {
    // Busy or failed, the checkpoint is the service's to make, as it would have been.
  }
}

/**
 * One SQLite database as every concept's SQL uses it: the connection that writes (opened and
 * migrated), the read-only one listings read from, statements prepared once, and the waits for
 * another process's lock, which never block the event loop.
 */
export class SqliteConnection {
  readonly db: Database.Database
  /** The connection listings read from (see inventory.ts); none for an in-memory database. */
  readonly reader: Database.Database | undefined
  readonly migrationsApplied: string[]
  readonly busyTimeoutMs: number
  /** This connection's own commits, which data_version does not count (it counts other connections'). */
  ownInventoryWrites = 0
  ownKeyWrites = 0
  /** Called after each of this connection's inventory commits (signals.ts: the ledger may have grown). */
  readonly afterInventoryWrite = new Set<() => void>()
  // Keyed by the SQL text itself: the hot paths pass constants, whose hashes V8 keeps.
  private readonly queries = new Map<string, Database.Statement>()
  private readonly writes = new Map<string, Database.Statement>()
  /** Made once: better-sqlite3 builds four wrapped functions for every db.transaction() call. */
  private readonly transaction: Database.Transaction<(body: () => unknown) => unknown>
  /** The database's lasting fault, if one holds, seen by every statement that runs through retryBusy. */
  readonly faults: DatabaseFaults

  constructor(
    private readonly path: string,
    options: SqliteOptions = {},
  ) {
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000
    this.faults = new DatabaseFaults(() => this.probe())
    this.db = openSqliteDatabase(path, options)
    this.migrationsApplied = migrateSqlite(this.db)
    this.transaction = this.db.transaction((body: () => unknown) => body())
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
  }

  /** A statement that reads rows as arrays of exact values (bigints), prepared once per text. */
  query(sql: string): Database.Statement {
    let statement = this.queries.get(sql)
    if (!statement) {
      statement = this.db.prepare(sql).raw().safeIntegers()
      this.queries.set(sql, statement)
    }
    return statement
  }

  /** A statement that writes, prepared once per text. */
  statement(sql: string): Database.Statement {
    let statement = this.writes.get(sql)
    if (!statement) {
      statement = this.db.prepare(sql)
      this.writes.set(sql, statement)
    }
    return statement
  }

  /** One IMMEDIATE transaction that writes the inventory, counted so this process's cache sees it. */
  write<T>(body: () => T, deadline?: number): Promise<T> {
    return this.retryBusy(() => {
      const result = this.transaction.immediate(body) as T
      this.ownInventoryWrites++
      for (const listener of this.afterInventoryWrite) listener()
      return result
    }, deadline)
  }

  /** One IMMEDIATE transaction that leaves the inventory alone (no cache needs to know of it). */
  commit<T>(body: () => T, deadline?: number): Promise<T> {
    return this.retryBusy(() => this.transaction.immediate(body) as T, deadline)
  }

  /**
   * Runs a statement or transaction, retrying while another process holds a lock it needs (a writer's
   * lock for writes; for reads, a connection in exclusive locking mode or running WAL recovery), until
   * `deadline` (busyTimeoutMs from now by default); past that, 503: nothing was applied, so a retry is
   * safe. The wait is asynchronous, so the rest of the process keeps serving meanwhile.
   */
  async retryBusy<T>(attempt: () => T, deadline = Date.now() + this.busyTimeoutMs): Promise<T> {
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      try {
        return attempt()
      } catch (error) {
        if (!isBusy(error)) throw this.classify(error)
        if (Date.now() + wait > deadline) throw busyError()
        await sleep(wait)
      }
    }
  }

  /**
   * A fault of the file or the disk becomes its 503 (and the state the probe watches); any other
   * error keeps its meaning. A transaction that failed this way was rolled back whole.
   */
  classify(error: unknown): unknown {
    const fault = faultOf(error)
    if (fault === undefined) return error
    this.faults.seen(fault)
    return faultError(fault)
  }

  /**
   * Whether writes succeed again: on a full disk, free space first (see DISK_FREE_BYTES), then one
   * real write of the probe's row. Resolves with the lasting fault still found, or undefined.
   */
  private async probe(): Promise<DatabaseFault | undefined> {
    if (this.faults.current === 'disk_full') {
      const { bavail, bsize } = await statfs(dirname(this.path))
      if (bavail * bsize < DISK_FREE_BYTES) return 'disk_full'
    }
    try {
      await this.commit(() => this.statement('UPDATE database_probe SET probed_at = ? WHERE id = 1').run(new Date().toISOString()))
      return undefined
    } catch (error) {
      return error instanceof UnavailableError && error.fault?.lasting ? error.fault.cause : this.faults.current
    }
  }

  close() {
    this.faults.stop()
    this.reader?.close()
    this.db.close()
  }
}
