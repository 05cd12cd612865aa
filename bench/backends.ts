// Database backends the service is benchmarked on. Each run gets a fresh, empty database.
import { postgresDatabase, postgresUnavailable, sqliteDatabase } from '../test/support/databases.js'

export interface BenchDatabase {
  /** Value for the service's DATABASE_URL. */
  readonly url: string
  /** Removes the database; called after the service using it has stopped. */
  dispose(): Promise<void>
}

export interface Backend {
  /** Short name, shown in the results as `service/<name>`. */
  readonly name: string
  createDatabase(label: string): Promise<BenchDatabase>
}

const wrap = (db: { url: string; drop(): Promise<void> }): BenchDatabase => ({ url: db.url, dispose: () => db.drop() })

export const sqliteBackend: Backend = { name: 'sqlite', createDatabase: async () => wrap(sqliteDatabase()) }
export const postgresBackend: Backend = { name: 'postgres', createDatabase: async () => wrap(await postgresDatabase()) }

/** SQLite always; PostgreSQL (postgres@127.0.0.1:5432, or TEST_POSTGRES_URL) when it answers. */
export async function availableBackends(log: (line: string) => void): Promise<Backend[]> {
  const reason = await postgresUnavailable()
  if (reason) log(`skipping the postgres backend: ${reason}`)
  return reason ? [sqliteBackend] : [sqliteBackend, postgresBackend]
}
