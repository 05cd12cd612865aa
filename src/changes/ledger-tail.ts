import type { InventoryChange } from '../domain.js'
import { changeJson } from '../inventory/inventory.json.js'
import type { LedgerReads, LedgerSignals } from '../storage/ports.js'
import { saidOnce } from '../storage/faults.js'

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
/**
 * Event bytes of the latest batches the tail keeps for streams that fell behind: such a stream
 * catches up from these shared batches (no read, no encoding of its own) while its position is in
 * them, and reads the ledger only when it is further behind. Under a burst a client that loses the
 * CPU for a moment is behind; 100 streams each reading the ledger back took more CPU than the
 * PATCHes. About 1.5 s of events at 14,000 changes a second; held as Buffers and typed arrays (20
 * bytes a row besides the event), dropped when no stream follows or is among them.
 */
export const TAIL_RECENT_BYTES = 4 * 1024 * 1024

/** One row as a Server-Sent Event: its seq as the id, the row as the feed writes it as the data. */
export function changeEvent(change: InventoryChange): string {
  return `id: ${change.seq}\nevent: change\ndata: ${changeJson(change)}\n\n`
}

/**
 * The rows (from, to] as the tail read them, their events encoded once for every follower: one
 * Buffer with each row's seq, pet and offset beside it in typed arrays, so the batches the tail
 * keeps cost the garbage collector nothing to walk. A follower that wants them all (no petId, and
 * nothing of the range seen) gets the one shared Buffer; others get a slice or the matching events.
 */
export class TailBatch {
  private readonly bytes: Buffer
  /** Row i's event is bytes[offsets[i], offsets[i + 1]). */
  private readonly offsets: Uint32Array
  readonly seqs: BigInt64Array
  private readonly petIds: BigInt64Array
  constructor(
    readonly from: bigint,
    readonly to: bigint,
    rows: readonly InventoryChange[],
  ) {
    const events = rows.map(changeEvent)
    this.offsets = new Uint32Array(rows.length + 1)
    for (let i = 0; i < events.length; i++) this.offsets[i + 1] = this.offsets[i]! + Buffer.byteLength(events[i]!)
    this.bytes = Buffer.allocUnsafeSlow(this.offsets[rows.length]!)
    for (let i = 0; i < events.length; i++) this.bytes.write(events[i]!, this.offsets[i]!)
    this.seqs = BigInt64Array.from(rows, (row) => row.seq)
    this.petIds = BigInt64Array.from(rows, (row) => row.petId)
  }

  /** The events' bytes (what the recent batches are bounded by). */
  get size(): number {
    return this.bytes.length
  }

  /** The events of the rows after `after` (of one pet, when given), or undefined when there are none. */
  eventsAfter(after: bigint, petId?: bigint): Buffer | undefined {
    let first = 0
    while (first < this.seqs.length && this.seqs[first]! <= after) first++
    if (first === this.seqs.length) return undefined
    if (petId === undefined) return first === 0 ? this.bytes : this.bytes.subarray(this.offsets[first])
    const parts: Buffer[] = []
    for (let i = first; i < this.seqs.length; i++)
      if (this.petIds[i] === petId) parts.push(this.bytes.subarray(this.offsets[i], this.offsets[i + 1]))
    // A copy, not a view: a slow client's few events must not keep whole batches alive.
    return parts.length === 0 ? undefined : Buffer.concat(parts)
  }
}

export interface TailFollower {
  /** The rows the tail read past its previous position; called in seq order, never concurrently. */
  onBatch(batch: TailBatch): void
}

/** A follower that stopped following to let its client catch up, and where it is. */
export interface TailLaggard extends TailFollower {
  /** The last seq it has (or filtered out). */
  readonly seen: bigint
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
  /** Followers that fell behind (fallBehind): the tail reads on for those still among its recent batches. */
  private readonly laggards = new Set<TailLaggard>()
  /** The latest batches, contiguous ((from, to] of each is the previous one's to onwards), oldest first. */
  private recent: TailBatch[] = []
  private recentSize = 0
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
    this.forgetRecent()
  }

  /** Adds a follower: from now on it gets every batch past the current position. */
  follow(follower: TailFollower): void {
    this.laggards.delete(follower as TailLaggard)
    this.followers.add(follower)
  }

  /** A follower leaves (its stream ends). */
  unfollow(follower: TailFollower): void {
    this.followers.delete(follower)
    this.laggards.delete(follower as TailLaggard)
    if (this.followers.size === 0 && this.laggards.size === 0) this.forgetRecent()
  }

  /**
   * A follower stops taking batches to let its client catch up. While what it has seen is among the
   * recent batches, the tail goes on reading (and keeping) rows for it even when no one else follows,
   * so it catches up from them; once it is further behind, it reads the ledger itself and the tail
   * need not read on for it. So the tail reads at most about TAIL_RECENT_BYTES past a stalled client.
   */
  fallBehind(laggard: TailLaggard): void {
    this.followers.delete(laggard)
    this.laggards.add(laggard)
  }

  /**
   * The recent batches that hold every row after `after` up to the position (oldest first, the
   * first one holding `after + 1` or later), or undefined when rows after `after` are no longer
   * among them (then they are to be read from the ledger).
   */
  recentAfter(after: bigint): readonly TailBatch[] | undefined {
    const first = this.recent[0]
    if (first === undefined || after < first.from) return undefined
    let i = this.recent.length
    while (i > 0 && this.recent[i - 1]!.to > after) i--
    return this.recent.slice(i)
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
        if (!this.wanted()) {
          const end = await this.ledger.lastChangeSeq()
          // A follower that came meanwhile needs the rows up to the end, not a jump over them.
          if (this.wanted()) continue
          if (end > this.pos!) this.forgetRecent()
          this.advance(end)
          break
        }
        const from = this.pos!
        const rows = await this.ledger.listChanges({ after: from, limit: TAIL_READ_ROWS })
        if (rows.length === 0 || this.stopped) break
        const batch = new TailBatch(from, rows.at(-1)!.seq, rows)
        this.pos = batch.to
        this.remember(batch)
        for (const follower of this.followers) follower.onBatch(batch)
        this.advance(batch.to)
        if (rows.length < TAIL_READ_ROWS) break
      }
    } catch (error) {
      if (!saidOnce(error)) this.log?.warn({ err: error }, 'reading the ledger for live changes failed; retrying')
      clearTimeout(this.retry)
      this.retry = setTimeout(() => this.wake(), RETRY_MS)
      this.retry.unref()
    } finally {
      this.reading = false
      // Woken during the read: read again, after the interval.
      if (this.again) this.wake()
    }
  }

  /** Someone needs the rows themselves: a follower, or a laggard still among the recent batches. */
  private wanted(): boolean {
    if (this.followers.size > 0) return true
    const kept = this.recent[0]?.from ?? this.pos!
    for (const laggard of this.laggards) if (laggard.seen >= kept) return true
    return false
  }

  private remember(batch: TailBatch) {
    this.recent.push(batch)
    this.recentSize += batch.size
    while (this.recentSize > TAIL_RECENT_BYTES && this.recent.length > 1) this.recentSize -= this.recent.shift()!.size
  }

  private forgetRecent() {
    this.recent = []
    this.recentSize = 0
  }

  private advance(to: bigint) {
    if (to > this.pos!) this.pos = to
    for (const waiter of this.waiters) if (this.pos! > waiter.seq) waiter.resolve()
  }
}
