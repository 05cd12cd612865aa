import { Counter, Gauge, Histogram, collectDefaultMetrics, exponentialBuckets, register } from 'prom-client'
import type { DatabaseFault } from '../errors.js'
import { FAULTS } from '../storage/faults.js'
import type { ConnectionUse, Storage, StorageObserver } from '../storage/ports.js'

/** What a scrape answers: the text and its content type. */
export interface Scrape {
  contentType: string
  collect: () => Promise<string>
}

/**
 * The one registry: prom-client's global one, which a `--workers` primary collects from every worker
 * (cluster-metrics.ts). Every metric of the service is defined in this file, so a new one (a limiter's,
 * a cache's) goes here too.
 */
export const registry = register

/** Seconds, from half a millisecond (a cached GET) to 10 s (twice DB_TIMEOUT_MS's default). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const POOL_STATES = ['total', 'idle', 'waiting'] as const satisfies readonly (keyof ConnectionUse)[]

const LASTING_FAULTS = (Object.keys(FAULTS) as DatabaseFault[]).filter((fault) => FAULTS[fault].lasting)

/**
 * This process's metrics. Creating them registers them, and starts prom-client's default process
 * metrics (CPU, memory, handles, GC, event-loop delay): only when METRICS_PORT is set, so that
 * without it the service pays for none of this.
 */
export class Metrics {
  /** Read by the gauges when scraped; set once the app and the storage exist. */
  private inFlightNow: () => number = () => 0
  private openStreamsNow: () => number = () => 0
  private storage: Storage | undefined

  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template ("unmatched" when no route matched) and status',
    labelNames: ['method', 'route', 'status_code'] as const,
  })

  private readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request routed to its response sent, by method, route template and status (requests refused before routing are counted, not timed)',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
  })

  private readonly batchSize = new Histogram({
    name: 'petstore_commit_batch_size',
    help: 'Writes per shared commit (group commit: stock writes, and on SQLite the webhook cursors that ride them), by backend',
    labelNames: ['backend'] as const,
    buckets: exponentialBuckets(1, 2, 11),
  })

  private readonly commitDuration = new Histogram({
    name: 'petstore_commit_duration_seconds',
    help: 'Time a shared commit took, committed or failed, by backend',
    labelNames: ['backend'] as const,
    buckets: LATENCY_BUCKETS,
  })

  private readonly queryDuration = new Histogram({
    name: 'petstore_db_query_duration_seconds',
    help: 'Time a PostgreSQL statement took, answered or failed (the streamed list excepted)',
    buckets: LATENCY_BUCKETS,
  })

  private readonly stockReplans = new Counter({
    name: 'petstore_stock_replans_total',
    help: 'PostgreSQL stock batches (orders, If-Match) planned again under the lock because another writer changed what they read',
  })

  private readonly rateLimited = new Counter({
    name: 'petstore_rate_limited_total',
    help: 'Requests refused with 429, by the limit they exceeded (per-key, per-address)',
    labelNames: ['policy'] as const,
  })

  private readonly rateLimitStoreErrors = new Counter({
    name: 'petstore_rate_limit_store_errors_total',
    help: 'Rate-limit counts Redis could not take (refused, timed out); each was counted in this process instead',
  })

  private readonly traceSpans = new Counter({
    name: 'petstore_trace_spans_total',
    help: 'Spans the tracing SDK finished with, by outcome: exported, dropped (its bounded queue was full: the collector too slow or away), failed (the export failed)',
    labelNames: ['outcome'] as const,
  })

  private readonly webhookAttempts = new Counter({
    name: 'petstore_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome: delivered (2xx), failed (to be retried), disabled (the last retry failed)',
    labelNames: ['outcome'] as const,
  })

  constructor() {
    const metrics = this
    new Gauge({
      name: 'petstore_change_streams_open',
      help: 'Change streams (GET /v1/inventory/changes/stream) open now',
      collect() {
        this.set(metrics.openStreamsNow())
      },
    })
    new Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests being handled (the count MAX_IN_FLIGHT bounds; health probes excepted)',
      collect() {
        this.set(metrics.inFlightNow())
      },
    })
    new Gauge({
      name: 'petstore_db_pool_connections',
      help: 'PostgreSQL pool connections: total open, idle, and requests waiting for one',
      labelNames: ['state'] as const,
      collect() {
        const use = metrics.storage?.connections?.()
        if (use) for (const state of POOL_STATES) this.set({ state }, use[state])
      },
    })
    new Gauge({
      name: 'petstore_database_fault',
      help: 'The database fault that holds now (1; 0 for the others): disk_full, read_only, connection_limit, terminated, io_error; from a statement meeting it until a probe write succeeds',
      labelNames: ['cause'] as const,
      collect() {
        const current = metrics.storage?.faults.current
        for (const cause of LASTING_FAULTS) this.set({ cause }, cause === current ? 1 : 0)
      },
    })
    collectDefaultMetrics({ register: registry })
  }

  /** A scrape of this process's registry. */
  readonly scrape: Scrape = { contentType: registry.contentType, collect: () => registry.metrics() }

  /** What storage reports, recorded here. */
  readonly storageObserver: StorageObserver = {
    batchCommitted: (backend, writes, seconds) => {
      this.batchSize.observe({ backend }, writes)
      this.commitDuration.observe({ backend }, seconds)
    },
    statementRan: (seconds) => this.queryDuration.observe(seconds),
    stockReplanned: () => this.stockReplans.inc(),
  }

  /** Where the gauges read from: the admission's in-flight count, and the storage's connections. */
  watch(sources: { inFlight?: () => number; storage?: Storage; openStreams?: () => number }) {
    if (sources.inFlight) this.inFlightNow = sources.inFlight
    if (sources.openStreams) this.openStreamsNow = sources.openStreams
    if (sources.storage) this.storage = sources.storage
  }

  /** What the rate limits report, recorded here. */
  readonly rateLimitObserver = {
    refused: (policy: string) => this.rateLimited.inc({ policy }),
    storeFailed: () => this.rateLimitStoreErrors.inc(),
  }

  /** What tracing reports (with tracing on), recorded here. */
  readonly spanObserver = {
    processed: (count: number, outcome: 'exported' | 'dropped' | 'failed') => this.traceSpans.inc({ outcome }, count),
  }

  /** What webhook delivery reports, recorded here. */
  readonly deliveryObserver = {
    attempted: (outcome: 'delivered' | 'failed' | 'disabled') => this.webhookAttempts.inc({ outcome }),
  }

  /** One answered request; `seconds` is undefined when it never reached a route (no start to time from). */
  requestAnswered(method: string, route: string, statusCode: number, seconds?: number) {
    const labels = { method, route, status_code: statusCode }
    this.requests.inc(labels)
    if (seconds !== undefined) this.requestDuration.observe(labels, seconds)
  }
}

let created: Metrics | undefined

/** This process's metrics, created on first use (a second Metrics would clash in the one registry). */
export function processMetrics(): Metrics {
  created ??= new Metrics()
  return created
}
