import closeWithGrace from 'close-with-grace'
import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { Lifecycle } from './http/lifecycle.js'
import { type Config, tracingEnabled } from './config.js'
import { KeysService } from './keys/keys.service.js'
import type { Metrics } from './metrics/metrics.js'
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server.js'
import { SHUTDOWN_MESSAGE, runPrimary } from './cluster.js'
import { openStorage } from './storage/open-storage.js'
import type { Storage } from './storage/ports.js'

/**
 * `petstore serve`: one process, or with workers > 1 a node:cluster primary and N workers. The
 * database is migrated and the first key made once, before any worker starts.
 */
export async function serve(config: Config): Promise<void> {
  if (cluster.isWorker) {
    const metrics = await loadMetrics(config)
    // A worker's metrics are scraped through the primary, which asks every worker for theirs.
    if (metrics) (await import('./metrics/cluster-metrics.js')).answerClusterScrapes()
    await listen(config, await openStorage(config, metrics?.storageObserver), metrics)
    return
  }
  // The primary of --workers serves no requests: the metrics it serves are its workers' (cluster.ts).
  const metrics = config.workers > 1 ? undefined : await loadMetrics(config)
  const storage = await openStorage(config, metrics?.storageObserver)
  await printFirstKey(storage, config.dbMigrationTimeoutMs)
  if (config.workers > 1) {
    await storage.close()
    await runPrimary(config, config.workers)
    return
  }
  await listen(config, storage, metrics)
}

/** This process's metrics when METRICS_PORT is set; only then is prom-client even loaded. */
async function loadMetrics(config: Config): Promise<Metrics | undefined> {
  if (config.metricsPort === undefined) return undefined
  return (await import('./metrics/metrics.js')).processMetrics()
}

/** Makes the first key on a database that has none, retrying for up to `retryForMs` while the database is unavailable. */
async function printFirstKey(storage: Storage, retryForMs: number) {
  const first = await new KeysService(storage).createFirstKeyIfNone(retryForMs)
  if (!first) return
  // Printed once, outside the JSON logs, on stderr: the only time this token is ever shown.
  process.stderr.write(
    `\nCreated the first API key '${first.key.name}' (every scope). It is shown only this once:\n\n  ${first.token}\n\n` +
      `Create more with: npx petstore keys create --name NAME [--scopes inventory:read,orders:read,...]\n\n`,
  )
}

/** How long a shutdown waits for the last spans' export. */
const TRACES_FLUSH_MS = 2000

async function flushTraces(tracing: { shutdown(): Promise<void> }, log: FastifyInstance['log']): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), TRACES_FLUSH_MS)
  })
  const outcome = await Promise.race([
    tracing.shutdown().then(
      () => 'done' as const,
      (error: unknown) => error,
    ),
    late,
  ])
  clearTimeout(timer)
  if (outcome === 'late') log.warn({ ms: TRACES_FLUSH_MS }, 'the last spans were not exported in time; dropped')
  else if (outcome !== 'done') log.warn({ err: outcome }, 'could not export the last spans')
}

async function listen(config: Config, storage: Storage, metrics: Metrics | undefined): Promise<FastifyInstance> {
  const lifecycle = new Lifecycle()
  // Only with tracing on is the OpenTelemetry SDK even loaded (each worker traces its own requests).
  const tracing = tracingEnabled(config)
    ? (await import('./tracing/start-tracing.js')).startTracing(config, metrics?.spanObserver)
    : undefined
  const app = await buildApp(config, { storage, lifecycle, metrics, tracing: tracing?.requests })
  // The storage closes after the app, not in an onClose hook of its own: Fastify runs those last
  // added first, so one added here would run before the app's (which still write: the flush of the
  // deprecated calls).
  const close = async () => {
    try {
      await app.close()
    } finally {
      await storage.close()
      // The spans of the last requests, exported before the exit if the collector answers within
      // TRACES_FLUSH_MS: one that cannot be reached must not hold the shutdown for the exporter's timeout.
      if (tracing) await flushTraces(tracing, app.log)
    }
  }
  app.addHook('preClose', (done) => {
    app.log.info('closing the listener')
    done()
  })

  await app.listen({ port: config.port, host: config.host })
  lifecycle.listeningSince = performance.now()
  // Past this many open connections, new ones are closed as they arrive, before any request is read.
  app.server.maxConnections = config.maxConnections
  // After the API's listener, so a metrics address in the log means the service is up. Workers
  // have none: the primary serves theirs.
  let metricsServer: MetricsServer | undefined
  if (metrics && !cluster.isWorker) {
    try {
      metricsServer = await startMetricsServer(
        metrics.scrape,
        { host: config.metricsHost, port: config.metricsPort!, token: config.metricsToken },
        app.log,
      )
    } catch (error) {
      await close()
      throw error
    }
  }

  // A rolling restart (SIGTERM) drains first; Ctrl-C (SIGINT) from a terminal does not wait.
  let requested: NodeJS.Signals | undefined
  const grace = closeWithGrace(
    // A worker shuts down once however often it is asked: a Ctrl-C reaches the whole process group,
    // and the primary asks again (close-with-grace would take the second signal for a panic).
    {
      delay: config.shutdownDrainMs + config.shutdownGraceMs,
      skip: cluster.isWorker ? ['SIGINT', 'SIGTERM'] : [],
    },
    async ({ signal, err }) => {
      const cause = signal ?? requested
      if (err) app.log.error({ err }, 'shutting down after an unexpected error')
      else app.log.info({ signal: cause }, 'shutting down')
      if (!err && cause === 'SIGTERM' && config.shutdownDrainMs > 0) {
        lifecycle.drain()
        app.log.info({ drainMs: config.shutdownDrainMs }, 'draining: readiness fails, every response closes its connection')
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs))
      }
      lifecycle.drain()
      await close()
      // Up through the drain and the last requests, so they can be watched; closed before the exit.
      await metricsServer?.close()
    },
  )
  if (cluster.isWorker) {
    const stop = (signal: NodeJS.Signals) => {
      if (requested) return
      requested = signal
      void grace.close()
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
    process.on('message', (message: unknown) => {
      const m = message as { type?: string; signal?: NodeJS.Signals } | null
      if (m?.type === SHUTDOWN_MESSAGE) stop(m.signal ?? 'SIGTERM')
    })
  }
  return app
}
