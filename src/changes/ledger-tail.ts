import type { InventoryChange } from '../domain.js'
import { changeJson } from '../inventory/inventory.json.js'
import type { LedgerReads, LedgerSignals } from '../storage/ports.js'

/** Ledger rows read per step while following: ~125 KB of events, so one step stalls nothing. */
export const TAIL_READ_ROWS = 500
/** After a failed read (the database away), the tail tries again this much later. */
const RETRY_MS = 1000
/**
 * Reads start at most this often: under a stream of commits, each read then covers many of them, so
 * every open stream gets one write per interval rather than one per commit (a socket write per stream
 * per commit took more CPU than the PATCHes themselves with 100 streams open). A change still reaches
 * the streams well within the second the API promises.
 */
export const TAIL_COALESCE_MS = 50

/** One row as a Server-Sent Event: its seq as the id, the row as the feed writes it as the data. */
export function changeEvent(change: InventoryChange): string {
  return `id: ${change.seq}\nevent: change\ndata: ${changeJson(change)}\n\n`
}

/**
 * The rows (from, to] as the tail read them, with their events written once for every follower:
 * a follower that wants them all (no petId, and nothing of the range seen) gets the one shared Buffer.
 */
export class TailBatch {
  private whole: Buffer | undefined
  private readonly events: string[]
  constructor(
    readonly from: bigint,
    readonly to: bigint,
    readonly rows: InventoryChange[],
  ) {
    this.events = rows.map(changeEvent)
  }

  /** The events of the rows after `after` (of one pet, when given), or undefined when there are none. */
  eventsAfter(after: bigint, petId?: bigint): Buffer | undefined {
    if (petId === undefined && after <= this.from) {
      this.whole ??= Buffer.from(this.events.join(''))
      return this.whole.length > 0 ? this.whole : undefined
    }
    let text = ''
    for (let i = 0; i < this.rows.length; i++) {
      const row = this.rows[i]!
      if (row.seq > after && (petId === undefined || row.petId === petId)) text += this.events[i]
    }
    return text === '' ? undefined : Buffer.from(text)
  }
}

export interface TailFollower {
  /** The rows the tail read past its previous position; called in seq order, never concurrently. */
  onBatch(batch: TailBatch): void
}

export interface TailLog {
  warn(object: object, message: string): void
}

/**
 * One process's view of the ledger's end, shared by every open stream and webhook delivery: it
 * wakes on the storage's signals (this process's commits, LISTEN/NOTIFY on PostgreSQL, data_version
 * on SQLite), reads the new rows once, in steps of TAIL_READ_ROWS, and hands each step to every
 * follower. `position` is the last seq handed out; rows become visible in seq order, so reading
 * after it never misses one. With no follower it only reads where the ledger ends.
 */
export class LedgerTail {
  private pos: bigint | undefined
  private starting: Promise<void> | undefined
  private unwatch: (() => void) | undefined
  private reading = false
  private again = false
  private retry: NodeJS.Timeout | undefined
  private pending: NodeJS.Timeout | undefined
  private lastReadAt = Number.NEGATIVE_INFINITY
  private stopped = false
  private readonly followers = new Set<TailFollower>()
  private readonly waiters = new Set<{ seq: bigint; resolve: () => void }>()

  constructor(
    private readonly ledger: LedgerReads & LedgerSignals,
    private readonly log?: TailLog,
  ) {}

  /** The last seq handed to the followers; start() first. */
  get position(): bigint {
    if (this.pos === undefined) throw new Error('LedgerTail: start() first')
    return this.pos
  }

  /** Reads where the ledger ends and starts watching; idempotent. */
  start(): Promise<void> {
    this.starting ??= (async () => {
      try {
        this.unwatch = this.ledger.watchLedger(() => this.wake())
        this.pos = await this.ledger.lastChangeSeq()
      } catch (error) {
        this.unwatch?.()
        this.starting = undefined
        throw error
      }
      this.wake()
    })()
    return this.starting
  }

  stop(): void {
    this.stopped = true
    this.unwatch?.()
    clearTimeout(this.retry)
    clearTimeout(this.pending)
    for (const waiter of this.waiters) waiter.resolve()
    this.waiters.clear()
  }

  /** Adds a follower: from now on it gets every batch past the current position. */
  follow(follower: TailFollower): void {
    this.followers.add(follower)
  }

  unfollow(follower: TailFollower): void {
    this.followers.delete(follower)
  }

  /** Resolves once the tail has passed `seq`, or it stops, or `signal` aborts. */
  beyond(seq: bigint, signal?: AbortSignal): Promise<void> {
    if (this.stopped || signal?.aborted || (this.pos !== undefined && this.pos > seq)) return Promise.resolve()
    return new Promise((resolve) => {
      const waiter = {
        seq,
        resolve: () => {
          this.waiters.delete(waiter)
          signal?.removeEventListener('abort', waiter.resolve)
          resolve()
        },
      }
      this.waiters.add(waiter)
      signal?.addEventListener('abort', waiter.resolve, { once: true })
    })
  }

  /** Something may have committed: read it (after the read in progress, when there is one). */
  wake(): void {
    if (this.stopped || this.pos === undefined) return
    if (this.reading) {
      this.again = true
      return
    }
    if (this.pending) return
    const wait = this.lastReadAt + TAIL_COALESCE_MS - performance.now()
    if (wait > 0) {
      this.pending = setTimeout(() => {
        this.pending = undefined
        this.wake()
      }, wait)
      return
    }
    this.reading = true
    this.lastReadAt = performance.now()
    void this.read()
  }

  private async read(): Promise<void> {
    this.again = false
    try {
      for (;;) {
        if (this.stopped) return
        if (this.followers.size === 0) {
          const end = await this.ledger.lastChangeSeq()
          // A follower that came meanwhile needs the rows up to the end, not a jump over them.
          if (this.followers.size > 0) continue
          this.advance(end)
          break
        }
        const from = this.pos!
        const rows = await this.ledger.listChanges({ after: from, limit: TAIL_READ_ROWS })
        if (rows.length === 0 || this.stopped) break
        const batch = new TailBatch(from, rows.at(-1)!.seq, rows)
        this.pos = batch.to
        for (const follower of this.followers) follower.onBatch(batch)
        this.advance(batch.to)
        if (rows.length < TAIL_READ_ROWS) break
      }
    } catch (error) {
      this.log?.warn({ err: error }, 'reading the ledger for live changes failed; retrying')
      clearTimeout(this.retry)
      this.retry = setTimeout(() => this.wake(), RETRY_MS)
      this.retry.unref()
    } finally {
      this.reading = false
      // Woken during the read: read again, after the interval.
      if (this.again) this.wake()
    }
  }

  private advance(to: bigint) {
    if (to > this.pos!) this.pos = to
    for (const waiter of this.waiters) if (this.pos! > waiter.seq) waiter.resolve()
  }
}
