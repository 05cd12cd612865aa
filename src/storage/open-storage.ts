import { maskUrl, type Config } from '../config.js'
import { PostgresStorage } from './postgres/postgres.storage.js'
import { SqliteStorage } from './sqlite/sqlite.storage.js'
import type { Storage, StorageObserver } from './ports.js'

/** The database named by DATABASE_URL cannot be opened or migrated; the message is one line for people. */
export class StorageOpenError extends Error {}

/** Opens (and migrates) the storage named by the configuration's DATABASE_URL; `observer` hears how it works. */
export async function openStorage(
  config: Pick<Config, 'databaseUrl' | 'dbPoolSize' | 'dbTimeoutMs' | 'dbMigrationTimeoutMs'>,
  observer?: StorageObserver,
): Promise<Storage> {
  const { databaseUrl } = config
  try {
    if (databaseUrl.startsWith('sqlite:')) {
      return SqliteStorage.open(databaseUrl.slice('sqlite:'.length), {
        busyTimeoutMs: config.dbTimeoutMs,
        migrationTimeoutMs: config.dbMigrationTimeoutMs,
        observer,
      })
    }
    return await PostgresStorage.open(databaseUrl, {
      poolSize: config.dbPoolSize,
      timeoutMs: config.dbTimeoutMs,
      migrationTimeoutMs: config.dbMigrationTimeoutMs,
      observer,
    })
  } catch (error) {
    // A driver may quote the URL it was given: the reason is masked too.
    const reason = maskUrl(error instanceof Error ? error.message || error.name : String(error))
    throw new StorageOpenError(`Cannot open the database ${maskUrl(databaseUrl)}: ${reason}`)
  }
}
