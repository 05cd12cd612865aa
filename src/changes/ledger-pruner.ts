import type { LedgerRetention } from '../storage/ports.js'
import { PeriodicPass } from '../periodic-pass.js'
import { saidOnce } from '../storage/faults.js'

/** Rows one transaction removes: about a millisecond of work, so no request waits long behind it. */
export const PRUNE_BATCH_ROWS = 250
/**
 * After each batch the pruner waits this many times as long as the batch took (at least
 * PRUNE_PAUSE_MIN_MS), so pruning takes at most a tenth of the process, whatever the backlog: on
 * SQLite a batch runs on the event loop. Measured on SQLite, PATCH under wrk while a 2,000,000-row
 * backlog was pruned: back to back, 1,000-row batches took it from 18,000 to 2,200 req/s and its p99
 * to half a second; at a fifth, 14,300 req/s; at a tenth, no change beyond the runs' spread (p99 15
 * against 14 ms), about 10,000 rows removed a second.
 */
const PRUNE_PAUSE_FACTOR = 9
const PRUNE_PAUSE_MIN_MS = 10
/** The longest between two passes: a row is removed within about this of passing the retention. */
export const PRUNE_INTERVAL_MS = 10_000

export interface PrunerLog {
  info(object: object, message: string): void
  warn(object: object, message: string): void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * LEDGER_RETENTION: every PRUNE_INTERVAL_MS (or half the retention, when shorter), the ledger's rows
 * older than the retention are removed, oldest first, PRUNE_BATCH_ROWS per transaction with a pause
 * between them (PRUNE_PAUSE_FACTOR), off the request path. Readers whose cursor falls before the removed rows
 * are told so (410 cursor_expired; a webhook subscription is disabled) rather than given a gap.
 */
export class LedgerPruner {
  private readonly passes: PeriodicPass<number>

  constructor(
    private readonly ledger: LedgerRetention,
    private readonly retentionMs: number,
    private readonly log: PrunerLog,
  ) {
    this.passes = new PeriodicPass(this.intervalMs, () => this.run())
  }

  get intervalMs(): number {
    return Math.max(100, Math.min(PRUNE_INTERVAL_MS, Math.floor(this.retentionMs / 2)))
  }

  start(): void {
    this.passes.start()
  }

  /** One pass (unless one is running): removes what has passed the retention; resolves with the rows removed. */
  prune(): Promise<number> {
    return this.passes.run()
  }

  /** Stops the passes; resolves once the one in progress has ended (after its current batch). */
  stop(): Promise<void> {
    return this.passes.stop()
  }

  private async run(): Promise<number> {
    let removed = 0
    try {
      while (!this.passes.stopped) {
        const before = new Date(Date.now() - this.retentionMs).toISOString()
        const started = performance.now()
        const n = await this.ledger.pruneLedger(before, PRUNE_BATCH_ROWS)
        removed += n
        if (n < PRUNE_BATCH_ROWS) break
        await sleep(Math.max(PRUNE_PAUSE_MIN_MS, (performance.now() - started) * PRUNE_PAUSE_FACTOR))
      }
    } catch (error) {
      // A lasting fault of the database is said once, by its own lines (storage/faults.ts).
      if (!saidOnce(error)) this.log.warn({ err: error }, 'removing old ledger rows failed; the next pass tries again')
    }
    if (removed > 0) this.log.info({ removed }, 'ledger rows past LEDGER_RETENTION removed')
    return removed
  }
}
