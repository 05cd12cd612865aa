/**
 * Where this process is in its life, as the HTTP layer sees it. On SIGTERM the service drains first
 * (server.ts): readiness fails, so load balancers stop sending new requests, every response carries
 * `Connection: close`, so clients move their keep-alive connections elsewhere, and open change
 * streams end, so their clients reconnect elsewhere and resume; meanwhile every request is still
 * served in full. Only then does the listener close.
 */
export class Lifecycle {
  #draining = false
  private readonly drainListeners = new Set<() => void>()
  /** performance.now() when the listener opened; undefined before. */
  listeningSince: number | undefined

  get draining(): boolean {
    return this.#draining
  }

  /** Starts the drain (once): what listens to it (onDrain) is told now. */
  drain(): void {
    if (this.#draining) return
    this.#draining = true
    for (const listener of this.drainListeners) listener()
  }

  /** Calls `listener` when the drain starts; returns the function that stops listening. */
  onDrain(listener: () => void): () => void {
    this.drainListeners.add(listener)
    return () => this.drainListeners.delete(listener)
  }
}
