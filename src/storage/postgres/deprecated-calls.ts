import type { DeprecatedCalls } from '../../domain.js'
import type { DeprecatedCallStore } from '../ports.js'
import type { PostgresConnection } from './connection.js'
import { type DeprecatedCallsRow, toDeprecatedCalls } from './rows.js'

export function postgresDeprecatedCalls(db: PostgresConnection): DeprecatedCallStore {
  return {
    /**
     * One statement. Rows are upserted in key order, so two instances flushing at once lock the same
     * rows in the same order and never deadlock; counts of one key given twice are summed first (an
     * upsert may not touch a row twice).
     */
    async addDeprecatedCalls(calls: DeprecatedCalls[]): Promise<void> {
      await db.query(
        `INSERT INTO deprecated_calls (key_id, calls, first_call, last_call)
       SELECT k, sum(n), min(f), max(l) FROM unnest($1::integer[], $2::bigint[], $3::timestamptz[], $4::timestamptz[]) AS c(k, n, f, l)
       GROUP BY k ORDER BY k
       ON CONFLICT (key_id) DO UPDATE SET calls = deprecated_calls.calls + excluded.calls,
         first_call = least(deprecated_calls.first_call, excluded.first_call),
         last_call = greatest(deprecated_calls.last_call, excluded.last_call)`,
        [calls.map((c) => c.keyId), calls.map((c) => c.calls), calls.map((c) => c.firstCall), calls.map((c) => c.lastCall)],
      )
    },

    async listDeprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]> {
      const rows = await db.query<DeprecatedCallsRow>(
        `SELECT d.key_id, k.name, d.calls, d.first_call, d.last_call
       FROM deprecated_calls AS d JOIN api_keys AS k ON k.id = d.key_id ORDER BY d.key_id`,
      )
      return rows.map(toDeprecatedCalls)
    },
  }
}
