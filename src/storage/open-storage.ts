import type { Config } from '../config.js'
import { PostgresStorage } from './postgres/postgres.storage.js'
import { SqliteStorage } from './sqlite/sqlite.storage.js'
import type { Storage } from './storage.js'

/** Opens (and migrates) the storage named by the configuration's DATABASE_URL. */
export async function openStorage(
  config: Pick<Config, 'databaseUrl' | 'dbPoolSize' | 'dbTimeoutMs'>,
): Promise<Storage> {
  const { databaseUrl } = config
  if (databaseUrl.startsWith('sqlite:')) {
    return new SqliteStorage(databaseUrl.slice('sqlite:'.length), { busyTimeoutMs: config.dbTimeoutMs })
  }
  return PostgresStorage.open(databaseUrl, { poolSize: config.dbPoolSize, timeoutMs: config.dbTimeoutMs })
}
