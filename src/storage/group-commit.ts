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
 * request parsed in that turn joins it. While an asynchronous batch is in flight, new writes gather
 * for the next one.
 */
export class GroupCommit<In, Out> {
  private pending: Pending<In, Out>[] = []
  private scheduled = false
  private inFlight: Promise<void> | undefined

  constructor(private readonly commitBatch: (batch: In[]) => Out[] | Promise<Out[]>) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject })
      this.schedule()
    })
  }

  /** Resolves once every write submitted so far has been committed or has failed. */
  async drain(): Promise<void> {
    while (this.scheduled || this.inFlight) {
      await (this.inFlight ?? new Promise((resolve) => setImmediate(resolve)))
    }
  }

  private schedule() {
    if (this.scheduled || this.inFlight || this.pending.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.inFlight = this.flush().finally(() => {
        this.inFlight = undefined
        this.schedule()
      })
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
