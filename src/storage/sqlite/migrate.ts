import type Database from 'better-sqlite3'
import { loadMigrations } from '../migrations.js'

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url)

/**
 * Applies pending migrations in one IMMEDIATE transaction, so processes starting together
 * (cluster workers, a CLI beside a server) wait for each other instead of applying twice.
 * Returns the names applied.
 */
export function migrateSqlite(db: Database.Database, migrations = loadMigrations(MIGRATIONS_DIR)): string[] {
  // The common case, an up-to-date database, is settled by a read: no write lock for every CLI call.
  const tracked = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").pluck().get()
  if (tracked) {
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[])
    if (migrations.every((m) => applied.has(m.version))) return []
  }
  return db
    .transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`)
      const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[])
      const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
      const done: string[] = []
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue
        db.exec(migration.sql)
        record.run(migration.version, migration.name, new Date().toISOString())
        done.push(migration.name)
      }
      return done
    })
    .immediate()
}
