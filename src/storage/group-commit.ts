interface Pending<In, Out> {
  input: In
  resolve: (value: Out) => void
  reject: (error: unknown) => void
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
 */
export class GroupCommit<In, Out> {
  private pending: Pending<In, Out>[] = []
  private scheduled = false
  private readonly inFlight = new Set<Promise<void>>()

  constructor(
    private readonly commitBatch: (batch: In[]) => Out[] | Promise<Out[]>,
    private readonly maxInFlight = 1,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject })
      this.schedule()
    })
  }

  /** Resolves once every write submitted so far has been committed or has failed. */
  async drain(): Promise<void> {
    while (this.scheduled || this.inFlight.size > 0) {
      await (this.inFlight.size > 0 ? Promise.all(this.inFlight) : new Promise((resolve) => setImmediate(resolve)))
    }
  }

  private schedule() {
    if (this.scheduled || this.inFlight.size >= this.maxInFlight || this.pending.length === 0) return
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
    const batch = this.pending
    this.pending = []
    try {
      const results = await this.commitBatch(batch.map((p) => p.input))
      batch.forEach((p, i) => p.resolve(results[i] as Out))
    } catch (error) {
      for (const p of batch) p.reject(error)
    }
  }
}
