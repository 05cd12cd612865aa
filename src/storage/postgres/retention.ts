import type { LedgerRetention } from '../ports.js'
import type { PostgresConnection } from './connection.js'

/*
 * Retention on PostgreSQL (migration 012): the oldest rows of the ledger removed, a prefix at a time,
 * the highest seq removed kept in ledger_retention. One instance prunes at a time (a transaction-level
 * advisory lock, tried, never waited for); the inventory_version lock is never taken.
 */

// Any constant will do: the same for every instance of this database (migrate.ts uses 727_001).
const PRUNE_LOCK = 727_002

export function postgresRetention(db: PostgresConnection): LedgerRetention {
  return {
    async prunedThrough() {
      const [row] = await db.query<{ through: string }>('SELECT pruned_through::text AS through FROM ledger_retention')
      return BigInt(row!.through)
    },

    pruneLedger: (before, maxRows) =>
      db.transaction(Date.now() + db.timeoutMs, async (run) => {
        const [lock] = await run<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS got', [PRUNE_LOCK])
        if (!lock?.got) return 0
        const [row] = await run<{ removed: string }>(
          `WITH head AS (SELECT seq, at FROM inventory_changes ORDER BY seq LIMIT $1),
             bound AS (SELECT least(coalesce((SELECT min(seq) FROM head WHERE at >= $2) - 1, (SELECT max(seq) FROM head)),
               (SELECT max(seq) FROM inventory_changes) - 1) AS through),
             gone AS (DELETE FROM inventory_changes WHERE seq <= (SELECT through FROM bound) RETURNING seq),
             moved AS (UPDATE ledger_retention SET pruned_through = greatest(pruned_through, (SELECT max(seq) FROM gone))
               WHERE EXISTS (SELECT 1 FROM gone))
           SELECT count(*)::text AS removed FROM gone`,
          [maxRows, before],
        )
        return Number(row!.removed)
      }),
  }
}
