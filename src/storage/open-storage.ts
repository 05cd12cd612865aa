import type { Storage } from './storage.js'
import { SqliteStorage } from './sqlite/sqlite.storage.js'

/** Opens (and migrates) the storage named by a DATABASE_URL that config.ts has already validated. */
export async function openStorage(databaseUrl: string): Promise<Storage> {
  if (databaseUrl.startsWith('sqlite:')) return new SqliteStorage(databaseUrl.slice('sqlite:'.length))
  throw new Error('PostgreSQL storage is not available in this version')
}
