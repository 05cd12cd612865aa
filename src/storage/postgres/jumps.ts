import type { LedgerJumps } from '../ports.js'
import { lockInventory, type PostgresConnection } from './connection.js'

/*
 * Jumps of the ledger's seqs (migration 016): the counter writers give seqs out from
 * (inventory_version.last_change) moved past the jump under the writers' own lock, so the next write
 * of any instance takes its seq after it. Readers start from the last row (ledger.ts lastChangeSeq),
 * never from the counter, which may point into a jump.
 */
export function postgresJumps(db: PostgresConnection): LedgerJumps {
  return {
    async jumpOver(cursor) {
      const [row] = await db.query<{ after: string; through: string; at: Date }>(
        `SELECT after_seq::text AS after, through_seq::text AS through, at FROM ledger_jumps
         WHERE after_seq < $1 ORDER BY after_seq DESC LIMIT 1`,
        [String(cursor)],
      )
      if (!row || cursor > BigInt(row.through)) return undefined
      return { after: BigInt(row.after), through: BigInt(row.through), at: row.at.toISOString() }
    },

    bumpSeq: (by) =>
      db.transaction(Date.now() + db.timeoutMs, async (run) => {
        const { lastChange } = await lockInventory(run)
        const [last] = await run<{ seq: string }>('SELECT coalesce(max(seq), 0)::text AS seq FROM inventory_changes')
        const after = BigInt(last!.seq)
        const through = after + by > lastChange ? after + by : lastChange
        const [row] = await run<{ through: string; at: Date }>(
          `INSERT INTO ledger_jumps (after_seq, through_seq, at) VALUES ($1, $2, now())
           ON CONFLICT (after_seq) DO UPDATE SET through_seq = greatest(ledger_jumps.through_seq, excluded.through_seq), at = excluded.at
           RETURNING through_seq::text AS through, at`,
          [String(after), String(through)],
        )
        await run('UPDATE inventory_version SET last_change = $1', [row!.through])
        return { after, through: BigInt(row!.through), at: row!.at.toISOString() }
      }),
  }
}
