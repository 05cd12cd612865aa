interface Pending<In, Out> {
  input: In
  resolve: (value: Out) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: writes submitted during one turn of the event loop are applied by a single
 * call of `commitBatch` (one transaction, one fsync), and each caller is answered only after it.
 * One fsync per request would cap durable writes at the disk's sync rate; this shares it.
 */
export class GroupCommit<In, Out> {
  private pending: Pending<In, Out>[] = []
  private scheduled = false
  private idle: Promise<void> = Promise.resolve()
  private markIdle: () => void = () => {}

  constructor(private readonly commitBatch: (batch: In[]) => Out[]) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        this.idle = new Promise((done) => (this.markIdle = done))
        // setImmediate runs after the I/O callbacks of this loop turn: every request parsed in it joins the batch.
        setImmediate(() => this.flush())
      }
    })
  }

  /** Resolves once every submitted write has been committed or failed. */
  drain(): Promise<void> {
    return this.idle
  }

  private flush() {
    const batch = this.pending
    this.pending = []
    this.scheduled = false
    try {
      const results = this.commitBatch(batch.map((p) => p.input))
      batch.forEach((p, i) => p.resolve(results[i] as Out))
    } catch (error) {
      for (const p of batch) p.reject(error)
    }
    this.markIdle()
  }
}
