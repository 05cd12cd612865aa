import type { LedgerRetention } from '../ports.js'
import type { SqliteConnection } from './connection.js'

/*
 * Retention on SQLite (migration 010): the oldest rows of the ledger removed, a prefix at a time, and
 * the highest seq removed kept in ledger_retention. `at` is ISO 8601 text, so it compares as text.
 */

/** The last seq of the prefix that may go: the rows before the first one not before `before` among the first `n`, never the newest row. */
const BOUND = `WITH head AS (SELECT seq, at FROM inventory_changes ORDER BY seq LIMIT @n)
  SELECT min(coalesce((SELECT min(seq) FROM head WHERE at >= @before) - 1, (SELECT max(seq) FROM head)),
    (SELECT max(seq) FROM inventory_changes) - 1)`

export function sqliteRetention(conn: SqliteConnection): LedgerRetention {
  return {
    prunedThrough: () => conn.retryBusy(() => conn.query('SELECT pruned_through FROM ledger_retention').pluck().get() as bigint),

    pruneLedger: (before, maxRows) =>
      conn.retryBusy(() =>
        conn.db
          .transaction(() => {
            const bound = conn.query(BOUND).pluck().get({ n: maxRows, before }) as bigint | null
            if (bound === null) return 0
            const removed = conn.statement('DELETE FROM inventory_changes WHERE seq <= ?').run(bound).changes
            if (removed > 0) conn.statement('UPDATE ledger_retention SET pruned_through = max(pruned_through, ?)').run(bound)
            return removed
          })
          .immediate(),
      ),
  }
}
