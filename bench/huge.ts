// The 1,000,000-entry section: import time and memory, GET /v1/inventory (first and cached) with the
// server's memory and /healthz polled meanwhile, and sequential PATCH latency at 1,000,000 vs 100 entries.
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { Backend } from './backends.js'
import { FIRST_PET_ID, HEALTH_POLL_MS, HUGE_REQUEST_TIMEOUT_MS, IMPORT_TIMEOUT_MS, SEQUENTIAL_PATCHES } from './config.js'
import { freePort, HOST, memoryOf, runNodeMeasured } from './procs.js'
import { createKey, sameItems, serve, serviceEnv, startService, type Dataset } from './targets.js'

export interface Timed {
  ms: number
  peakKiB: number | undefined
}
export interface GetTiming {
  ttfbMs: number
  totalMs: number
  bytes: number
  /** Worst /healthz latency while the list was being fetched, and how many polls completed. */
  healthWorstMs: number
  healthPolls: number
  /** The server's own longest event-loop delay during the GET (see loopDelay), in ms. */
  loopMaxMs?: number
}
export interface Percentiles {
  p50: number
  p99: number
  count: number
}

export interface HugeResult {
  backend: string
  entries: number
  importJson?: Timed
  importCsv?: Timed
  /** Server VmRSS once started, before the first GET; VmHWM after both GETs. KiB. */
  idleKiB?: number
  peakKiB?: number
  firstGet?: GetTiming
  cachedGet?: GetTiming
  patchHuge?: Percentiles
  /** The server's longest event-loop delay during the sequential PATCHes at 1,000,000 entries, in ms. */
  patchHugeLoopMaxMs?: number
  patchSmall?: Percentiles
  failures: string[]
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

interface Response {
  status: number
  ttfbMs: number
  totalMs: number
  chunks: Buffer[]
}

/** One HTTP request on `agent`; times the response headers (TTFB) and the end of the body from the moment it is sent. */
function send(agent: Agent, url: string, method: string, headers: Record<string, string>, body?: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(url, { agent, method, headers, timeout: HUGE_REQUEST_TIMEOUT_MS }, (res) => {
      const ttfbMs = performance.now() - started
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.once('error', reject)
      res.once('end', () => resolve({ status: res.statusCode ?? 0, ttfbMs, totalMs: performance.now() - started, chunks }))
    })
    req.once('timeout', () => req.destroy(new Error(`${method} ${url}: no answer within ${HUGE_REQUEST_TIMEOUT_MS} ms`)))
    req.once('error', reject)
    req.end(body)
  })
}

const POLLER = fileURLToPath(new URL('./health-poller.js', import.meta.url))

/** Starts polling /healthz every HEALTH_POLL_MS in a worker thread (bench/health-poller.ts); resolves after its first poll. */
async function pollHealth(baseUrl: string): Promise<{ stop(): Promise<{ worstMs: number; polls: number }> }> {
  const worker = new Worker(POLLER, {
    workerData: { url: `${baseUrl}/healthz`, periodMs: HEALTH_POLL_MS, timeoutMs: HUGE_REQUEST_TIMEOUT_MS },
  })
  type Message = { ready: true } | { worstMs: number; polls: number } | { error: string }
  let ready!: () => void
  const started = new Promise<void>((resolve) => {
    ready = resolve
  })
  const done = new Promise<{ worstMs: number; polls: number }>((resolve, reject) => {
    worker.on('message', (m: Message) => {
      if ('ready' in m) ready()
      else if ('error' in m) reject(new Error(m.error))
      else resolve(m)
    })
    worker.once('error', reject)
    worker.once('exit', (code) => reject(new Error(`health poller exited with code ${code} before reporting`)))
  })
  done.catch(() => {}) // reported by stop()
  const stop = async (): Promise<{ worstMs: number; polls: number }> => {
    worker.postMessage('stop')
    try {
      return await done
    } finally {
      await worker.terminate()
    }
  }
  try {
    await Promise.race([started, done]) // done settles first only when the poller failed
  } catch (err) {
    await worker.terminate()
    throw err
  }
  return { stop }
}

/**
 * The service's longest event-loop delay since the last call, in ms: prom-client's
 * nodejs_eventloop_lag_max_seconds on the metrics listener (perf_hooks.monitorEventLoopDelay with a
 * 10 ms timer, reset by every scrape). Node records the whole gap between two ticks of that timer, so
 * an idle loop reads about 10 ms, and no stretch the loop was held is longer than the figure (which also
 * counts any time the OS or the hypervisor did not run the process). Undefined when the metrics do not answer.
 */
export async function loopDelay(metricsUrl: string): Promise<number | undefined> {
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(5_000) })
    const text = await res.text()
    const seconds = Number(/^nodejs_eventloop_lag_max_seconds\s+(\S+)$/m.exec(text)?.[1])
    return res.status === 200 && Number.isFinite(seconds) ? seconds * 1000 : undefined
  } catch {
    return undefined
  }
}

/** GET /v1/inventory once with /healthz polled meanwhile (the poller's first poll is done before the GET starts). */
async function timedList(baseUrl: string, token: string, agent: Agent, metricsUrl: string): Promise<{ timing: GetTiming; body: Buffer }> {
  const poller = await pollHealth(baseUrl)
  await loopDelay(metricsUrl)
  const got = await send(agent, `${baseUrl}/v1/inventory`, 'GET', { authorization: `Bearer ${token}` }).then(
    (response) => ({ response }),
    (error: unknown) => ({ error }),
  )
  const health = await poller.stop()
  const loopMaxMs = await loopDelay(metricsUrl)
  if ('error' in got) throw got.error
  const res = got.response
  const body = Buffer.concat(res.chunks)
  if (res.status !== 200) throw new Error(`GET /v1/inventory -> ${res.status}: ${body.subarray(0, 300).toString()}`)
  return {
    timing: {
      ttfbMs: res.ttfbMs,
      totalMs: res.totalMs,
      bytes: body.length,
      healthWorstMs: health.worstMs,
      healthPolls: health.polls,
      ...(loopMaxMs === undefined ? {} : { loopMaxMs }),
    },
    body,
  }
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN
}

/** SEQUENTIAL_PATCHES PATCHes one after another on one keep-alive connection, pets in rotation; each must be 200. */
export async function sequentialPatches(baseUrl: string, token: string, petCount: number): Promise<Percentiles> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const times: number[] = []
  try {
    // One untimed request opens the connection.
    await send(agent, `${baseUrl}/healthz`, 'GET', {})
    for (let i = 0; i < SEQUENTIAL_PATCHES; i++) {
      // Spread over the whole id range: the first, last and pets in between.
      const petId = FIRST_PET_ID + Math.floor((i * (petCount - 1)) / Math.max(1, SEQUENTIAL_PATCHES - 1))
      const res = await send(agent, `${baseUrl}/v1/inventory/${petId}`, 'PATCH', headers, `{"quantity":${i}}`)
      if (res.status !== 200)
        throw new Error(`PATCH /v1/inventory/${petId} -> ${res.status}: ${Buffer.concat(res.chunks).subarray(0, 300).toString()}`)
      times.push(res.totalMs)
    }
  } finally {
    agent.destroy()
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), count: times.length }
}

/** Everything for one backend. Steps that fail are recorded in `failures`; the rest still run where they can. */
export async function runHuge(
  cli: string,
  backend: Backend,
  huge: Dataset,
  small: Dataset,
  dir: string,
  log: (msg: string) => void,
): Promise<HugeResult> {
  const result: HugeResult = { backend: backend.name, entries: huge.items.length, failures: [] }
  const step = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn()
    } catch (err) {
      const msg = `${what}: ${err instanceof Error ? err.message : String(err)}`
      result.failures.push(msg)
      log(`  FAILED ${backend.name} ${msg}`)
    }
  }
  const rssFile = join(dir, 'import-rss.txt')

  // CSV import into a database of its own, dropped at once.
  await step('import CSV', async () => {
    const csv = huge.csvFile
    if (csv === undefined) throw new Error('no CSV file')
    const db = await backend.createDatabase('huge-csv')
    try {
      log(`1M / ${backend.name}: import ${huge.items.length} entries from CSV`)
      result.importCsv = await runNodeMeasured(cli, ['import', 'inventory', csv], serviceEnv(db.url), IMPORT_TIMEOUT_MS, rssFile)
      log(`  ${(result.importCsv.ms / 1000).toFixed(1)} s, peak RSS ${mib(result.importCsv.peakKiB)} MiB`)
    } finally {
      await db.dispose()
    }
  })

  // JSON import, then that database is served.
  const db = await backend.createDatabase('huge')
  try {
    const env = serviceEnv(db.url)
    const token = await createKey(cli, env)
    let imported = false
    await step('import JSON', async () => {
      log(`1M / ${backend.name}: import ${huge.items.length} entries from JSON`)
      result.importJson = await runNodeMeasured(cli, ['import', 'inventory', huge.file], env, IMPORT_TIMEOUT_MS, rssFile)
      log(`  ${(result.importJson.ms / 1000).toFixed(1)} s, peak RSS ${mib(result.importJson.peakKiB)} MiB`)
      imported = true
    })
    if (imported) {
      await step('GET and PATCH at 1M', async () => {
        const metricsPort = await freePort()
        const metricsUrl = `http://${HOST}:${metricsPort}/metrics`
        const server = await serve(cli, backend, { ...env, METRICS_PORT: String(metricsPort), METRICS_HOST: HOST })
        const agent = new Agent({ keepAlive: true, maxSockets: 1 })
        try {
          await sleep(1000)
          await send(agent, `${server.baseUrl}/healthz`, 'GET', {})
          result.idleKiB = (await memoryOf(server.pid)).rssKiB
          log(`1M / ${backend.name}: server idle RSS ${mib(result.idleKiB)} MiB; GET /v1/inventory (first)`)
          const first = await timedList(server.baseUrl, token, agent, metricsUrl)
          result.firstGet = first.timing
          log(
            `  TTFB ${first.timing.ttfbMs.toFixed(0)} ms, total ${first.timing.totalMs.toFixed(0)} ms, ` +
              `${(first.timing.bytes / 2 ** 20).toFixed(1)} MiB, worst /healthz ${first.timing.healthWorstMs.toFixed(1)} ms, ` +
              `longest event-loop delay ${first.timing.loopMaxMs?.toFixed(1) ?? '-'} ms`,
          )
          const cached = await timedList(server.baseUrl, token, agent, metricsUrl)
          result.cachedGet = cached.timing
          result.peakKiB = (await memoryOf(server.pid)).peakKiB
          log(
            `  cached: TTFB ${cached.timing.ttfbMs.toFixed(1)} ms, total ${cached.timing.totalMs.toFixed(0)} ms, ` +
              `worst /healthz ${cached.timing.healthWorstMs.toFixed(1)} ms, longest event-loop delay ${cached.timing.loopMaxMs?.toFixed(1) ?? '-'} ms; ` +
              `server peak RSS ${mib(result.peakKiB)} MiB`,
          )
          if (!first.body.equals(cached.body)) throw new Error('the cached GET returned different bytes than the first')
          if (!sameItems(JSON.parse(first.body.toString('utf8')), huge.items))
            throw new Error('GET /v1/inventory did not return the imported inventory')
          log(`1M / ${backend.name}: ${SEQUENTIAL_PATCHES} sequential PATCHes`)
          await loopDelay(metricsUrl)
          result.patchHuge = await sequentialPatches(server.baseUrl, token, huge.items.length)
          const patchLoop = await loopDelay(metricsUrl)
          if (patchLoop !== undefined) result.patchHugeLoopMaxMs = patchLoop
          log(
            `  p50 ${result.patchHuge.p50.toFixed(2)} ms, p99 ${result.patchHuge.p99.toFixed(2)} ms, longest event-loop delay ${patchLoop?.toFixed(1) ?? '-'} ms`,
          )
        } finally {
          agent.destroy()
          await server.stop()
        }
      })
    }
  } finally {
    await db.dispose()
  }

  await step(`PATCH at ${small.items.length}`, async () => {
    log(`${small.items.length} / ${backend.name}: ${SEQUENTIAL_PATCHES} sequential PATCHes`)
    const running = await startService(cli, backend, small, 'small-patch')
    try {
      result.patchSmall = await sequentialPatches(running.server.baseUrl, running.token, small.items.length)
      log(`  p50 ${result.patchSmall.p50.toFixed(2)} ms, p99 ${result.patchSmall.p99.toFixed(2)} ms`)
    } finally {
      await running.stop()
    }
  })
  return result
}

export function mib(kib: number | undefined): string {
  return kib === undefined ? '-' : (kib / 1024).toFixed(0)
}
