import pg from 'pg'
import { loadMigrations } from '../migrations.js'

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url)
// Any constant will do: it only has to be the same for every process migrating this database.
const MIGRATION_LOCK = 727_001

export interface MigrateOptions {
  /** Bound on reaching the server. */
  connectTimeoutMs: number
  /** Bound on the rest: waiting for another process's migration lock and applying the migrations. */
  timeoutMs: number
}

/**
 * Applies pending migrations (files NNN_description.sql, never changed once released) in one
 * transaction under an advisory lock, so instances starting together apply each exactly once. It uses
 * a connection of its own, bounded by its own timeout rather than the request timeout: a migration
 * may legitimately take minutes, and so may waiting for another instance to finish one.
 */
export async function migratePostgres(url: string, options: MigrateOptions): Promise<string[]> {
  const migrations = loadMigrations(MIGRATIONS_DIR)
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.timeoutMs,
    query_timeout: options.timeoutMs,
    application_name: 'petstore migrate',
  })
  await client.connect()
  try {
    // The common case, an up-to-date database, is settled by a read, without the lock.
    if (
      await upToDate(
        client,
        migrations.map((m) => m.version),
      )
    )
      return []
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const applied = new Set(rows.map((r) => r.version))
    const done: string[] = []
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name])
      done.push(migration.name)
    }
    await client.query('COMMIT')
    return done
  } finally {
    // Closing the session rolls back an unfinished transaction and frees the lock.
    await client.end().catch(() => {})
  }
}

async function upToDate(client: pg.Client, versions: number[]): Promise<boolean> {
  const { rows } = await client.query<{ tracked: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS tracked")
  if (!rows[0]?.tracked) return false
  const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version))
  return versions.every((v) => applied.has(v))
}
