// Minimal typings for the parts of autocannon v8 the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface RequestParams {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string | Buffer
    }
    type SetupRequest = (req: RequestParams, context: Record<string, unknown>) => RequestParams | null
    interface Request extends RequestParams {
      /** A function, or (in workers mode) the absolute path of a CommonJS module exporting one. */
      setupRequest?: SetupRequest | string
    }
    interface Options {
      url: string
      connections?: number
      duration?: number
      workers?: number
      timeout?: number
      method?: string
      headers?: Record<string, string>
      body?: string
      requests?: Request[]
      initialContext?: Record<string, unknown>
      title?: string
    }
    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p99: number
    }
    interface Result {
      title?: string
      duration: number
      errors: number
      timeouts: number
      mismatches: number
      non2xx: number
      resets: number
      '2xx': number
      statusCodeStats: Record<string, { count: number }>
      latency: Histogram
      requests: Histogram & { sent: number }
      throughput: Histogram
    }
    /** With a callback, autocannon returns an event emitter ('done', 'error'); stop() ends the run early. */
    interface Instance extends EventEmitter {
      stop(): void
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance

  export default autocannon
}
