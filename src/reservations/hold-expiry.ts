import type { Actor } from '../domain.js'
import { PeriodicPass } from '../periodic-pass.js'
import { saidOnce } from '../storage/faults.js'
import type { ReservationReads, StockWrites } from '../storage/ports.js'

/** How often an instance looks for due holds: a hold's units are back within this, plus a commit, of its expiresAt. */
export const HOLD_SWEEP_INTERVAL_MS = 500
/**
 * Holds one write expires: 100 holds of 1 line each are 100 ledger rows, a commit of a millisecond
 * or two, and at most 10,000 rows (100 lines each). Between writes the event loop gets a turn, so
 * requests interleave with a backlog of 100,000 holds.
 */
export const HOLD_SWEEP_BATCH = 100
/**
 * Due holds one read finds, expired HOLD_SWEEP_BATCH at a time before the next read. One read per
 * write cost PostgreSQL half the expiry of 100,000 holds due at once: with statistics older than the
 * burst, `ORDER BY expires_at LIMIT 100` was planned as a scan of every due hold and a sort (20 to 70
 * ms a read, 12 of 26 s; bench/README.md, "Holds: where the time goes"). 10,000 ids are 80 KB.
 */
export const HOLD_SWEEP_READ = 10_000

/** How long a hold whose units could not come back is left out before it is tried again. */
const STUCK_RETRY_MS = 60_000

/** The expiry's writes are the service's own: no key, no request. */
const SWEEP_ACTOR: Actor = { keyId: null, requestId: null }

export interface HoldExpiryLog {
  info(object: object, message: string): void
  warn(object: object, message: string): void
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/**
 * Gives the units of due holds back by itself, on every instance: every HOLD_SWEEP_INTERVAL_MS it
 * reads up to HOLD_SWEEP_READ due holds from the database (the index on active holds' expiry) and
 * expires them HOLD_SWEEP_BATCH at a time through the stock writes, whose planner expires only a hold that is
 * still active and due when its transaction runs: two instances racing, or a pass after a restart,
 * expire each hold exactly once. Nothing is kept in memory between passes, so a restart, a kill -9
 * or a rolling upgrade forgets nothing: the first pass of a start expires what fell due meanwhile.
 */
export class HoldExpiry {
  private readonly passes = new PeriodicPass(HOLD_SWEEP_INTERVAL_MS, () => this.run())
  private failing = false
  /**
   * Holds whose units could not come back (an entry would pass the bound): left out of the passes
   * for STUCK_RETRY_MS (so they cannot hold the others back), then tried again; said once each.
   */
  private readonly stuck = new Set<bigint>()
  private readonly said = new Set<bigint>()
  private stuckSince = 0

  constructor(
    private readonly storage: ReservationReads & StockWrites,
    private readonly log: HoldExpiryLog,
  ) {}

  start(): void {
    this.passes.start()
  }

  /** One pass (unless one is running): expires every hold due now; resolves with how many it expired. */
  sweep(): Promise<number> {
    return this.passes.run()
  }

  /** Stops the passes; resolves once the one in progress has ended (after its current write). */
  stop(): Promise<void> {
    return this.passes.stop()
  }

  private async run(): Promise<number> {
    let expired = 0
    if (this.stuck.size > 0 && Date.now() - this.stuckSince > STUCK_RETRY_MS) this.stuck.clear()
    try {
      while (!this.passes.stopped) {
        const read = await this.storage.dueReservations(new Date().toISOString(), HOLD_SWEEP_READ)
        const all = read.filter((id) => !this.stuck.has(id))
        let expiredNow = 0
        for (let at = 0; at < all.length && !this.passes.stopped; at += HOLD_SWEEP_BATCH) {
          if (at > 0) await nextTurn()
          expiredNow += await this.expire(all.slice(at, at + HOLD_SWEEP_BATCH))
        }
        expired += expiredNow
        // A full read whose holds all stayed (another instance got them first, or stuck): the next pass reads again.
        if (read.length < HOLD_SWEEP_READ || expiredNow === 0) break
        await nextTurn()
      }
      if (this.failing) this.log.info({}, 'expiring due holds works again')
      this.failing = false
    } catch (error) {
      // A lasting fault of the database is said once, by its own lines (storage/faults.ts); any other once until a pass succeeds.
      if (!saidOnce(error) && !this.failing) this.log.warn({ err: error }, 'expiring due holds failed; the next pass tries again')
      this.failing = true
    }
    if (expired > 0) this.log.info({ expired }, 'due holds expired: their units are back in stock')
    return expired
  }

  /** Expires `due` in one write; says once each hold whose units could not come back. */
  private async expire(due: bigint[]): Promise<number> {
    const result = await this.storage.writeStock({ kind: 'expire', reservationIds: due, actor: SWEEP_ACTOR })
    for (const id of result.overflowed) {
      if (this.stuck.size === 0) this.stuckSince = Date.now()
      this.stuck.add(id)
      if (this.said.has(id)) continue
      if (this.said.size >= 10_000) this.said.clear()
      this.said.add(id)
      this.log.warn(
        { reservationId: String(id) },
        "a due hold cannot give its units back: an entry would pass 2147483647; it stays active until that entry's quantity is lowered",
      )
    }
    return result.expired.length
  }
}
