// Webhook subscriptions into message brokers (issue 38), on each backend (SQLite; PostgreSQL when it
// answers) and into each broker (NATS JetStream on 127.0.0.1:4222, RabbitMQ on 127.0.0.1:5672), the
// real servers of this machine; a broker that does not answer is skipped, with a note. Part of
// `npm run bench` (run.ts runs it after the live-changes group, and `BENCH_SCENARIOS=brokers` alone
// runs only it, replacing only its section of bench/RESULTS.md); it also runs on its own:
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
//    drain with no PATCH load is measured first, for reference (BROKERS_IDLE=0 skips it), with the
//    server's CPU over it per message: the delivery's own work a row.
// 2. Server CPU per PATCH with one broker subscription against none. Two services side by side, each
//    on a fresh database with the same env: `with` holds the subscription (the one of step 1, its
//    publisher connected and the ledger tail started long before any measured round), `none` never
//    had one (BROKERS_BACKLOG entries imported at start, so both hold a store of that size). Side by side
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
// or the overall watchdog: removeBrokerDestinations). Results: renderBrokers (bench/RESULTS.md's
// brokers section), brokersGoals (a missed goal is not an error); a step that fails, or a
// subscription whose cursor and the messages held disagree at the end, is a failure. Alone, it prints
// the section, then the figures as JSON, and exits 0 when a goal is missed, 1 when a step failed.
// Knobs: BROKERS_BACKLOG (100000), BROKERS_ROUNDS (5), BROKERS_PATCHES (20000),
// BROKERS_CONNECTIONS (64), BROKERS_IDLE (1), BROKERS_PACE_MS (unset: the CPU rounds flat out).
import { randomBytes } from 'node:crypto'
import { existsSync, realpathSync, rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect as natsConnect } from '@nats-io/transport-node'
import { connect as amqpConnect } from 'amqplib'
import { availableBackends, type Backend, disposeOpenDatabases } from './backends.js'
import { CLI_TIMEOUT_MS, CONNECTIONS, envNumber, SMALL_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { spawnWrk, type WrkRun, wrkVersion } from './load.js'
import { cpuNsOf, killAllChildren, runNode } from './procs.js'
import { loadAverage, mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, type WrkGroupRun, wrkGroupRun, writeSection } from './results-section.js'
import { checkPatch, type Dataset, makeDataset, type Running, serviceEnv, startService } from './targets.js'
import { median } from './stats.js'

/** `brokers` in BENCH_SCENARIOS runs this group; a default run (no BENCH_SCENARIOS) includes it. */
export const BROKERS_GROUP = 'brokers'

export function selectBrokers(ids: readonly string[] | undefined): boolean {
  return ids === undefined || ids.includes(BROKERS_GROUP)
}

/** True when BENCH_SCENARIOS names this group and nothing else: then run.ts runs it alone. */
export function brokersOnly(ids: readonly string[] | undefined): boolean {
  return ids !== undefined && ids.length > 0 && ids.every((id) => id === BROKERS_GROUP)
}

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url))
const GUARD_LUA = fileURLToPath(new URL('../../bench/guard.lua', import.meta.url))
const GUARD_DONE = 'guard: requests done'

const BACKLOG = Math.floor(envNumber('BROKERS_BACKLOG', 100_000, 1_000))
const ROUNDS = Math.floor(envNumber('BROKERS_ROUNDS', 5, 1))
const ROUND_PATCHES = Math.floor(envNumber('BROKERS_PATCHES', 20_000, 100))
const LOAD_CONNECTIONS = Math.floor(envNumber('BROKERS_CONNECTIONS', CONNECTIONS, 1))
const IDLE_DRAIN = process.env.BROKERS_IDLE !== '0'
/**
 * BROKERS_PACE_MS: the CPU rounds' wrk connections each wait this long between an answer and their
 * next PATCH (guard.lua's GUARD_DELAY_MS), so both services take the same offered rate, below what
 * either can do: their CPU per PATCH is then compared at equal group-commit sizes, not each flat out
 * (where the CPU the broker takes on two cores lowers `with`'s rate, and smaller commits cost more a
 * PATCH). Unset: flat out.
 */
const PACE_MS = process.env.BROKERS_PACE_MS === undefined ? undefined : envNumber('BROKERS_PACE_MS', 0, 1)
/** The unmeasured first round's PATCHes (JIT, caches, the broker's first pages). */
const WARMUP_PATCHES = 3_000

const NATS_HOST = '127.0.0.1:4222'
const AMQP_HOST = '127.0.0.1:5672'
export const BROKERS = ['jetstream', 'rabbitmq'] as const
export type Broker = (typeof BROKERS)[number]
export const THROUGHPUT_GOAL: Readonly<Record<Broker, number>> = { jetstream: 20_000, rabbitmq: 10_000 }
export const CPU_RATIO_GOAL = 1.15
const BROKER_NAME: Readonly<Record<Broker, string>> = { jetstream: 'NATS JetStream', rabbitmq: 'RabbitMQ' }
const BROKER_HOST: Readonly<Record<Broker, string>> = { jetstream: NATS_HOST, rabbitmq: AMQP_HOST }
/** How long a broker has to answer the probe before its rows are skipped. */
const PROBE_TIMEOUT_MS = 5_000

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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const fresh = (what: string) => `${what}${randomBytes(5).toString('hex')}`
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

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
  cli: string
  running: Running
  env: NodeJS.ProcessEnv
  /** The webhook id of the subscription it holds (the `with` service). */
  subscription?: number
}

function brokerEnv(url: string): NodeJS.ProcessEnv {
  return { ...serviceEnv(url), BROKER_ALLOWED_HOSTS: `${NATS_HOST},${AMQP_HOST}` }
}

async function startBenchService(cli: string, backend: Backend, dataset: Dataset, label: string): Promise<Service> {
  let env: NodeJS.ProcessEnv | undefined
  const running = await startService(cli, backend, dataset, label, (url) => {
    env = brokerEnv(url)
    return env
  })
  if (env === undefined) throw new Error('startService did not ask for the environment')
  return { cli, running, env }
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
function startWrk(running: Running, requests: number, seconds: number, paceMs?: number): WrkRun {
  const args = ['-t1', `-c${LOAD_CONNECTIONS}`, `-d${seconds}s`, '--latency', '--timeout', `${WRK_TIMEOUT_SECONDS}s`, '-s', GUARD_LUA]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory`)
  const env: NodeJS.ProcessEnv = { ...process.env, GUARD_KIND: 'patch', GUARD_PET: String(PATCH_PET), GUARD_REQUESTS: String(requests) }
  if (paceMs !== undefined) env.GUARD_DELAY_MS = String(paceMs)
  const run = spawnWrk(args, env, seconds, { stopOn: GUARD_DONE })
  const done = run.done.then((m) => {
    if (m.non2xx > 0 || m.errors > 0)
      throw new Error(`${running.server.label}: ${m.non2xx} answers not 2xx, socket errors ${m.errorDetail}`)
    return m
  })
  return { ...run, done }
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
  /**
   * Without load: the server's CPU from the import's exit until the drain ended, per message added
   * meanwhile. The delivery's own work a row (reading, encoding, publishing, recording its cursor),
   * with no PATCH to share a commit with or to lose cores to the broker.
   */
  cpuNsPerMessage?: number
  patches?: number
}

async function drain(service: Service, dest: Destination, start: number, dataset: Dataset, withLoad: boolean): Promise<Drain> {
  const { running } = service
  const load = withLoad ? startWrk(running, LOAD_MAX_REQUESTS, LOAD_MAX_SECONDS) : undefined
  try {
    if (load) await sleep(LOAD_LEAD_MS)
    const importStart = performance.now()
    await runNode(service.cli, ['import', 'inventory', dataset.file], service.env, CLI_TIMEOUT_MS)
    const t0 = performance.now()
    const cpu0 = load ? undefined : await cpuNsOf(running.server.pid)
    const count0 = await dest.count()
    const target = (await ledgerEnd(running)) - start
    let count = count0
    const t1 = await waitUntil(async () => {
      count = await dest.count()
      return count >= target
    }, DRAIN_TIMEOUT_MS)
    const cpu1 = load ? undefined : await cpuNsOf(running.server.pid)
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
      ...(cpu0 !== undefined && cpu1 !== undefined && count > count0 ? { cpuNsPerMessage: (cpu1 - cpu0) / (count - count0) } : {}),
    }
  } finally {
    load?.stop()
    await load?.done.catch(() => {})
  }
}

const stateOf = (service: Service) => webhook(service.running, service.subscription ?? 0)
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
  const load = await startWrk(running, requests, ROUND_MAX_SECONDS, PACE_MS).done
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

/** One (backend, broker)'s figures. */
export interface ComboResult {
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
  /** Messages the stream/queue held at the end, and how far the subscription's cursor moved. */
  held: number
  cursorMoved: number
}

async function runCombo(
  cli: string,
  backend: Backend,
  broker: Broker,
  small: Dataset,
  big: Dataset,
  log: (l: string) => void,
): Promise<ComboResult> {
  const name = `${backend.name}/${broker}`
  log(`${name}: making the destination and starting the services (with: ${small.items.length} entries, none: ${big.items.length})`)
  const dest = await openDestination(broker)
  const services: Service[] = []
  try {
    const withSub = await startBenchService(cli, backend, small, `brokers-with-${broker}`)
    services.push(withSub)
    const none = await startBenchService(cli, backend, big, `brokers-none-${broker}`)
    services.push(none)
    await checkPatch(withSub.running, small)
    await checkPatch(none.running, big)

    const sub = await subscribe(withSub.running, dest.url)
    withSub.subscription = sub.id
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
      log(
        `${name}: backlog of ${idle.behindAtStart} rows, no PATCHes: ${Math.round(idle.perSecond)} changes/s (${Math.round(idle.ms)} ms, ` +
          `server CPU ${((idle.cpuNsPerMessage ?? Number.NaN) / 1000).toFixed(1)} µs a message)`,
      )
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
      held,
      cursorMoved: final.deliveredThrough - start,
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

// ---------------------------------------------------------------- the group

/** Why a broker cannot be used (it does not answer, or JetStream is off), or undefined when it answers. */
async function brokerUnavailable(broker: Broker): Promise<string | undefined> {
  try {
    if (broker === 'jetstream') {
      const nc = await natsConnect({ servers: NATS_HOST, name: 'petstore-bench-probe', timeout: PROBE_TIMEOUT_MS, reconnect: false })
      try {
        await (await jetstreamManager(nc, { timeout: PROBE_TIMEOUT_MS })).getAccountInfo()
      } finally {
        await nc.close().catch(() => {})
      }
    } else {
      const model = await amqpConnect(`amqp://guest:guest@${AMQP_HOST}`, { timeout: PROBE_TIMEOUT_MS })
      await model.close().catch(() => {})
    }
    return undefined
  } catch (err) {
    return message(err).split('\n')[0] || 'no answer'
  }
}

/** A (backend, broker) step: its figures, or why it failed (a failure is an error of the run, a missed goal is not). */
export interface BrokerRow {
  backend: string
  broker: Broker
  result?: ComboResult
  failure?: string
}

export interface BrokersResult extends WrkGroupRun {
  settings: { backlog: number; rounds: number; roundPatches: number; connections: number; idleDrain: boolean; paceMs?: number }
  goals: { throughput: Readonly<Record<Broker, number>>; cpuRatio: number }
  backends: string[]
  /** The brokers that answered (measured). */
  brokers: Broker[]
  /** Why some rows are missing (a broker or PostgreSQL that did not answer). */
  notes: string[]
  rows: BrokerRow[]
  seconds: number
}

/** Whether this module is the process's entry point (`node dist/bench/brokers.js`), not imported by run.ts. */
function isEntryPoint(): boolean {
  const entry = process.argv[1]
  if (entry === undefined) return false
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}
const STANDALONE = isEntryPoint()

/**
 * Upper bound on the group's run time, for run.ts's watchdog (and the standalone run's): per backend
 * and broker, a minute for the destination, the two services (their imports) and their stop; per
 * backlog drain (two, or one with BROKERS_IDLE=0) 15 s plus 0.3 ms a row (the import and its
 * delivery); per round (the warm-up one included) and service 10 s plus 1 ms a PATCH (wrk and the
 * drain after it, at no less than 1,000 PATCH/s).
 */
export function brokersBudgetMs(backends: number, brokers: number = BROKERS.length): number {
  const drains = (IDLE_DRAIN ? 2 : 1) * (15_000 + BACKLOG * 0.3)
  const rounds = (ROUNDS + 1) * 2 * (10_000 + ROUND_PATCHES)
  return 30_000 + backends * brokers * (60_000 + drains + rounds)
}

export async function runBrokers(
  cli: string,
  backends: readonly Backend[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<BrokersResult> {
  const started = performance.now()
  const result: BrokersResult = {
    ...wrkGroupRun(loadAverage, 'BROKERS_', STANDALONE ? 'node dist/bench/brokers.js' : 'npm run bench'),
    settings: {
      backlog: BACKLOG,
      rounds: ROUNDS,
      roundPatches: ROUND_PATCHES,
      connections: LOAD_CONNECTIONS,
      idleDrain: IDLE_DRAIN,
      ...(PACE_MS === undefined ? {} : { paceMs: PACE_MS }),
    },
    goals: { throughput: THROUGHPUT_GOAL, cpuRatio: CPU_RATIO_GOAL },
    backends: backends.map((b) => b.name),
    brokers: [],
    notes: [],
    rows: [],
    seconds: 0,
  }
  if (!result.backends.includes('postgres')) result.notes.push('PostgreSQL was not reachable, so its rows are missing.')
  for (const broker of BROKERS) {
    const reason = await brokerUnavailable(broker)
    if (reason === undefined) result.brokers.push(broker)
    else {
      log(`skipping ${BROKER_NAME[broker]}: ${BROKER_HOST[broker]} did not answer (${reason})`)
      result.notes.push(`${BROKER_NAME[broker]} (${BROKER_HOST[broker]}) did not answer (${reason}), so its rows are skipped.`)
    }
  }
  if (result.brokers.length > 0) {
    log(
      `brokers: ${result.brokers.join(', ')} on ${result.backends.join(', ')}; backlog ${BACKLOG} rows, ` +
        `${ROUNDS} CPU rounds of ${ROUND_PATCHES} PATCHes`,
    )
    const small = await makeDataset(dir, SMALL_INVENTORY)
    const big = await makeDataset(dir, BACKLOG)
    for (const backend of backends) {
      for (const broker of result.brokers) {
        const row: BrokerRow = { backend: backend.name, broker }
        try {
          const combo = await runCombo(cli, backend, broker, small, big, log)
          row.result = combo
          if (!combo.consistent || combo.finalState !== 'active') {
            row.failure =
              `at the end the subscription was ${combo.finalState} and its cursor had moved ${combo.cursorMoved} rows ` +
              `while the ${broker === 'jetstream' ? 'stream' : 'queue'} held ${combo.held} messages`
          }
        } catch (err) {
          row.failure = message(err)
        }
        if (row.failure !== undefined) log(`  FAILED brokers ${backend.name}/${broker}:\n${row.failure}`)
        result.rows.push(row)
      }
    }
  }
  result.seconds = (performance.now() - started) / 1000
  return result
}

/** Removes every stream, exchange and queue still made here (run.ts's watchdog, SIGINT and SIGTERM call it). */
export async function removeBrokerDestinations(): Promise<void> {
  await Promise.allSettled([...cleanups].map((close) => close()))
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- brokers: start -->', end: '<!-- brokers: end -->' }
const int = (n: number) => Math.round(n).toLocaleString('en-US')
const verdict = (met: boolean) => (met ? 'met' : 'below goal')
const range = (values: readonly number[]) => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`

/** Per backend and broker: the throughput goal and the CPU ratio goal (not measured when the broker was skipped or the step failed). */
export function brokersGoals(r: BrokersResult): Goal[] {
  const goals: Goal[] = []
  for (const backend of r.backends) {
    for (const broker of BROKERS) {
      const row = r.rows.find((x) => x.backend === backend && x.broker === broker)
      const c = row?.failure === undefined ? row?.result : undefined
      const why = !r.brokers.includes(broker) ? 'skipped: the broker did not answer' : row?.failure !== undefined ? 'failed' : '-'
      goals.push({
        goal: `${backend}: one ${BROKER_NAME[broker]} subscription delivers ≥ ${int(r.goals.throughput[broker])} changes/s while PATCHes run`,
        measured: c ? `${int(c.loaded.perSecond)} changes/s under ${int(c.loaded.patchPerSecond ?? 0)} PATCH/s` : why,
        met: c?.throughputMet,
      })
      goals.push({
        goal: `${backend}: the server's CPU per PATCH with one ${BROKER_NAME[broker]} subscription ≤ ${r.goals.cpuRatio} × none`,
        measured: c
          ? `${c.cpuRatio.toFixed(3)} × (${c.cpuWithUs.toFixed(1)} vs ${c.cpuNoneUs.toFixed(1)} µs, median of ${c.rounds.length} rounds)`
          : why,
        met: c?.cpuRatioMet,
      })
    }
  }
  return goals
}

function table(r: BrokersResult): string[][] {
  return [
    [
      'Backend',
      'Broker',
      'Backlog delivered/s under PATCHes (goal)',
      'PATCH/s meanwhile',
      'Delivered/s, no PATCHes',
      'Server CPU/message then (µs)',
      'CPU/PATCH none (µs)',
      'with one subscription (µs)',
      `Ratio, median of ${r.settings.rounds} (goal ≤ ${r.goals.cpuRatio})`,
      'Slowest drain after a round',
    ],
    ...r.rows.flatMap((row) => {
      const c = row.result
      if (c === undefined) return []
      return [
        [
          c.backend,
          c.broker,
          `${int(c.loaded.perSecond)} (≥ ${int(c.throughputGoal)}: ${verdict(c.throughputMet)})`,
          int(c.loaded.patchPerSecond ?? 0),
          c.idle ? int(c.idle.perSecond) : '-',
          c.idle?.cpuNsPerMessage === undefined ? '-' : (c.idle.cpuNsPerMessage / 1000).toFixed(1),
          c.cpuNoneUs.toFixed(1),
          c.cpuWithUs.toFixed(1),
          `${c.cpuRatio.toFixed(3)} (${verdict(c.cpuRatioMet)}; rounds ${range(c.rounds.map((x) => x.ratio))})`,
          `${int(c.slowestDrainMs)} ms`,
        ],
      ]
    }),
  ]
}

const settingsText = (r: BrokersResult): string =>
  `backlog ${int(r.settings.backlog)} rows (one import); PATCH load wrk -t1 -c${r.settings.connections} on one pet; ` +
  `CPU rounds of ${int(r.settings.roundPatches)} PATCHes` +
  (r.settings.paceMs === undefined ? ' flat out' : `, paced (each connection ${r.settings.paceMs} ms between an answer and its next PATCH)`)

const failed = (r: BrokersResult) =>
  r.rows.flatMap((x) => (x.failure === undefined ? [] : [{ what: `${x.backend}/${x.broker}`, failure: x.failure }]))

/** The brokers section of RESULTS.md (markdown, between its markers). */
export function renderBrokers(r: BrokersResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Webhook subscriptions into brokers',
    run: r,
    source: 'bench/brokers.ts',
    about:
      `Node ${r.node}; ${r.wrk}; backends ${r.backends.join(', ')}; brokers ${r.brokers.join(', ') || 'none'}; ${settingsText(r)};` +
      ` ${Math.round(r.seconds)} s. How each figure is measured: [README.md](README.md#message-brokers).`,
    body: r.rows.some((x) => x.result !== undefined) ? [...mdTable(table(r)), ''] : ['Nothing was measured.', ''],
    notes: r.notes,
    failures: failed(r),
    goalsTitle: 'Broker goals',
    goals: brokersGoals(r),
  })
}

export function brokersConsole(r: BrokersResult): string {
  const blocks = [`${settingsText(r)}; ${Math.round(r.seconds)} s`]
  if (r.rows.some((x) => x.result !== undefined)) blocks.push(textTable(table(r)))
  return sectionConsole({ blocks, notes: r.notes, failures: failed(r), goals: brokersGoals(r) })
}

/** RESULTS.md's brokers section as it stands (markers included), or undefined. */
export const readBrokersSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its brokers section, or after everything else. */
export const writeBrokersSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)

// ---------------------------------------------------------------- alone: node dist/bench/brokers.js

const log = (line: string): void => {
  console.error(`[brokers ${new Date().toISOString().slice(11, 19)}] ${line}`)
}

let workDir: string | undefined

async function main(): Promise<number> {
  if (!existsSync(CLI)) {
    console.error(`brokers: ${CLI} not found; run npm run build first`)
    return 1
  }
  if (wrkVersion() === undefined) {
    console.error('brokers: wrk not found (apt-get install wrk)')
    return 1
  }
  const backends = await availableBackends(log)
  workDir = await mkdtemp(join(tmpdir(), 'petstore-bench-brokers-'))
  const result = await runBrokers(CLI, backends, workDir, log, loadAverage())
  console.log(`\n${renderBrokers(result)}`)
  console.log(`\`\`\`json\n${JSON.stringify(result, null, 2)}\n\`\`\``)
  const failed = result.rows.filter((r) => r.failure !== undefined)
  if (failed.length > 0) {
    console.error(`brokers: ${failed.length} step(s) failed: ${failed.map((r) => `${r.backend}/${r.broker}`).join(', ')}`)
    return 1
  }
  return 0
}

async function cleanUp(): Promise<void> {
  killAllChildren()
  await removeBrokerDestinations()
  await disposeOpenDatabases()
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true })
}

if (STANDALONE) {
  const budgetMs = brokersBudgetMs(2)
  let aborting = false
  const abort = (code: number): void => {
    killAllChildren()
    if (aborting) return
    aborting = true
    void cleanUp().finally(() => process.exit(code))
  }
  const watchdog = setTimeout(() => {
    console.error(`brokers: exceeded ${Math.round(budgetMs / 1000)} s overall; killing the servers`)
    abort(1)
  }, budgetMs)
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
}
