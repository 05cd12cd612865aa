import type { DeprecatedCalls } from '../domain.js'
import type { DeprecatedCallStore } from '../storage/ports.js'

interface Count {
  calls: number
  firstCall: number
  lastCall: number
}

export interface DeprecatedCallsOptions {
  /** How often the counts are written (DEPRECATED_CALLS_FLUSH_MS). */
  flushMs: number
  /** Told of a flush that failed; its counts are kept for the next one. */
  onFlushError?: (error: unknown, keys: number) => void
}

/**
 * Counts calls of the deprecated pet lookup per API key (calls, first and last call) in memory, and
 * adds them to the database every `flushMs` and at close: a call costs no database write on the
 * request path. The write is an additive upsert (Storage.addDeprecatedCalls), so every instance's
 * flushes add up. Counts whose flush failed are merged back and go with the next one; only those of a
 * process that dies without closing are lost.
 */
export class DeprecatedCallCounter {
  private pending = new Map<number, Count>()
  private flushing: Promise<void> = Promise.resolve()
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly storage: Pick<DeprecatedCallStore, 'addDeprecatedCalls'>,
    private readonly options: DeprecatedCallsOptions,
  ) {
    this.timer = setInterval(() => void this.flush(), options.flushMs)
    // A pending flush never keeps the process alive: close() writes the last counts.
    this.timer.unref()
  }

  record(keyId: number, at = Date.now()): void {
    this.merge(keyId, { calls: 1, firstCall: at, lastCall: at })
  }

  /** Writes the counts so far; resolves once written, or once a failure is reported (never rejects). */
  flush(): Promise<void> {
    // One flush at a time: a second waits for the first, then writes what came meanwhile.
    this.flushing = this.flushing.then(() => this.write())
    return this.flushing
  }

  /** Stops the timer and writes the last counts: call it before the storage closes. */
  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.flush()
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return
    const counts = this.pending
    this.pending = new Map()
    // In key order: instances flushing at once then lock the same rows in the same order.
    const calls: DeprecatedCalls[] = [...counts]
      .sort(([a], [b]) => a - b)
      .map(([keyId, c]) => ({
        keyId,
        calls: c.calls,
        firstCall: new Date(c.firstCall).toISOString(),
        lastCall: new Date(c.lastCall).toISOString(),
      }))
    try {
      await this.storage.addDeprecatedCalls(calls)
    } catch (error) {
      for (const [keyId, c] of counts) this.merge(keyId, c)
      this.options.onFlushError?.(error, counts.size)
    }
  }

  private merge(keyId: number, c: Count) {
    const count = this.pending.get(keyId)
    if (!count) return void this.pending.set(keyId, c)
    count.calls += c.calls
    count.firstCall = Math.min(count.firstCall, c.firstCall)
    count.lastCall = Math.max(count.lastCall, c.lastCall)
  }
}
