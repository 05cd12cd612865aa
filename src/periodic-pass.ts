/**
 * Background work done in passes: every `intervalMs` (and once at start), one pass at a time (a tick
 * that finds one running joins it), until stopped; `stop` resolves once the pass in progress has
 * ended. A pass checks `stopped` between its bounded steps. The ledger's pruner and the holds'
 * expiry run so.
 */
export class PeriodicPass<T> {
  private timer: NodeJS.Timeout | undefined
  private pass: Promise<T> | undefined
  private halted = false

  constructor(
    private readonly intervalMs: number,
    private readonly body: () => Promise<T>,
  ) {}

  get stopped(): boolean {
    return this.halted
  }

  start(): void {
    this.timer = setInterval(() => void this.run(), this.intervalMs).unref()
    void this.run()
  }

  /** One pass, unless one is running (then that one). */
  run(): Promise<T> {
    this.pass ??= this.body().finally(() => {
      this.pass = undefined
    })
    return this.pass
  }

  async stop(): Promise<void> {
    this.halted = true
    clearInterval(this.timer)
    await this.pass
  }
}
