import type { ConnectionUse, Storage } from '../ports.js'
import { postgresCheck } from './check.js'
import { PostgresConnection, type PostgresOptions } from './connection.js'
import { postgresDeprecatedCalls } from './deprecated-calls.js'
import { postgresImports } from './imports.js'
import { postgresInventory } from './inventory.js'
import { postgresJumps } from './jumps.js'
import { postgresKeys } from './keys.js'
import { postgresLedger } from './ledger.js'
import { postgresOrders } from './orders.js'
import { postgresPets } from './pets.js'
import { postgresLocations } from './locations.js'
import { postgresReservations } from './reservations.js'
import { postgresRetention } from './retention.js'
import { postgresSignals } from './signals.js'
import { postgresStock } from './stock.js'
import { postgresWebhooks } from './webhooks.js'

export type { PostgresOptions } from './connection.js'

/** The PostgreSQL backend: every port of Storage, one concept per file of this folder, on one pool (connection.ts). */
export type PostgresStorage = Storage & { connections(): ConnectionUse }

/*
 * A value of the type's name, so that `PostgresStorage.open` reads as before. The storage is a plain
 * object of the concepts' functions: the literal is checked against every port, so none can be left out.
 */
export const PostgresStorage = {
  async open(url: string, options: PostgresOptions): Promise<PostgresStorage> {
    const db = await PostgresConnection.open(url, options)
    const { drain, ...stock } = postgresStock(db)
    const { stop: stopSignals, ...signals } = postgresSignals(db)
    return {
      dialect: 'postgres',
      migrationsApplied: db.migrationsApplied,
      ...postgresInventory(db),
      ...stock,
      ...postgresLedger(db),
      ...postgresRetention(db),
      ...postgresJumps(db),
      ...signals,
      ...postgresWebhooks(db),
      ...postgresOrders(db),
      ...postgresReservations(db),
      ...postgresLocations(db),
      ...postgresImports(db),
      ...postgresPets(db),
      ...postgresDeprecatedCalls(db),
      ...postgresKeys(db),
      ...postgresCheck(db),
      ping: () => db.ping(),
      faults: db.faults,
      connections: () => db.connections(),
      // Every write already submitted is answered before the pool ends.
      async close() {
        stopSignals()
        await drain()
        await db.close()
      },
    }
  },
}
