import type { DeprecatedCalls } from '../../domain.js'
import type { DeprecatedCallStore } from '../ports.js'
import type { SqliteConnection } from './connection.js'

export function sqliteDeprecatedCalls(conn: SqliteConnection): DeprecatedCallStore {
  const { db } = conn
  // Text times in one format (toISOString), so min() and max() order them.
  const add = db.prepare(`INSERT INTO deprecated_calls (key_id, calls, first_call, last_call) VALUES (?, ?, ?, ?)
    ON CONFLICT (key_id) DO UPDATE SET calls = calls + excluded.calls,
      first_call = min(first_call, excluded.first_call), last_call = max(last_call, excluded.last_call)`)
  const list = db.prepare(`SELECT d.key_id AS keyId, k.name, d.calls, d.first_call AS firstCall, d.last_call AS lastCall
    FROM deprecated_calls AS d JOIN api_keys AS k ON k.id = d.key_id ORDER BY d.key_id`)
  return {
    /** One IMMEDIATE transaction; not an inventory write, so not counted as one. */
    async addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void> {
      await conn.retryBusy(() =>
        db
          .transaction(() => {
            for (const c of calls) add.run(c.keyId, c.calls, c.firstCall, c.lastCall)
          })
          .immediate(),
      )
    },
    listDeprecatedCalls: () => conn.retryBusy(() => list.all() as (DeprecatedCalls & { name: string })[]),
  }
}
