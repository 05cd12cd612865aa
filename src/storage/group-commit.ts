import type { Span } from '@opentelemetry/api'
import { batchSpan, failed } from '../spans.js'
import type { Storage } from './ports.js'

interface Pending<In, Out> {
  input: In
  /** Date.now() past which this write must not be started, and must have been answered. */
  deadline: number
  resolve: (value: Out) => void
  reject: (error: unknown) => void
  /** With tracing, a traced caller's span (its stock write), which the batch's span goes under or links to. */
  traced?: Span | undefined
}

export interface GroupCommitOptions<In = unknown> {
  /** How many batches may commit at once (on separate connections). */
  maxInFlight?: number
  /** The longest a write may wait, from submission to its answer; past it, `expired()` is thrown. */
  maxWaitMs?: number
  /** The error for a write whose wait ran out before its batch started: it was never applied. */
  expired?: () => Error
  /** Told, for the metrics, each batch's size and how long its commit took (whether it committed or failed). */
  onBatch?: ((writes: number, seconds: number) => void) | undefined
  /**
   * What a write touches (for stock writes, its pet). Batches in flight together then touch nothing
   * in common: a write waits for the batch holding what it touches, and joins the next one. Without
   * it, concurrent batches over one hot pet conflicted and were planned again under the lock.
   */
  touches?: ((input: In) => unknown) | undefined
  /**
   * How much work a write is (`weight`, 1 when absent) and the most a batch takes (`maxWeight`): the
   * writes after it wait for the next batch, in order. A backend that commits on the event loop
   * (SQLite) bounds each commit so, and the loop gets a turn between them: 64 batches of 1,000 changes
   * in one transaction held it for hundreds of milliseconds. A write heavier than the bound goes alone.
   */
  weight?: ((input: In) => number) | undefined
  maxWeight?: number | undefined
  /**
   * The backend, for the spans of traced callers' writes (tracing on): each caller's span gets the
   * event `batch started` when its wait for a batch ends, and each batch's transaction is one database
   * span (db.operation.name BATCH, with db.operation.batch.size) under the first traced caller's span,
   * linked to every other's: one span per commit, not one per write, as the commit is shared.
   */
  dialect?: Storage['dialect'] | undefined
}

/**
 * Group commit: writes submitted while no batch is being committed are applied together by one call
 * of `commitBatch` (one transaction, one fsync), and each caller is answered only after it.
 * One fsync per request would cap durable writes at the disk's sync rate; this shares it.
 *
 * A batch starts on setImmediate, after the I/O callbacks of the current event-loop turn, so every
 * request parsed in that turn joins it. With asynchronous batches, up to `maxInFlight` commit at once
 * (on separate connections); while all are busy, new writes gather for the next one. Batches in
 * flight together hold only writes that were concurrent, so any order of their commits is a valid one.
 *
 * With `touches`, batches in flight together touch disjoint things: a write whose pet a batch in
 * flight holds stays pending (with every later write touching the same) until that batch is answered,
 * then joins the next batch, which gathers all of them. One hot pet then commits one large batch at a
 * time instead of many small ones that conflict.
 *
 * Every write has a deadline, `maxWaitMs` after its submission. A batch gets its earliest member's
 * deadline, which `commitBatch` must honour (give up, unapplied, past it); a write still waiting for a
 * batch at its deadline is refused without being applied. So no write waits longer than `maxWaitMs`
 * plus the commit in progress, which is what lets shutdown bound its drain.
 */
export class GroupCommit<In, Out> {
  private pending: Pending<In, Out>[] = []
  private scheduled = false
  private readonly inFlight = new Set<Promise<void>>()
  private readonly maxInFlight: number
  private readonly maxWaitMs: number
  private readonly expired: () => Error
  private readonly onBatch: ((writes: number, seconds: number) => void) | undefined
  private readonly touches: ((input: In) => unknown) | undefined
  private readonly weight: ((input: In) => number) | undefined
  private readonly maxWeight: number
  private readonly dialect: Storage['dialect'] | undefined
  /** What the batches in flight touch (with `touches`), and how many of them touch it. */
  private readonly held = new Map<unknown, number>()

  constructor(
    private readonly commitBatch: (batch: In[], deadline: number) => Out[] | Promise<Out[]>,
    options: GroupCommitOptions<In> = {},
  ) {
    this.maxInFlight = options.maxInFlight ?? 1
    this.maxWaitMs = options.maxWaitMs ?? Number.POSITIVE_INFINITY
    this.expired = options.expired ?? (() => new Error('The write waited too long and was not applied'))
    this.onBatch = options.onBatch
    this.touches = options.touches
    this.weight = options.weight
    this.maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY
    this.dialect = options.dialect
  }

  /** `traced`: with tracing, the caller's span for this write (its batch's span goes under or links to it). */
  submit(input: In, traced?: Span): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, deadline: Date.now() + this.maxWaitMs, resolve, reject, traced })
      this.schedule()
    })
  }

  /** Nothing waits for a batch and none is being committed: a write submitted now would commit alone. */
  get idle(): boolean {
    return this.pending.length === 0 && !this.scheduled && this.inFlight.size === 0
  }

  /** Resolves once every write submitted so far has been committed or has failed. */
  async drain(): Promise<void> {
    while (this.scheduled || this.inFlight.size > 0) {
      await (this.inFlight.size > 0 ? Promise.all(this.inFlight) : new Promise((resolve) => setImmediate(resolve)))
    }
  }

  private schedule() {
    if (this.scheduled || this.inFlight.size >= this.maxInFlight || this.pending.length === 0) return
    // Everything pending waits for a batch in flight: the end of that batch schedules the next.
    if (this.touches && this.held.size > 0 && this.pending.every((p) => this.held.has(this.touches!(p.input)))) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      const batch = this.flush().finally(() => {
        this.inFlight.delete(batch)
        this.schedule()
      })
      this.inFlight.add(batch)
    })
  }

  private async flush() {
    const now = Date.now()
    const batch: Pending<In, Out>[] = []
    const waiting: Pending<In, Out>[] = []
    let weight = 0
    let full = false
    for (const p of this.pending) {
      if (p.deadline <= now) p.reject(this.expired())
      else if (full || (this.touches && this.held.has(this.touches(p.input)))) waiting.push(p)
      else {
        const w = this.weight ? this.weight(p.input) : 1
        if (batch.length > 0 && weight + w > this.maxWeight) {
          full = true
          waiting.push(p)
        } else {
          batch.push(p)
          weight += w
        }
      }
    }
    this.pending = waiting
    if (batch.length === 0) return
    const touched = this.touches ? new Set(batch.map((p) => this.touches!(p.input))) : undefined
    for (const key of touched ?? []) this.held.set(key, (this.held.get(key) ?? 0) + 1)
    const started = this.onBatch ? performance.now() : 0
    const span = this.dialect && batchSpan(this.dialect, batch)
    try {
      const deadline = Math.min(...batch.map((p) => p.deadline))
      const results = await this.commitBatch(
        batch.map((p) => p.input),
        deadline,
      )
      span?.end()
      for (const [i, p] of batch.entries()) p.resolve(results[i] as Out)
    } catch (error) {
      failed(span, error)
      span?.end()
      for (const p of batch) p.reject(error)
    } finally {
      for (const key of touched ?? []) {
        const count = this.held.get(key)! - 1
        if (count === 0) this.held.delete(key)
        else this.held.set(key, count)
      }
      this.onBatch?.(batch.length, (performance.now() - started) / 1000)
    }
  }
}
