import type { Storage, StorageObserver } from '../storage.js'
import { SqliteConnection, type SqliteOptions } from './connection.js'
import { sqliteDeprecatedCalls } from './deprecated-calls.js'
import { sqliteImports } from './imports.js'
import { sqliteInventory } from './inventory.js'
import { sqliteKeys } from './keys.js'
import { sqliteLedger } from './ledger.js'
import { sqliteOrders } from './orders.js'
import { sqlitePets } from './pets.js'
import { sqliteStock } from './stock.js'

export { openSqliteDatabase } from './connection.js'

export interface SqliteStorageOptions extends SqliteOptions {
  /** Told each group commit's size and duration (the metrics). */
  observer?: StorageObserver | undefined
}

// The class's members come from the concept objects assigned in its constructor.
export interface SqliteStorage extends Storage {}

/** The SQLite backend: one file per concept in this folder, each implementing its port on one connection. */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface names what Object.assign provides
export class SqliteStorage {
  readonly dialect = 'sqlite'
  readonly migrationsApplied: string[]

  constructor(path: string, options: SqliteStorageOptions = {}) {
    const conn = new SqliteConnection(path, options)
    this.migrationsApplied = conn.migrationsApplied
    const inventory = sqliteInventory(conn)
    const stock = sqliteStock(conn, options.observer)
    Object.assign(
      this,
      inventory,
      stock,
      sqliteLedger(conn),
      sqliteOrders(conn),
      sqliteImports(conn),
      sqlitePets(conn),
      sqliteKeys(conn),
      sqliteDeprecatedCalls(conn),
      {
        async ping() {
          await inventory.versions()
        },
        async close() {
          await stock.drain()
          await inventory.settled()
          conn.close()
        },
      },
    )
  }
}
