import type { Storage, StorageObserver } from '../ports.js'
import { sqliteCheck } from './check.js'
import { SqliteConnection, type SqliteOptions } from './connection.js'
import { sqliteDeprecatedCalls } from './deprecated-calls.js'
import { sqliteImports } from './imports.js'
import { sqliteInventory } from './inventory.js'
import { sqliteJumps } from './jumps.js'
import { sqliteKeys } from './keys.js'
import { sqliteLedger } from './ledger.js'
import { sqliteRetention } from './retention.js'
import { sqliteLocations } from './locations.js'
import { sqliteOrders } from './orders.js'
import { sqlitePets } from './pets.js'
import { sqliteReservations } from './reservations.js'
import { sqliteSignals } from './signals.js'
import { sqliteStock } from './stock.js'
import { sqliteWebhooks } from './webhooks.js'

export { openSqliteDatabase } from './connection.js'

export interface SqliteStorageOptions extends SqliteOptions {
  /** Told each group commit's size and duration (the metrics). */
  observer?: StorageObserver | undefined
}

/** The SQLite backend: every port of Storage, one concept per file of this folder, on one connection (connection.ts). */
export type SqliteStorage = Storage

/*
 * A value of the type's name, as the PostgreSQL backend has: the storage is a plain object of the
 * concepts' functions, and the literal is checked against every port, so none can be left out.
 */
export const SqliteStorage = {
  open(path: string, options: SqliteStorageOptions = {}): SqliteStorage {
    const conn = new SqliteConnection(path, options)
    const { settled, ...inventory } = sqliteInventory(conn)
    const { drain, alongside, ...stock } = sqliteStock(conn, options.observer)
    const { stop: stopSignals, ...signals } = sqliteSignals(conn)
    return {
      dialect: 'sqlite',
      migrationsApplied: conn.migrationsApplied,
      ...inventory,
      ...stock,
      ...sqliteLedger(conn),
      ...sqliteRetention(conn),
      ...sqliteJumps(conn),
      ...signals,
      ...sqliteWebhooks(conn, alongside),
      ...sqliteOrders(conn),
      ...sqliteReservations(conn),
      ...sqliteLocations(conn),
      ...sqliteImports(conn),
      ...sqlitePets(conn),
      ...sqliteKeys(conn),
      ...sqliteDeprecatedCalls(conn),
      ...sqliteCheck(conn),
      async ping() {
        await inventory.versions()
      },
      faults: conn.faults,
      // Every write already submitted is answered, and every listing ended, before the connections close.
      async close() {
        stopSignals()
        await drain()
        await settled()
        conn.close()
      },
    }
  },
}
