import Database from 'better-sqlite3'
import pg from 'pg'
import type { Backend } from './helpers.js'

/** Another process's transaction that holds what every inventory writer needs first, until released. */
export async function holdInventoryWriteLock(backend: Backend, url: string): Promise<() => Promise<void>> {
  if (backend.name === 'sqlite') {
    const other = new Database(url.slice('sqlite:'.length))
    other.exec('BEGIN IMMEDIATE')
    return async () => {
      other.exec('ROLLBACK')
      other.close()
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('BEGIN')
  await client.query('SELECT version FROM inventory_version FOR UPDATE')
  return async () => {
    await client.query('ROLLBACK')
    await client.end()
  }
}
