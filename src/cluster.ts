import cluster, { type Worker } from 'node:cluster'
import { pino } from 'pino'
import type { Config } from './config.js'

/** What the primary sends a worker to make it shut down gracefully. */
export const SHUTDOWN_MESSAGE = 'petstore:shutdown'

/** A worker that dies within this long of starting is not restarted: it would only crash again. */
const MIN_UPTIME_MS = 5_000

/**
 * The primary of `petstore serve --workers N`: forks N workers that share the port (node:cluster),
 * restarts a worker that crashes, and on SIGTERM/SIGINT lets every worker shut down gracefully,
 * then exits 0. The workers are stateless; they coordinate only through the database.
 */
export function runPrimary(config: Config, workers: number): Promise<void> {
  const log = pino({ level: config.logLevel }).child({ role: 'primary' })
  let stopping = false
  const startedAt = new Map<Worker, number>()

  const fork = () => startedAt.set(cluster.fork(), Date.now())
  for (let i = 0; i < workers; i++) fork()

  return new Promise((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      const uptime = Date.now() - (startedAt.get(worker) ?? 0)
      startedAt.delete(worker)
      if (stopping) {
        if (startedAt.size === 0) {
          log.info('all workers stopped')
          resolve()
        }
        return
      }
      log.error({ pid: worker.process.pid, code, signal, uptimeMs: uptime }, 'worker exited unexpectedly')
      if (uptime >= MIN_UPTIME_MS) fork()
      else if (startedAt.size === 0) {
        process.exitCode = 1
        resolve()
      }
    })

    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return
      stopping = true
      log.info({ signal }, 'shutting down workers')
      for (const worker of startedAt.keys()) {
        try {
          worker.send(SHUTDOWN_MESSAGE)
        } catch {
          worker.process.kill('SIGTERM')
        }
      }
      if (startedAt.size === 0) resolve()
    }
    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
  })
}
