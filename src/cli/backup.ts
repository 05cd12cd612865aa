import { ConfigError, loadConfig } from '../config.js'
import { parseInt64 } from '../int64.js'
import { backupSqlite, restoreSqlite } from '../storage/sqlite/backup.js'
import { type CliIo, parseCommand, say, UsageError } from './io.js'
import { bumpedLine } from './ledger.js'

/** The default jump of a restore: far more seqs than a store gives out between two backups. */
export const DEFAULT_BUMP = 1_000_000_000n

/** The SQLite file DATABASE_URL names; on PostgreSQL, exit 2 with what to use there instead. */
function sqlitePath(io: CliIo, command: string, instead: string): string {
  const { databaseUrl } = loadConfig(io.env)
  if (!databaseUrl.startsWith('sqlite:'))
    throw new ConfigError(
      `petstore ${command} works on SQLite's file; DATABASE_URL names PostgreSQL: ${instead} (docs/operations.md, "Backups and recovery")`,
    )
  const path = databaseUrl.slice('sqlite:'.length)
  if (path === ':memory:') throw new ConfigError(`petstore ${command}: an in-memory database has no file`)
  return path
}

/**
 * `petstore backup FILE [--force]`: a consistent copy of the SQLite database while the service
 * serves and writes (src/storage/sqlite/backup.ts says how). Exit 0 only once the copy passed
 * PRAGMA integrity_check and is in place, synced.
 */
export async function backupCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommand('backup', args, { force: { type: 'boolean' } }, 1)
  if (positionals.length !== 1) throw new UsageError('backup: use backup FILE [--force]')
  const file = positionals[0]!
  const source = sqlitePath(io, 'backup', 'back it up with pg_basebackup (with WAL archiving, for point-in-time recovery) or pg_dump')
  const copy = await backupSqlite(source, file, { force: values.force ?? false })
  say(
    io,
    `Backed up ${copy.entries} entries and ${copy.ledgerRows} ledger rows (last seq ${copy.lastSeq}, schema ${copy.schema}) ` +
      `to ${file}: ${copy.bytes} bytes in ${(copy.ms / 1000).toFixed(1)} s; PRAGMA integrity_check: ok.`,
  )
}

/**
 * `petstore restore FILE [--bump-seq N]`: puts a backup in place at DATABASE_URL's path, refused
 * (exit 1, nothing changed) while any process has the database open, when FILE fails the integrity
 * check, or when its schema is newer than this build's.
 */
export async function restoreCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommand('restore', args, { 'bump-seq': { type: 'string' } }, 1)
  const bump = values['bump-seq'] === undefined ? DEFAULT_BUMP : parseInt64(values['bump-seq'])
  if (positionals.length !== 1 || bump === undefined || bump < 1n)
    throw new UsageError('restore: use restore FILE [--bump-seq N], N a whole number from 1 (default 1000000000)')
  const file = positionals[0]!
  const target = sqlitePath(io, 'restore', "restore with pg_restore or a point-in-time recovery, then run 'petstore ledger bump-seq N'")
  const restored = restoreSqlite(target, file, bump)
  say(
    io,
    `Restored ${restored.entries} entries and ${restored.ledgerRows} ledger rows (last seq ${restored.lastSeq}) from ${file} to ${target}` +
      `${restored.replaced ? ', replacing the database there' : ''}` +
      `${restored.migrated.length > 0 ? `; applied migrations ${restored.migrated.join(', ')}` : ''}.`,
  )
  say(io, bumpedLine(restored.jump))
}
