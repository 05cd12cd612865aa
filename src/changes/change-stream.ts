import { Readable } from 'node:stream'
import { assertCursorKept, type CursorChecks } from '../inventory/inventory.service.js'
import { changeEvent, type LedgerTail, type TailBatch, type TailFollower, TAIL_READ_ROWS } from './ledger-tail.js'

/** Bytes a stream buffers before it stops taking live rows and reads at its client's pace instead. */
export const STREAM_BUFFER_BYTES = 64 * 1024

/** A comment line: no event for the client, bytes for every proxy on the way. */
export const HEARTBEAT = Buffer.from(': heartbeat\n\n')

/**
 * One client's stream of ledger rows as Server-Sent Events, from after `cursor`. It follows the tail
 * (live: the tail's batches are pushed as they come) while its client keeps up; when its buffer
 * passes STREAM_BUFFER_BYTES it stops following, and once its client has read the buffer it takes the
 * rows it missed from the tail's recent batches (shared with every other stream), or, when it is
 * further behind than they reach, from the ledger, a page at a time, until it has caught up and
 * follows again.
 * So a client gets every row after its cursor, in seq order, once, whatever its pace, and never holds
 * more than about the buffer and one batch in this process.
 */
export class ChangeStream extends Readable implements TailFollower {
  /** Every row up to here was pushed (or filtered out). */
  private cursor: bigint
  private following = false
  /** finish() was called: nothing more may be pushed. */
  private closing = false
  private catchingUp = false
  /** performance.now() of the client's last read (the consumer asking for more). */
  private lastRead = performance.now()
  /** When bytes were first seen waiting with no read since; undefined while the client keeps up. */
  private waitingSince: number | undefined
  /**
   * Bytes the connection has handed to the kernel so far (set by the route): when they move, the
   * client is reading, however slowly, even while the pipe waits for the socket's drain.
   */
  sent: () => number = () => 0
  /** Bytes written to the connection that the kernel has not taken yet (set by the route). */
  unsent: () => number = () => 0
  private lastSent = 0

  constructor(
    private readonly tail: LedgerTail,
    private readonly ledger: CursorChecks,
    after: bigint,
    private readonly petId: bigint | undefined,
  ) {
    super({ highWaterMark: STREAM_BUFFER_BYTES })
    this.cursor = after
  }

  /** Every row up to here was pushed or filtered out (the tail keeps reading for it while this is among its recent batches). */
  get seen(): bigint {
    return this.cursor
  }

  override _read(): void {
    this.lastRead = performance.now()
    if (!this.following) void this.catchUp()
  }

  onBatch(batch: TailBatch): void {
    if (this.done) return
    const events = batch.eventsAfter(this.cursor, this.petId)
    if (batch.to > this.cursor) this.cursor = batch.to
    if (events && !this.push(events)) {
      this.following = false
      this.tail.fallBehind(this)
    }
  }

  /**
   * A heartbeat: a comment line, unless bytes are waiting anyway. Returns false when bytes have
   * waited longer than `stalledMs` while none reached the client: its client stopped reading.
   */
  heartbeat(stalledMs: number): boolean {
    if (this.destroyed) return true
    const now = performance.now()
    const sent = this.sent()
    const moved = sent !== this.lastSent
    this.lastSent = sent
    if (this.readableLength === 0 && this.unsent() === 0) {
      this.waitingSince = undefined
      if (!this.closing) this.push(HEARTBEAT)
      return true
    }
    if (this.waitingSince === undefined || moved || this.lastRead > this.waitingSince) this.waitingSince = now
    return now - this.waitingSince <= stalledMs
  }

  /** Ends the stream after what it holds (the drain: the client reconnects elsewhere and resumes). */
  finish(): void {
    this.unfollow()
    if (this.done) return
    this.closing = true
    this.push(null)
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.unfollow()
    callback(error)
  }

  /** Destroyed, or finishing: nothing more goes out. */
  private get done(): boolean {
    return this.destroyed || this.closing
  }

  private unfollow() {
    this.following = false
    this.tail.unfollow(this)
  }

  /**
   * The first read, before the response is answered: a database that fails now gets the client an
   * error status (503, 500) rather than a stream that ends at once. Then the stream goes on by itself
   * (the response's first _read catches up, unless it follows already).
   */
  async start(): Promise<void> {
    this.catchingUp = true
    try {
      if ((await this.step()) && this.follow()) return
    } finally {
      this.catchingUp = false
    }
    // A _read during the step found catchingUp set and pushed nothing; Readable asks again only after a push.
    if (!this.following && !this.done) void this.catchUp()
  }

  /** Reads from the ledger until the cursor reaches the tail's position, then follows the tail. */
  private async catchUp(): Promise<void> {
    if (this.catchingUp) return
    this.catchingUp = true
    try {
      for (;;) {
        if (this.done) return
        if ((await this.step()) && this.follow()) return
        if (this.readableLength >= STREAM_BUFFER_BYTES) return // _read resumes it once the client has read
      }
    } catch (error) {
      this.destroy(error as Error)
    } finally {
      this.catchingUp = false
    }
  }

  /**
   * Rows after the cursor, up to the tail's position, pushed: the tail's recent batches while the
   * buffer takes them, else one page read from the ledger; true when the cursor has reached the
   * position (synchronously before returning, so the caller may follow at once).
   */
  private async step(): Promise<boolean> {
    const end = this.tail.position
    if (this.cursor >= end) return true
    const recent = this.tail.recentAfter(this.cursor)
    if (recent !== undefined) {
      for (const batch of recent) {
        const events = batch.eventsAfter(this.cursor, this.petId)
        this.cursor = batch.to
        if (events && !this.push(events)) break
      }
      return this.cursor >= this.tail.position
    }
    // Up to the tail's position: later rows come from the tail. With petId, read by the ledger's index by pet.
    const rows = await this.ledger.listChanges({ after: this.cursor, through: end, limit: TAIL_READ_ROWS, petId: this.petId })
    // Rows after the cursor removed by retention: the stream fails (410 at its start) rather than skip them.
    await assertCursorKept(this.ledger, this.cursor)
    if (this.done) return false
    this.cursor = rows.length === TAIL_READ_ROWS ? rows.at(-1)!.seq : end
    if (rows.length > 0) this.push(rows.map(changeEvent).join(''))
    return false
  }

  /**
   * Follows the tail if the cursor is at its position (the tail hands every later batch over); false
   * when the tail moved on meanwhile (a batch came between step() and here), so reading goes on.
   */
  private follow(): boolean {
    if (this.done) return true
    if (this.cursor < this.tail.position) return false
    this.following = true
    this.tail.follow(this)
    return true
  }
}
