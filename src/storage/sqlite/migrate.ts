import type Database from 'better-sqlite3'
import { readdirSync, readFileSync } from 'node:fs'

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url)

export interface Migration {
  version: number
  name: string
  sql: string
}

/** Migrations are files named NNN_description.sql; once released, a file never changes. */
export function loadMigrations(dir: URL = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+_[\w-]+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }))
    .sort((a, b) => a.version - b.version)
}

/**
 * Applies pending migrations in one IMMEDIATE transaction, so processes starting together
 * (cluster workers, a CLI beside a server) wait for each other instead of applying twice.
 * Returns the names applied.
 */
export function migrateSqlite(db: Database.Database, migrations = loadMigrations()): string[] {
  return db
    .transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`)
      const applied = new Set(
        db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[],
      )
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
