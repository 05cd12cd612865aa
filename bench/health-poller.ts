// Worker thread for the 1,000,000-entry section: polls GET /healthz every HEALTH_POLL_MS, one request at a
// time on its own keep-alive connection, until the parent posts 'stop'; posts { ready } after the first poll, then { worstMs, polls }
// or { error }. A thread of its own, so the bench's main thread (receiving a 50 MiB body) never delays a poll.
import { Agent, request } from 'node:http'
import { parentPort, workerData } from 'node:worker_threads'

const { url, periodMs, timeoutMs } = workerData as { url: string; periodMs: number; timeoutMs: number }
const agent = new Agent({ keepAlive: true, maxSockets: 1 })
let stopped = false
parentPort?.once('message', () => {
  stopped = true
})

function poll(): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(url, { agent, timeout: timeoutMs }, (res) => {
      res.resume()
      res.once('error', reject)
      res.once('end', () =>
        res.statusCode === 200
          ? resolve(performance.now() - started)
          : reject(new Error(`/healthz answered ${res.statusCode ?? 0} while the list was fetched`)),
      )
    })
    req.once('timeout', () => req.destroy(new Error(`/healthz: no answer within ${timeoutMs} ms`)))
    req.once('error', reject)
    req.end()
  })
}

let worstMs = 0
let polls = 0
try {
  while (!stopped) {
    const ms = await poll()
    if (polls === 0) parentPort?.postMessage({ ready: true }) // the connection is open: the parent may start its GET
    polls++
    worstMs = Math.max(worstMs, ms)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, periodMs - ms)))
  }
  parentPort?.postMessage({ worstMs, polls })
} catch (err) {
  parentPort?.postMessage({ error: err instanceof Error ? err.message : String(err) })
} finally {
  agent.destroy()
}
