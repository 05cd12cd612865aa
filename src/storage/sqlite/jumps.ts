import type Database from 'better-sqlite3'
import type { LedgerJump } from '../../domain.js'
import type { LedgerJumps } from '../ports.js'
import type { SqliteConnection } from './connection.js'

/*
 * Jumps of the ledger's seqs (migration 013). SQLite numbers a row without a seq after the largest
 * present, so every ledger writer gives seqs explicitly, after lastIssuedSeq (ledger.ts), which counts
 * the jumps.
 */

const LAST_ROW = 'SELECT coalesce(max(seq), 0) FROM inventory_changes'
const LAST_ISSUED = `SELECT max((${LAST_ROW}), coalesce((SELECT max(through_seq) FROM ledger_jumps), 0))`

/**
 * Makes the next seq at least the last row's + `by` + 1, and at least `atLeast` + 1 (the last seq a
 * database being replaced gave out: restore.ts), past every earlier jump too. The caller holds the
 * write lock (an IMMEDIATE transaction, or the restore's private copy). A second jump from the same
 * last row widens the first.
 */
export function bumpLedgerSeq(db: Database.Database, by: bigint, atLeast = 0n, now = new Date()): LedgerJump {
  const after = db.prepare(LAST_ROW).pluck().safeIntegers().get() as bigint
  const issued = db.prepare(LAST_ISSUED).pluck().safeIntegers().get() as bigint
  let through = after + by
  if (issued > through) through = issued
  if (atLeast > through) through = atLeast
  const at = now.toISOString()
  const [, widest] = db
    .prepare(`INSERT INTO ledger_jumps (after_seq, through_seq, at) VALUES (?, ?, ?)
      ON CONFLICT (after_seq) DO UPDATE SET through_seq = max(through_seq, excluded.through_seq), at = excluded.at
      RETURNING after_seq, through_seq`)
    .raw()
    .safeIntegers()
    .get(after, through, at) as [bigint, bigint]
  return { after, through: widest, at }
}

export function sqliteJumps(conn: SqliteConnection): LedgerJumps {
  return {
    jumpOver: (cursor) =>
      conn.retryBusy(() => {
        // Few rows (one per restore): the newest jump starting before the cursor is the only candidate.
        const row = conn
          .query('SELECT after_seq, through_seq, at FROM ledger_jumps WHERE after_seq < ? ORDER BY after_seq DESC LIMIT 1')
          .get(cursor) as [bigint, bigint, string] | undefined
        return row && cursor <= row[1] ? { after: row[0], through: row[1], at: row[2] } : undefined
      }),
    bumpSeq: (by) => conn.write(() => bumpLedgerSeq(conn.db, by)),
  }
}
