import type pg from 'pg'
import { loadMigrations } from '../migrations.js'

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url)
// Any constant will do: it only has to be the same for every process migrating this database.
const MIGRATION_LOCK = 727_001

/**
 * Applies pending migrations (files NNN_description.sql, never changed once released) in one
 * transaction under an advisory lock, so instances starting together apply each exactly once.
 */
export async function migratePostgres(pool: pg.Pool): Promise<string[]> {
  const migrations = loadMigrations(MIGRATIONS_DIR)
  const client = await pool.connect()
  try {
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
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      done.push(migration.name)
    }
    await client.query('COMMIT')
    return done
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}
