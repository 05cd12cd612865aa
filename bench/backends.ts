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

/** Every database made here and not yet disposed, so that a run cut short can still drop them. */
const open = new Set<BenchDatabase>()

function wrap(db: { url: string; drop(): Promise<void> }): BenchDatabase {
  const tracked: BenchDatabase = {
    url: db.url,
    dispose: () => {
      open.delete(tracked)
      return db.drop()
    },
  }
  open.add(tracked)
  return tracked
}

/** The DATABASE_URLs of the databases made and not yet disposed. */
export const openDatabaseUrls = (): string[] => [...open].map((db) => db.url)

/**
 * Drops the databases still open (gigabytes at 10,000,000 ledger rows): run.ts calls it on its
 * watchdog, SIGINT and SIGTERM, after killing the servers. Gives up after 30 s rather than hang the exit.
 */
export async function disposeOpenDatabases(): Promise<void> {
  const all = [...open]
  await Promise.race([Promise.allSettled(all.map((db) => db.dispose())), new Promise((resolve) => setTimeout(resolve, 30_000).unref())])
}

export const sqliteBackend: Backend = { name: 'sqlite', createDatabase: async () => wrap(sqliteDatabase()) }
export const postgresBackend: Backend = { name: 'postgres', createDatabase: async () => wrap(await postgresDatabase()) }

/** SQLite always; PostgreSQL (postgres@127.0.0.1:5432, or TEST_POSTGRES_URL) when it answers. */
export async function availableBackends(log: (line: string) => void): Promise<Backend[]> {
  const reason = await postgresUnavailable()
  if (reason) log(`skipping the postgres backend: ${reason}`)
  return reason ? [sqliteBackend] : [sqliteBackend, postgresBackend]
}
