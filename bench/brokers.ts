// Webhook subscriptions into message brokers (issue 38), on each backend (SQLite; PostgreSQL when it
// answers) and into each broker (NATS JetStream on 127.0.0.1:4222, RabbitMQ on 127.0.0.1:5672), the
// real servers of this machine. A one-off, not part of `npm run bench`:
//
//   npm run build && node dist/bench/brokers.js
//
// 1. Throughput of one broker subscription while PATCHes run. The subscription is made first (it
//    starts at the ledger's end), one PATCH proves the path, then wrk PATCHes one pet flat out
//    (guard.lua: -t1, BROKERS_CONNECTIONS connections, at most 1,000,000 requests and 90 s) while
//    `petstore import inventory` writes BROKERS_BACKLOG records (one ledger row each, one
//    transaction). From the import's exit, the stream's message count (jetstreamManager
//    streams.info) or the queue's (amqplib checkQueue; a durable queue, nothing consuming it) is
//    polled every 20 ms until it holds every row up to the ledger's end read then: changes/s =
//    messages added over that time. Goals: JetStream >= 20,000/s, RabbitMQ >= 10,000/s. The same
//    drain with no PATCH load is measured first, for reference (BROKERS_IDLE=0 skips it).
// 2. Server CPU per PATCH with one broker subscription against none. Two services side by side, each
//    on a fresh database with the same env: `with` holds the subscription (the one of step 1, its
//    publisher connected and the ledger tail started long before any measured round), `none` never
//    had one (100,000 entries imported at start, so both hold a store of that size). Side by side
//    rather than deleting and re-creating the subscription between rounds: a re-created one would
//    connect to the broker and take its lease inside a measured round, and the ledger tail, once
//    started, keeps reading on a server whose last subscription is gone, so `none` would not be none.
//    Each round: BROKERS_PATCHES PATCHes of one pet (guard.lua, wrk SIGINTed once they are answered,
//    at most 60 s) against each service, the order flipped every round, after one unmeasured
//    warm-up round; the server process's CPU time (/proc/<pid>/task/*/schedstat, bench/procs.ts
//    cpuNsOf) from before wrk starts until, on `with`, the stream/queue holds every ledger row up to
//    the end read after wrk (the delivery's work is inside the measurement), divided by the ledger
//    rows the round added (the PATCHes the server did, in-flight ones at the SIGINT included).
//    BROKERS_ROUNDS rounds; the median of the rounds' with/none ratios. Goal: <= 1.15.
// Every stream, exchange, queue and database made here is removed at the end (and on SIGINT/SIGTERM
// or the overall watchdog). Prints a Markdown table, then the figures as JSON; exits 0 when a goal is
// missed ("below goal"), 1 when the bench itself failed. Knobs: BROKERS_BACKLOG (100000),
// BROKERS_ROUNDS (5), BROKERS_PATCHES (20000), BROKERS_CONNECTIONS (64), BROKERS_IDLE (1).
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect as natsConnect } from '@nats-io/transport-node'
import { connect as amqpConnect } from 'amqplib'
import { availableBackends, type Backend, disposeOpenDatabases } from './backends.js'
import { CLI_TIMEOUT_MS, CONNECTIONS, envNumber, LOAD_GRACE_MS, SMALL_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { type Measured, parseWrk, wrkVersion } from './load.js'
import { cpuNsOf, killAllChildren, runNode, track } from './procs.js'
import { checkPatch, type Dataset, makeDataset, type Running, serviceEnv, startService } from './targets.js'

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url))
const GUARD_LUA = fileURLToPath(new URL('../../bench/guard.lua', import.meta.url))
const GUARD_DONE = 'guard: requests done'

const BACKLOG = Math.floor(envNumber('BROKERS_BACKLOG', 100_000, 1_000))
const ROUNDS = Math.floor(envNumber('BROKERS_ROUNDS', 5, 1))
const ROUND_PATCHES = Math.floor(envNumber('BROKERS_PATCHES', 20_000, 100))
const LOAD_CONNECTIONS = Math.floor(envNumber('BROKERS_CONNECTIONS', CONNECTIONS, 1))
const IDLE_DRAIN = process.env.BROKERS_IDLE !== '0'
/** The unmeasured first round's PATCHes (JIT, caches, the broker's first pages). */
const WARMUP_PATCHES = 3_000

const NATS_HOST = '127.0.0.1:4222'
const AMQP_HOST = '127.0.0.1:5672'
const BROKERS = ['jetstream', 'rabbitmq'] as const
type Broker = (typeof BROKERS)[number]
const THROUGHPUT_GOAL: Record<Broker, number> = { jetstream: 20_000, rabbitmq: 10_000 }
const CPU_RATIO_GOAL = 1.15

/** The pet every PATCH names (present in both datasets). */
const PATCH_PET = 1
/** Bounds of the PATCH load during a backlog's drain: wrk is SIGINTed once the backlog is delivered. */
const LOAD_MAX_REQUESTS = 1_000_000
const LOAD_MAX_SECONDS = 90
/** Bound of one CPU round's wrk run (it ends when its PATCHes are answered, long before). */
const ROUND_MAX_SECONDS = 60
/** PATCHes before the import starts, so the import lands in a running load. */
const LOAD_LEAD_MS = 1_000
const DRAIN_TIMEOUT_MS = 60_000
const POLL_MS = 20
const INT64_MAX = '9223372036854775807'
/** The whole run; past it the servers are killed and everything made is removed. */
const BUDGET_MS = 12 * 60_000

const log = (line: string): void => {
  console.error(`[brokers ${new Date().toISOString().slice(11, 19)}] ${line}`)
}
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const fresh = (what: string) => `${what}${randomBytes(5).toString('hex')}`

/** What removes a stream, exchange or queue made here: run at the end, or by abort(). */
const cleanups = new Set<() => Promise<void>>()

/** A stream or a queue the subscription publishes into, and how many messages it holds. */
interface Destination {
  broker: Broker
  /** The subscription's URL. */
  url: string
  where: string
  count(): Promise<number>
  close(): Promise<void>
}

function register(close: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined
  const once = () => {
    done ??= close().finally(() => cleanups.delete(once))
    return done
  }
  cleanups.add(once)
  return once
}

/** A JetStream stream (file storage) of its own covering `<prefix>.>`. */
async function openJetStream(): Promise<Destination> {
  const nc = await natsConnect({ servers: NATS_HOST, name: 'petstore-bench' })
  const jsm = await jetstreamManager(nc)
  const name = fresh('PETSTORE_BENCH_')
  const prefix = fresh('petstore_bench_')
  const close = register(async () => {
    await jsm.streams.delete(name).catch(() => {})
    await nc.close().catch(() => {})
  })
  await jsm.streams.add({ name, subjects: [`${prefix}.>`], duplicate_window: 120_000_000_000 })
  return {
    broker: 'jetstream',
    url: `nats://${NATS_HOST}/${prefix}`,
    where: `stream ${name}`,
    count: async () => (await jsm.streams.info(name)).state.messages,
    close,
  }
}

/** A durable topic exchange and a durable queue bound to it with `#`, nothing consuming it. */
async function openRabbit(): Promise<Destination> {
  const model = await amqpConnect(`amqp://guest:guest@${AMQP_HOST}`)
  const channel = await model.createChannel()
  const exchange = fresh('petstore.bench.')
  const queue = fresh('petstore.bench.q.')
  const close = register(async () => {
    await channel.deleteQueue(queue).catch(() => {})
    await channel.deleteExchange(exchange).catch(() => {})
    await model.close().catch(() => {})
  })
  await channel.assertExchange(exchange, 'topic', { durable: true, autoDelete: false })
  await channel.assertQueue(queue, { durable: true, exclusive: false, autoDelete: false })
  await channel.bindQueue(queue, exchange, '#')
  return {
    broker: 'rabbitmq',
    url: `amqp://guest:guest@${AMQP_HOST}/%2F?exchange=${encodeURIComponent(exchange)}&routingKey=stock.changed`,
    where: `exchange ${exchange}, queue ${queue}`,
    count: async () => (await channel.checkQueue(queue)).messageCount,
    close,
  }
}

const openDestination = (broker: Broker) => (broker === 'jetstream' ? openJetStream() : openRabbit())

/** A service and the environment its database was made with (for the import CLI). */
interface Service {
  running: Running
  env: NodeJS.ProcessEnv
}

function brokerEnv(url: string): NodeJS.ProcessEnv {
  return { ...serviceEnv(url), BROKER_ALLOWED_HOSTS: `${NATS_HOST},${AMQP_HOST}` }
}

async function startBenchService(backend: Backend, dataset: Dataset, label: string): Promise<Service> {
  let env: NodeJS.ProcessEnv | undefined
  const running = await startService(CLI, backend, dataset, label, (url) => {
    env = brokerEnv(url)
    return env
  })
  if (env === undefined) throw new Error('startService did not ask for the environment')
  return { running, env }
}

async function call(running: Running, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${running.server.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${running.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  })
  return { status: res.status, text: await res.text() }
}

/** The newest ledger row's seq (0 when the ledger is empty). */
async function ledgerEnd(running: Running): Promise<number> {
  const res = await call(running, 'GET', `/v1/inventory/changes?before=${INT64_MAX}&limit=1`)
  if (res.status !== 200) throw new Error(`GET /v1/inventory/changes -> ${res.status}: ${res.text.slice(0, 300)}`)
  const seq = /"seq":(\d+)/.exec(res.text)?.[1]
  return seq === undefined ? 0 : Number(seq)
}

interface WebhookView {
  id: number
  state: string
  deliveredThrough: number
  lastError: string | null
}

async function subscribe(running: Running, url: string): Promise<{ id: number }> {
  const res = await call(running, 'POST', '/v1/webhooks', { url, description: 'bench/brokers.ts' })
  if (res.status !== 201) throw new Error(`POST /v1/webhooks ${url} -> ${res.status}: ${res.text.slice(0, 300)}`)
  return JSON.parse(res.text) as { id: number }
}

async function webhook(running: Running, id: number): Promise<WebhookView> {
  const res = await call(running, 'GET', `/v1/webhooks/${id}`)
  if (res.status !== 200) throw new Error(`GET /v1/webhooks/${id} -> ${res.status}: ${res.text.slice(0, 300)}`)
  return JSON.parse(res.text) as WebhookView
}

/** Polls `done` every POLL_MS; the performance.now() at which it first held, or undefined after `timeoutMs`. */
async function waitUntil(done: () => Promise<boolean>, timeoutMs: number): Promise<number | undefined> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (await done()) return performance.now()
    if (performance.now() > deadline) return undefined
    await sleep(POLL_MS)
  }
}

/** One wrk run of guard.lua PATCHing PATCH_PET: ends when `requests` are answered, at `seconds`, or at stop(). */
interface WrkRun {
  done: Promise<Measured>
  stop(): void
}

function startWrk(running: Running, requests: number, seconds: number): WrkRun {
  const args = ['-t1', `-c${LOAD_CONNECTIONS}`, `-d${seconds}s`, '--latency', '--timeout', `${WRK_TIMEOUT_SECONDS}s`, '-s', GUARD_LUA]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory`)
  const env = { ...process.env, GUARD_KIND: 'patch', GUARD_PET: String(PATCH_PET), GUARD_REQUESTS: String(requests) }
  const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const untrack = track(child)
  let interrupted = false
  const interrupt = () => {
    if (interrupted || child.exitCode !== null) return
    interrupted = true
    child.kill('SIGINT')
  }
  const done = new Promise<Measured>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes(GUARD_DONE)) interrupt()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString()
    })
    let timedOut = false
    const watchdog = setTimeout(
      () => {
        timedOut = true
        child.kill('SIGKILL')
      },
      seconds * 1000 + LOAD_GRACE_MS,
    )
    child.once('error', (err) => {
      clearTimeout(watchdog)
      untrack()
      reject(new Error(`wrk: ${err.message}`))
    })
    child.once('close', (code, signal) => {
      clearTimeout(watchdog)
      untrack()
      if (timedOut) return reject(new Error(`wrk did not finish within ${seconds} s + ${LOAD_GRACE_MS} ms (killed)`))
      if (code !== 0) return reject(new Error(`wrk exited with code ${String(code)}, signal ${String(signal)}:\n${out}`))
      try {
        const run = parseWrk(out)
        if (run.non2xx > 0 || run.errors > 0)
          reject(new Error(`${running.server.label}: ${run.non2xx} answers not 2xx, socket errors ${run.errorDetail}`))
        else resolve(run)
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)))
      }
    })
  })
  return { done, stop: interrupt }
}

/** One drain of a backlog of BACKLOG rows. */
interface Drain {
  withLoad: boolean
  /** `petstore import inventory` wall time (the load running meanwhile, when there is one). */
  importMs: number
  /** Rows the subscription had still to deliver when the import exited. */
  behindAtStart: number
  /** Messages added to the stream/queue from the import's exit until every row up to the ledger's end then was in. */
  delivered: number
  ms: number
  perSecond: number
  /** wrk's PATCH/s over its whole run (the import and the drain), when loaded. */
  patchPerSecond?: number
  patches?: number
}

async function drain(service: Service, dest: Destination, start: number, dataset: Dataset, withLoad: boolean): Promise<Drain> {
  const { running } = service
  const load = withLoad ? startWrk(running, LOAD_MAX_REQUESTS, LOAD_MAX_SECONDS) : undefined
  try {
    if (load) await sleep(LOAD_LEAD_MS)
    const importStart = performance.now()
    await runNode(CLI, ['import', 'inventory', dataset.file], service.env, CLI_TIMEOUT_MS)
    const t0 = performance.now()
    const count0 = await dest.count()
    const target = (await ledgerEnd(running)) - start
    let count = count0
    const t1 = await waitUntil(async () => {
      count = await dest.count()
      return count >= target
    }, DRAIN_TIMEOUT_MS)
    load?.stop()
    const wrk = load ? await load.done : undefined
    if (t1 === undefined) {
      throw new Error(
        `${dest.where}: ${count} of ${target} messages after ${DRAIN_TIMEOUT_MS} ms (${backlogState(await stateOf(service))})`,
      )
    }
    const ms = t1 - t0
    return {
      withLoad,
      importMs: t0 - importStart,
      behindAtStart: target - count0,
      delivered: count - count0,
      ms,
      perSecond: ((count - count0) * 1000) / ms,
      ...(wrk ? { patchPerSecond: wrk.rps, patches: wrk.completed } : {}),
    }
  } finally {
    load?.stop()
    await load?.done.catch(() => {})
  }
}

let subscriptionId = 0
const stateOf = (service: Service) => webhook(service.running, subscriptionId)
const backlogState = (w: WebhookView) => `subscription ${w.state}, deliveredThrough ${w.deliveredThrough}, lastError ${w.lastError}`

/** One service's CPU in one round. */
interface CpuSample {
  nsPerPatch: number
  /** Ledger rows the round added: the PATCHes the server did. */
  patches: number
  rps: number
  /** With a subscription: ms from wrk's end until the stream/queue held every row. */
  drainMs?: number
}

async function cpuRound(service: Service, requests: number, dest?: { d: Destination; start: number }): Promise<CpuSample> {
  const { running } = service
  const startSeq = await ledgerEnd(running)
  const before = await cpuNsOf(running.server.pid)
  const load = await startWrk(running, requests, ROUND_MAX_SECONDS).done
  const wrkEnd = performance.now()
  const endSeq = await ledgerEnd(running)
  let drainMs: number | undefined
  if (dest) {
    const target = endSeq - dest.start
    let count = 0
    const at = await waitUntil(async () => {
      count = await dest.d.count()
      return count >= target
    }, DRAIN_TIMEOUT_MS)
    if (at === undefined) throw new Error(`${dest.d.where}: ${count} of ${target} messages ${DRAIN_TIMEOUT_MS} ms after the round`)
    drainMs = at - wrkEnd
  }
  const after = await cpuNsOf(running.server.pid)
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${running.server.label} exited during the round: ${died}`)
  if (before === undefined || after === undefined) throw new Error(`cannot read /proc/${running.server.pid}/task/*/schedstat`)
  const patches = endSeq - startSeq
  if (patches < load.completed) throw new Error(`${running.server.label}: ${patches} ledger rows for ${load.completed} answered PATCHes`)
  return { nsPerPatch: (after - before) / patches, patches, rps: load.rps, ...(drainMs === undefined ? {} : { drainMs }) }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

interface ComboResult {
  backend: string
  broker: Broker
  idle?: Drain
  loaded: Drain
  throughputGoal: number
  throughputMet: boolean
  rounds: { none: CpuSample; with: CpuSample; ratio: number }[]
  cpuNoneUs: number
  cpuWithUs: number
  cpuRatio: number
  cpuRatioMet: boolean
  slowestDrainMs: number
  /** The subscription's state at the end, and whether its cursor matched the messages held. */
  finalState: string
  consistent: boolean
}

async function runCombo(backend: Backend, broker: Broker, small: Dataset, big: Dataset): Promise<ComboResult> {
  const name = `${backend.name}/${broker}`
  log(`${name}: making the destination and starting the services (with: ${small.items.length} entries, none: ${big.items.length})`)
  const dest = await openDestination(broker)
  const services: Service[] = []
  try {
    const withSub = await startBenchService(backend, small, `brokers-with-${broker}`)
    services.push(withSub)
    const none = await startBenchService(backend, big, `brokers-none-${broker}`)
    services.push(none)
    await checkPatch(withSub.running, small)
    await checkPatch(none.running, big)

    const sub = await subscribe(withSub.running, dest.url)
    subscriptionId = sub.id
    // Its cursor: the ledger's end when it was made (the answer to POST does not show it; nothing writes meanwhile).
    const start = (await stateOf(withSub)).deliveredThrough
    // One PATCH proves the path (and connects the publisher) before anything is timed.
    await checkPatch(withSub.running, small)
    const proved = await waitUntil(async () => (await dest.count()) >= (await ledgerEnd(withSub.running)) - start, 15_000)
    if (proved === undefined)
      throw new Error(`${name}: the first PATCH never reached ${dest.where} (${backlogState(await stateOf(withSub))})`)
    log(`${name}: subscription ${sub.id} into ${dest.where} delivers`)

    let idle: Drain | undefined
    if (IDLE_DRAIN) {
      idle = await drain(withSub, dest, start, big, false)
      log(`${name}: backlog of ${idle.behindAtStart} rows, no PATCHes: ${Math.round(idle.perSecond)} changes/s (${Math.round(idle.ms)} ms)`)
    }
    const loaded = await drain(withSub, dest, start, big, true)
    log(
      `${name}: backlog of ${loaded.behindAtStart} rows under ${Math.round(loaded.patchPerSecond ?? 0)} PATCH/s: ` +
        `${Math.round(loaded.perSecond)} changes/s (${Math.round(loaded.ms)} ms, import ${Math.round(loaded.importMs)} ms)`,
    )

    const rounds: ComboResult['rounds'] = []
    for (let round = 0; round <= ROUNDS; round++) {
      const requests = round === 0 ? WARMUP_PATCHES : ROUND_PATCHES
      const sample: Partial<Record<'none' | 'with', CpuSample>> = {}
      const order = round % 2 === 0 ? (['none', 'with'] as const) : (['with', 'none'] as const)
      for (const which of order) {
        sample[which] = which === 'none' ? await cpuRound(none, requests) : await cpuRound(withSub, requests, { d: dest, start })
      }
      const n = sample.none!
      const w = sample.with!
      if (round === 0) {
        log(`${name}: warm-up round done`)
        continue
      }
      rounds.push({ none: n, with: w, ratio: w.nsPerPatch / n.nsPerPatch })
      log(
        `${name}: round ${round}: none ${(n.nsPerPatch / 1000).toFixed(1)} µs/PATCH (${Math.round(n.rps)}/s), ` +
          `with ${(w.nsPerPatch / 1000).toFixed(1)} µs/PATCH (${Math.round(w.rps)}/s, drained ${Math.round(w.drainMs ?? 0)} ms after), ` +
          `ratio ${(w.nsPerPatch / n.nsPerPatch).toFixed(3)}`,
      )
    }

    const final = await stateOf(withSub)
    const held = await dest.count()
    const consistent = final.deliveredThrough - start === held && final.deliveredThrough === (await ledgerEnd(withSub.running))
    if (!consistent)
      log(`${name}: ${dest.where} holds ${held} messages, the cursor moved ${final.deliveredThrough - start} (${backlogState(final)})`)
    const cpuRatio = median(rounds.map((r) => r.ratio))
    return {
      backend: backend.name,
      broker,
      ...(idle ? { idle } : {}),
      loaded,
      throughputGoal: THROUGHPUT_GOAL[broker],
      throughputMet: loaded.perSecond >= THROUGHPUT_GOAL[broker],
      rounds,
      cpuNoneUs: median(rounds.map((r) => r.none.nsPerPatch)) / 1000,
      cpuWithUs: median(rounds.map((r) => r.with.nsPerPatch)) / 1000,
      cpuRatio,
      cpuRatioMet: cpuRatio <= CPU_RATIO_GOAL,
      slowestDrainMs: Math.max(...rounds.map((r) => r.with.drainMs ?? 0)),
      finalState: final.state,
      consistent,
    }
  } finally {
    const stopping = performance.now()
    // Side by side (each takes its graceful-shutdown time).
    await Promise.all(services.map((service) => service.running.stop().catch((err: unknown) => log(`stopping: ${String(err)}`))))
    const stopped = performance.now()
    await dest.close()
    log(
      `${name}: services stopped in ${Math.round(stopped - stopping)} ms, ${dest.where} removed in ${Math.round(performance.now() - stopped)} ms`,
    )
  }
}

const int = (n: number) => Math.round(n).toLocaleString('en-US')
const verdict = (met: boolean) => (met ? 'met' : 'below goal')
const range = (values: readonly number[]) => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`

function table(results: readonly ComboResult[]): string {
  const lines = [
    '| Backend | Broker | Backlog delivered/s under PATCHes (goal) | PATCH/s meanwhile | Delivered/s, no PATCHes | ' +
      `CPU/PATCH none (µs) | with one subscription (µs) | Ratio, median of ${ROUNDS} (goal ≤ ${CPU_RATIO_GOAL}) | Slowest drain after a round |`,
    '|---|---|---|---|---|---|---|---|---|',
  ]
  for (const r of results) {
    lines.push(
      `| ${r.backend} | ${r.broker} | ${int(r.loaded.perSecond)} (≥ ${int(r.throughputGoal)}: ${verdict(r.throughputMet)}) | ` +
        `${int(r.loaded.patchPerSecond ?? 0)} | ${r.idle ? int(r.idle.perSecond) : '-'} | ${r.cpuNoneUs.toFixed(1)} | ` +
        `${r.cpuWithUs.toFixed(1)} | ${r.cpuRatio.toFixed(3)} (${verdict(r.cpuRatioMet)}; rounds ${range(r.rounds.map((x) => x.ratio))}) | ${int(r.slowestDrainMs)} ms |`,
    )
  }
  return lines.join('\n')
}

let workDir: string | undefined

async function main(): Promise<number> {
  if (!existsSync(CLI)) {
    console.error(`brokers: ${CLI} not found; run npm run build first`)
    return 1
  }
  const wrk = wrkVersion()
  if (wrk === undefined) {
    console.error('brokers: wrk not found (apt-get install wrk)')
    return 1
  }
  const backends = await availableBackends(log)
  workDir = await mkdtemp(join(tmpdir(), 'petstore-bench-brokers-'))
  const small = await makeDataset(workDir, SMALL_INVENTORY)
  const big = await makeDataset(workDir, BACKLOG)
  const started = Date.now()
  const results: ComboResult[] = []
  for (const backend of backends) for (const broker of BROKERS) results.push(await runCombo(backend, broker, small, big))

  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`
  console.log(`\n## Webhook subscriptions into brokers (${new Date().toISOString()})\n`)
  console.log(
    `${machine}; Node ${process.version}; ${wrk}; backlog ${int(BACKLOG)} rows (one import); PATCH load wrk -t1 -c${LOAD_CONNECTIONS} ` +
      `on one pet; CPU rounds of ${int(ROUND_PATCHES)} PATCHes; ${Math.round((Date.now() - started) / 1000)} s.\n`,
  )
  console.log(table(results))
  const summary = {
    date: new Date().toISOString(),
    machine,
    node: process.version,
    wrk,
    settings: { backlog: BACKLOG, rounds: ROUNDS, roundPatches: ROUND_PATCHES, connections: LOAD_CONNECTIONS, idleDrain: IDLE_DRAIN },
    goals: { throughput: THROUGHPUT_GOAL, cpuRatio: CPU_RATIO_GOAL },
    results,
    allGoalsMet: results.every((r) => r.throughputMet && r.cpuRatioMet),
  }
  console.log(`\n\`\`\`json\n${JSON.stringify(summary, null, 2)}\n\`\`\``)
  const bad = results.filter((r) => !r.consistent || r.finalState !== 'active')
  if (bad.length > 0) {
    console.error(
      `brokers: the subscription's cursor and the messages held disagree for ${bad.map((r) => `${r.backend}/${r.broker}`).join(', ')}`,
    )
    return 1
  }
  return 0
}

async function cleanUp(): Promise<void> {
  killAllChildren()
  await Promise.allSettled([...cleanups].map((close) => close()))
  await disposeOpenDatabases()
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true })
}

let aborting = false
const abort = (code: number): void => {
  killAllChildren()
  if (aborting) return
  aborting = true
  void cleanUp().finally(() => process.exit(code))
}
const watchdog = setTimeout(() => {
  console.error(`brokers: exceeded ${BUDGET_MS / 1000} s overall; killing the servers`)
  abort(1)
}, BUDGET_MS)
watchdog.unref()
process.on('SIGINT', () => abort(130))
process.on('SIGTERM', () => abort(143))

main()
  .then(
    (code) => {
      process.exitCode = code
    },
    (err: unknown) => {
      console.error('brokers crashed:', err)
      process.exitCode = 1
    },
  )
  .finally(async () => {
    clearTimeout(watchdog)
    if (!aborting) await cleanUp()
  })
