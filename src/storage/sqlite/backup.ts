import Database from 'better-sqlite3'
import {
  closeSync,
  copyFileSync,
  existsSync,
  fchmodSync,
  fdatasyncSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { LedgerJump } from '../../domain.js'
import { InvalidInputError } from '../../errors.js'
import { loadMigrations } from '../migrations.js'
import { endLongRead } from './connection.js'
import { bumpLedgerSeq } from './jumps.js'
import { migrateSqlite } from './migrate.js'

/*
 * Backups of the SQLite database while the service serves and writes (`petstore backup`), and putting
 * one back (`petstore restore`). See docs/operations.md, "Backups and recovery".
 *
 * The copy is SQLite's online backup API (better-sqlite3's db.backup), page by page, from a
 * connection that holds ONE read transaction open for the whole copy. The API reads each step in a
 * read transaction of its own unless the source connection already has one, and a write committed
 * by another connection between two steps (the server, another process) makes it start over: under a
 * steady write load it never finishes (measured: 3,124 restarts copying 16,000 pages while another
 * process committed every millisecond). Holding the read open pins one snapshot: WAL readers never
 * block writers, so the server commits on meanwhile, into a WAL that its checkpoints cannot empty
 * past the snapshot until the copy ends (the WAL grows by what is written during the copy).
 */

const MIGRATIONS = () => loadMigrations(new URL('./migrations/', import.meta.url))
/**
 * Pages copied per step (4 KiB each): 4 MiB, synced after each step, so the disk takes the copy in
 * small pieces: a PATCH's commit fsync waits behind at most one of them. Steps of 16 MiB synced every
 * 64 MiB made PATCHes wait up to 34 to 50 ms during a backup; 4 MiB synced each time, 12 to 14 ms, the
 * backup as fast (bench/large-store.ts, docs/operations.md).
 */
const PAGES_PER_STEP = 1024

export interface DatabaseFacts {
  entries: number
  ledgerRows: number
  /** The last row's seq (0 when the ledger is empty). */
  lastSeq: bigint
  /** The highest migration applied. */
  schema: number
}

export interface BackupResult extends DatabaseFacts {
  bytes: number
  ms: number
}

const partialName = (file: string, what: string) => join(dirname(file), `.${basename(file)}.${what}-${process.pid}`)

function removeWithSidecars(path: string) {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true })
}

function syncFile(path: string) {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** The folder's entry of a renamed file is durable only once the folder itself is synced. */
function syncFolder(path: string) {
  syncFile(dirname(path))
}

function facts(db: Database.Database): DatabaseFacts {
  const one = (sql: string) => db.prepare(sql).pluck().safeIntegers().get() as bigint
  return {
    entries: Number(one('SELECT count(*) FROM inventory')),
    ledgerRows: Number(one('SELECT count(*) FROM inventory_changes')),
    lastSeq: one('SELECT coalesce(max(seq), 0) FROM inventory_changes'),
    schema: Number(one('SELECT coalesce(max(version), 0) FROM schema_migrations')),
  }
}

/** Throws unless PRAGMA integrity_check says ok, quoting its first findings. */
function assertIntact(db: Database.Database, what: string) {
  const findings = db.prepare('PRAGMA integrity_check(10)').pluck().all() as string[]
  if (findings.length !== 1 || findings[0] !== 'ok')
    throw new InvalidInputError(`${what} fails PRAGMA integrity_check: ${findings.slice(0, 3).join('; ')}`)
}

/**
 * Copies the database at `source` into `file`, consistent (one committed state), while other
 * processes write it: to a temporary name beside `file` (mode 0600), checked with PRAGMA
 * integrity_check, made a single file (journal_mode DELETE: no -wal needed beside it), synced, then
 * renamed (without `force`, linked, so an existing file is never replaced), and the folder synced.
 * Nothing is left under the temporary name when it fails.
 */
export async function backupSqlite(source: string, file: string, options: { force: boolean }): Promise<BackupResult> {
  const started = performance.now()
  if (!options.force && existsSync(file)) throw new InvalidInputError(`${file} exists already: give --force to replace it`)
  if (!existsSync(source)) throw new InvalidInputError(`There is no database at ${source} to back up`)
  if (resolve(source) === resolve(file)) throw new InvalidInputError('The backup cannot be the database itself')
  const partial = partialName(file, 'partial')
  removeWithSidecars(partial)
  // Created first, owner only: SQLite then writes into this file and keeps its mode.
  const fd = openSync(partial, 'wx', 0o600)
  try {
    fchmodSync(fd, 0o600)
    const db = new Database(source, { readonly: true, fileMustExist: true })
    const checkpointer = new Database(source, { fileMustExist: true })
    try {
      db.pragma('busy_timeout = 10000')
      checkpointer.pragma('busy_timeout = 0')
      // The one read transaction the whole copy is taken in (see above).
      db.exec('BEGIN')
      db.prepare('SELECT count(*) FROM sqlite_schema').get()
      await db.backup(partial, {
        progress: () => {
          fdatasyncSync(fd)
          return PAGES_PER_STEP
        },
      })
      endLongRead(db, checkpointer)
    } finally {
      db.close()
      checkpointer.close()
    }
    let copied: DatabaseFacts
    const copy = new Database(partial, { fileMustExist: true })
    try {
      copy.pragma('journal_mode = DELETE')
      assertIntact(copy, 'The copy')
      copied = facts(copy)
    } finally {
      copy.close()
    }
    fsyncSync(fd)
    if (options.force) renameSync(partial, file)
    else {
      try {
        linkSync(partial, file)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST')
          throw new InvalidInputError(`${file} exists already: give --force to replace it`)
        throw error
      }
      rmSync(partial)
    }
    syncFolder(file)
    return { ...copied, bytes: statSync(file).size, ms: Math.round(performance.now() - started) }
  } finally {
    closeSync(fd)
    removeWithSidecars(partial)
  }
}

export interface RestoreResult extends DatabaseFacts {
  /** Migrations applied to the backup's schema on the way in. */
  migrated: string[]
  jump: LedgerJump
  /** Whether a database was replaced (and its last seq counted in the jump). */
  replaced: boolean
}

/** Where a database's seqs have gone so far: its last row's, or past it its highest jump's. */
function lastIssued(db: Database.Database): bigint {
  const hasJumps = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_jumps'").pluck().get()
  const sql = hasJumps
    ? 'SELECT max((SELECT coalesce(max(seq), 0) FROM inventory_changes), coalesce((SELECT max(through_seq) FROM ledger_jumps), 0))'
    : 'SELECT coalesce(max(seq), 0) FROM inventory_changes'
  return db.prepare(sql).pluck().safeIntegers().get() as bigint
}

/**
 * The database at `target`, held so that no other process can use it, or a refusal (nothing
 * changed) when one does. Every connection to a WAL database keeps a shared lock on its file from
 * its first read to its close, so an idle server holds one too; leaving WAL mode needs the only
 * lock there is, and an exclusive locking mode keeps it until this connection closes.
 */
function holdAlone(target: string): Database.Database {
  let db: Database.Database | undefined
  try {
    db = new Database(target, { fileMustExist: true })
    db.pragma('busy_timeout = 0')
    db.pragma('locking_mode = EXCLUSIVE')
    db.pragma('journal_mode = DELETE')
    // A database that was not in WAL mode takes its exclusive lock at the first write: take it now.
    db.exec('BEGIN EXCLUSIVE; COMMIT')
    return db
  } catch (error) {
    db?.close()
    if (error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY'))
      throw new InvalidInputError(
        `Another process has the database at ${target} open (a running petstore serve, a CLI command): stop it first. Nothing was changed`,
      )
    throw new InvalidInputError(
      `Cannot check that no process uses the database at ${target} (${(error as Error).message}): ` +
        'with the service stopped, move it aside and restore again. Nothing was changed',
    )
  }
}

/**
 * Puts the backup `file` in place at `target`: refused (nothing changed) when it fails the integrity
 * check, when its schema is newer than this build's, or while any process has `target` open. The
 * backup is copied beside `target`, checked, migrated, and its next seq moved past a jump of `bumpBy`
 * after its last row (and past every seq the database it replaces gave out, when that one is still
 * readable), then renamed over `target`.
 */
export function restoreSqlite(target: string, file: string, bumpBy: bigint): RestoreResult {
  if (!existsSync(file) || !statSync(file).isFile()) throw new InvalidInputError(`${file} is not a file`)
  if (resolve(file) === resolve(target)) throw new InvalidInputError('The backup to restore is the database itself')
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
  const incoming = partialName(target, 'restoring')
  removeWithSidecars(incoming)
  let held: Database.Database | undefined
  try {
    copyFileSync(file, incoming)
    // A copy of a live database's file comes with its WAL; SQLite folds it in below.
    if (existsSync(`${file}-wal`)) copyFileSync(`${file}-wal`, `${incoming}-wal`)
    fchmodPath(incoming)
    const db = openBackup(incoming, file)
    let result: Omit<RestoreResult, 'replaced' | 'jump'>
    let jump: LedgerJump
    const replaced = existsSync(target)
    try {
      const known = new Set(MIGRATIONS().map((m) => m.version))
      const applied = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[]
      const unknown = applied.filter((v) => !known.has(v))
      if (unknown.length > 0)
        throw new InvalidInputError(
          `${file}'s schema is newer than this build's (migration ${unknown.join(', ')} is not known here): restore it with a newer petstore. Nothing was changed`,
        )
      const migrated = migrateSqlite(db)
      result = { ...facts(db), migrated }
      held = replaced ? holdAlone(target) : undefined
      const atLeast = held ? lastIssued(held) : 0n
      db.transaction(() => {
        jump = bumpLedgerSeq(db, bumpBy, atLeast)
        // The leases name processes of the backup's time: the next server takes the subscriptions at once.
        db.exec('UPDATE webhooks SET lease_owner = NULL, lease_expires_at = NULL')
      }).immediate()
    } finally {
      db.close()
    }
    syncFile(incoming)
    renameSync(incoming, target)
    // The replaced database's WAL left WAL mode with it (holdAlone); its shared-memory file may stay.
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${target}${suffix}`, { force: true })
    syncFolder(target)
    return { ...result, jump: jump!, replaced }
  } finally {
    held?.close()
    removeWithSidecars(incoming)
  }
}

function fchmodPath(path: string) {
  const fd = openSync(path, 'r+')
  try {
    fchmodSync(fd, 0o600)
  } finally {
    closeSync(fd)
  }
}

/** The copy of the backup, opened, checked and made a single file; refused when it is not an intact petstore database. */
function openBackup(path: string, file: string): Database.Database {
  let db: Database.Database | undefined
  try {
    db = new Database(path, { fileMustExist: true })
    db.pragma('journal_mode = DELETE')
    assertIntact(db, file)
    const tracked = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").pluck().get()
    if (!tracked) throw new InvalidInputError(`${file} is not a petstore database (it has no schema_migrations table)`)
    return db
  } catch (error) {
    db?.close()
    if (error instanceof InvalidInputError) throw error
    throw new InvalidInputError(`${file} cannot be read as a SQLite database: ${(error as Error).message}`)
  }
}
