import cluster, { type Worker } from 'node:cluster'
import { pino } from 'pino'
import type { Config } from './config.js'
import { startMetricsServer } from './metrics/metrics-server.js'

/** What the primary sends a worker (`{ type, signal }`) to make it shut down gracefully, as on that signal. */
export const SHUTDOWN_MESSAGE = 'petstore:shutdown'

/**
 * How long the primary waits before replacing a dead worker. Every death is replaced, but a worker
 * that crashes at start (a bad config, a database that is down) must not make the primary fork in
 * a tight loop: each quick death doubles the delay, up to a cap. A worker that had stayed up for
 * `stableMs` proves the previous crashes over, so its death starts again from `firstMs`.
 */
export class RestartBackoff {
  private delayMs = 0

  constructor(
    readonly firstMs = 100,
    readonly maxMs = 30_000,
    readonly stableMs = 10_000,
  ) {}

  /** The delay before replacing a worker that died after `uptimeMs`. */
  next(uptimeMs: number): number {
    const quick = this.delayMs > 0 && uptimeMs < this.stableMs
    this.delayMs = quick ? Math.min(this.delayMs * 2, this.maxMs) : this.firstMs
    return this.delayMs
  }
}

/**
 * Asks one worker to shut down gracefully, as on `signal`. A worker still starting (not yet
 * `listening`) has no handler for the message yet: it would be lost and the worker would serve on,
 * so it gets the signal, whose default action ends it. So does a worker whose channel has closed (it
 * is exiting, and its exit has not reached the primary yet) or whose message cannot be written: a
 * worker that listens handles the signal as it would the message.
 */
export function askToStop(worker: Worker, signal: NodeJS.Signals, listening: boolean): void {
  const kill = () => void worker.process.kill(signal)
  if (!listening || !worker.isConnected()) {
    kill()
    return
  }
  // With a callback, a failed send is reported there instead of as an 'error' on the worker.
  worker.send({ type: SHUTDOWN_MESSAGE, signal }, (error) => error && kill())
}

/**
 * The primary of `petstore serve --workers N`: forks N workers that share the port (node:cluster),
 * replaces a worker that dies (after a backoff), and on SIGTERM/SIGINT lets every worker shut down
 * gracefully, then exits 0. The workers are stateless; they coordinate only through the database.
 * With METRICS_PORT, the primary serves the metrics of all its workers, summed, from the start
 * until every worker has stopped.
 */
export async function runPrimary(config: Config, workers: number): Promise<void> {
  const log = pino({ level: config.logLevel }).child({ role: 'primary' })
  // Before the workers start, so a port that is taken stops the start at once.
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : await startMetricsServer(
          (await import('./metrics/cluster-metrics.js')).clusterScrape(),
          { host: config.metricsHost, port: config.metricsPort, token: config.metricsToken },
          log,
        )
  let stopping = false
  const startedAt = new Map<Worker, number>()
  /** Workers that listen, and so have their shutdown handlers (they are set up right after). */
  const listening = new WeakSet<Worker>()
  cluster.on('listening', (worker) => listening.add(worker))
  const backoff = new RestartBackoff()
  // Replacements still waiting out their delay; shutdown cancels them.
  const pending = new Set<NodeJS.Timeout>()

  const fork = () => {
    const worker = cluster.fork()
    startedAt.set(worker, Date.now())
    // A worker's channel fails when the worker is going (its exit follows): said, never a crash of
    // the primary, which an 'error' nobody listens for would be.
    worker.on('error', (error: Error) => log.warn({ err: error, workerPid: worker.process.pid }, 'worker channel error'))
    return worker
  }
  for (let i = 0; i < workers; i++) fork()

  await new Promise<void>((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      const uptimeMs = Date.now() - (startedAt.get(worker) ?? 0)
      startedAt.delete(worker)
      if (stopping) {
        if (startedAt.size === 0) {
          log.info('all workers stopped')
          resolve()
        }
        return
      }
      // `workerPid`, not `pid`: every line already carries the primary's own pid.
      const deadPid = worker.process.pid
      const delayMs = backoff.next(uptimeMs)
      log.error({ workerPid: deadPid, code, signal, uptimeMs, restartInMs: delayMs }, 'worker exited unexpectedly')
      const timer = setTimeout(() => {
        pending.delete(timer)
        const replacement = fork()
        log.info({ workerPid: replacement.process.pid, replacedPid: deadPid, delayMs }, 'worker replaced')
      }, delayMs)
      pending.add(timer)
    })

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return
      stopping = true
      log.info({ signal }, 'shutting down workers')
      for (const timer of pending) clearTimeout(timer)
      pending.clear()
      for (const worker of startedAt.keys()) askToStop(worker, signal, listening.has(worker))
      // Every worker may already be dead, waiting to be replaced.
      if (startedAt.size === 0) resolve()
    }
    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
  })
  await metricsServer?.close()
  // Exits rather than waiting for an empty event loop: a connection node:cluster handed to a worker
  // that died before taking it is never closed by the primary, and would keep it running for ever.
  process.exit(0)
}
