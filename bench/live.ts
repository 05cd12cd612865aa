// The live-changes scenarios (issue 24's goals), on each backend and on a bare node:http baseline
// (bench/bare-live.ts) in the same run:
//   live-webhook: one webhook subscription keeps up with a fixed PATCH rate (BENCH_LIVE_RATE, 1,100/s by
//     default) for BENCH_LIVE_SECONDS; delivered/s, the lag at the end and how long it takes to drain;
//     then the delivery's capacity with a backlog (wrk PATCHes flat out for a moment, then nothing).
//   live-streams: server RSS with 1,000 open change streams minus before them, and the time from a PATCH's
//     200 to each of the 1,000 clients receiving its event (clients in bench/live-clients.ts).
//   live-patch: PATCH throughput (wrk, as the patch scenario) with one webhook and 100 streams open,
//     against the same server with none, alternating, in BENCH_ROUNDS rounds; bare PATCH beside them.
// Results go into bench/RESULTS.md's live-changes section (renderLive, writeLiveSection).
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Backend } from './backends.js'
import { DURATION_SECONDS, envNumber, FIRST_PET_ID, LARGE_INVENTORY, WARMUP_SECONDS } from './config.js'
import { type Clients, type Receiver, runPatcher, startClients, startReceiver } from './live-children.js'
import type { PatcherResult } from './live-patcher.js'
import type { ReceiverStats } from './live-receiver.js'
import { cpuPerRequest, runLoad, type LoadSpec, type Measured } from './load.js'
import { type CpuTime, cpuTimeOf, freePort, HOST, machineTicks, memoryOf, startServer, stealPercent } from './procs.js'
import { mdTable } from './report.js'
import { generatedBy, writeSection } from './results-section.js'
import { checkPatch, makeDataset, serviceEnv, startService, type Dataset, type Running } from './targets.js'

export const LIVE_SCENARIO_IDS = ['live-webhook', 'live-streams', 'live-patch'] as const
export type LiveScenarioId = (typeof LIVE_SCENARIO_IDS)[number]
/** `live` in BENCH_SCENARIOS names the three. */
export const LIVE_GROUP = 'live'

/** The live scenarios BENCH_SCENARIOS selects (all three when it is unset). */
export function selectLive(ids: readonly string[] | undefined): LiveScenarioId[] {
  if (ids === undefined || ids.includes(LIVE_GROUP)) return [...LIVE_SCENARIO_IDS]
  return LIVE_SCENARIO_IDS.filter((id) => ids.includes(id))
}

/** The webhook goal: at least this many changes a second delivered, sustained. */
export const WEBHOOK_GOAL_PER_S = 1000
/** ... and the lag left at the end of the load delivered within this. */
export const DRAIN_GOAL_MS = 5000
/** PATCHes a second the webhook scenario drives (env BENCH_LIVE_RATE): above the goal, so meeting it means keeping up. */
export const LIVE_RATE = envNumber('BENCH_LIVE_RATE', 1100, 1)
/** Seconds of that load (env BENCH_LIVE_SECONDS). */
export const LIVE_SECONDS = Math.floor(envNumber('BENCH_LIVE_SECONDS', 8, 1))
/** The longest the bench waits for the lag to drain after the load, and after the warm-up (then it goes on). */
const DRAIN_WAIT_MS = 15_000
const WARMUP_DRAIN_WAIT_MS = 5_000
/** The capacity step: wrk PATCHes flat out for this long, then deliveries are counted over CAPACITY_SECONDS. */
const BACKLOG_SECONDS = 2
const CAPACITY_SECONDS = 3

export const STREAMS = 1000
export const STREAM_RSS_GOAL_MB = 100
export const FANOUT_GOAL_MS = 1000
/** PATCHes sent (one a second) while 1,000 streams are open; each one's event is timed on every stream. */
const FANOUT_PATCHES = 5
const FANOUT_GAP_MS = 1000

/** Streams open in live-patch (env BENCH_LIVE_STREAMS; 0 leaves them out, to see what the webhook costs alone). */
export const PATCH_STREAMS = envNumber('BENCH_LIVE_STREAMS', 100, 0)
/** Whether live-patch subscribes a webhook (env BENCH_LIVE_WEBHOOK=0 leaves it out, to see what the streams cost alone). */
export const PATCH_WEBHOOK = process.env.BENCH_LIVE_WEBHOOK !== '0'
/** The issue's goal is for 1 webhook and 100 streams; another mix is measured, not judged. */
const PATCH_MIX_IS_THE_GOALS = PATCH_WEBHOOK && PATCH_STREAMS === 100
const PATCH_MIX = `${PATCH_WEBHOOK ? 1 : 0} webhook + ${PATCH_STREAMS} streams`
export const PATCH_RATIO_GOAL = 0.9

const STREAM_PATH = '/v1/inventory/changes/stream'
const BARE_LIVE = fileURLToPath(new URL('./bare-live.js', import.meta.url))
const READY_PATH = '/v1/openapi.json'

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const now = (): number => performance.timeOrigin + performance.now()
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

/** The service's env for the live scenarios: deliveries to 127.0.0.1 allowed, 1,000 streams on the one key. */
function liveEnv(url: string): NodeJS.ProcessEnv {
  return { ...serviceEnv(url), WEBHOOK_ALLOW_PRIVATE: 'true', STREAM_MAX_PER_KEY: String(STREAMS) }
}

interface LiveTarget {
  /** 'service/<backend>' or 'bare'. */
  name: string
  start(): Promise<Running>
  /** The bare baseline takes its webhook URL at start (no subscription API). */
  bare: boolean
}

/** Fresh database, key, 10,000 entries, then `serve` with liveEnv. */
function startLiveService(cli: string, backend: Backend, dataset: Dataset, label: string): Promise<Running> {
  return startService(cli, backend, dataset, label, liveEnv)
}

/** bench/bare-live.js on the dataset; with a receiver, it POSTs every change there (signed with `secret`). */
async function startBareLive(dataset: Dataset, webhook?: { port: number; secret: string }): Promise<Running> {
  const token = randomBytes(24).toString('base64url')
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, HOST, PORT: String(port), BARE_TOKEN: token, BARE_INVENTORY: dataset.file }
  if (webhook) {
    env.BARE_WEBHOOK_URL = `http://${HOST}:${webhook.port}/hook`
    env.BARE_WEBHOOK_SECRET = webhook.secret
  }
  const server = await startServer('bare-live', BARE_LIVE, [], env, port, READY_PATH)
  return { server, token, stop: () => server.stop() }
}

/** POST /v1/webhooks {url}: the subscription's secret. */
async function subscribe(running: Running, receiverPort: number): Promise<string> {
  const res = await fetch(`${running.server.baseUrl}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://${HOST}:${receiverPort}/hook` }),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  if (res.status !== 201) throw new Error(`${running.server.label}: POST /v1/webhooks -> ${res.status} ${text.slice(0, 300)}`)
  return (JSON.parse(text) as { secret: string }).secret
}

/** The last committed seq after `after`, and how many rows lie between, paging GET /v1/inventory/changes. */
async function ledgerEnd(running: Running, after: number): Promise<{ lastSeq: number; rows: number }> {
  let lastSeq = after
  let rows = 0
  for (let page = 0; page < 1000; page++) {
    const res = await fetch(`${running.server.baseUrl}/v1/inventory/changes?after=${lastSeq}&limit=1000`, {
      headers: { authorization: `Bearer ${running.token}` },
      signal: AbortSignal.timeout(10_000),
    })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`${running.server.label}: GET /v1/inventory/changes -> ${res.status} ${text.slice(0, 300)}`)
    const list = JSON.parse(text) as { seq: number }[]
    if (list.length === 0) break
    rows += list.length
    lastSeq = list.at(-1)!.seq
    if (list.length < 1000) break
  }
  return { lastSeq, rows }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(everyMs)
  }
}

// ---------------------------------------------------------------- live-webhook

export interface WebhookResult {
  target: string
  patcher?: PatcherResult
  /** Messages delivered while the PATCHes ran, per second of that window. */
  deliveredPerS?: number
  /** Committed rows not yet delivered when the load ended (last committed seq vs last delivered). */
  lagAtEnd?: number
  /** From the last PATCH's answer until the last committed row was delivered (0 when nothing lagged). */
  drainMs?: number
  /** Messages from the first PATCH until the lag drained, per second of that time. */
  sustainedPerS?: number
  /** Deliveries per second with a backlog and no other load. */
  capacityPerS?: number
  capacityBacklogLeft?: boolean
  /** Server CPU per delivered message during the fixed-rate load (PATCH handling included), µs. */
  cpuUsPerChange?: number
  receiver?: ReceiverStats
  failure?: string
}

async function webhookRun(target: LiveTarget, dataset: Dataset, receiver: Receiver, log: (l: string) => void): Promise<WebhookResult> {
  const result: WebhookResult = { target: target.name }
  receiver.reset()
  let running: Running | undefined
  try {
    const secret = `whsec_${randomBytes(32).toString('base64')}`
    running = target.bare ? await startBareLive(dataset, { port: receiver.port, secret }) : await target.start()
    receiver.setSecret(target.bare ? secret : await subscribe(running, receiver.port))
    await checkPatch(running, dataset)
    await until('the first message', async () => (await receiver.stats()).received >= 1, 15_000)
    const job = {
      baseUrl: running.server.baseUrl,
      token: running.token,
      rate: LIVE_RATE,
      firstPetId: FIRST_PET_ID,
      petCount: dataset.items.length,
    }
    if (WARMUP_SECONDS > 0) {
      await runPatcher({ ...job, seconds: WARMUP_SECONDS })
      const end = await ledgerEnd(running, (await receiver.stats()).lastSeq ?? 0)
      await until('the warm-up drain', async () => ((await receiver.stats()).lastSeq ?? 0) >= end.lastSeq, WARMUP_DRAIN_WAIT_MS).catch(
        () => {},
      )
    }
    const s0 = await receiver.stats()
    const cpu0 = await cpuTimeOf(running.server.pid)
    const patcher = await runPatcher({ ...job, seconds: LIVE_SECONDS })
    const s1 = await receiver.stats()
    const cpu1 = await cpuTimeOf(running.server.pid)
    result.patcher = patcher
    const windowS = (patcher.endedAtMs - patcher.startedAtMs) / 1000
    result.deliveredPerS = (s1.received - s0.received) / windowS
    const delivered = s1.lastSeq ?? 0
    const end = await ledgerEnd(running, delivered)
    result.lagAtEnd = end.rows
    let drained: ReceiverStats | undefined
    await until(
      'the lag to drain',
      async () => {
        drained = await receiver.stats()
        return (drained.lastSeq ?? 0) >= end.lastSeq
      },
      DRAIN_WAIT_MS,
    ).catch(() => {})
    if (drained && (drained.lastSeq ?? 0) >= end.lastSeq && drained.lastAtMs !== undefined) {
      result.drainMs = Math.max(0, drained.lastAtMs - patcher.endedAtMs)
      result.sustainedPerS =
        (drained.received - s0.received) / ((Math.max(drained.lastAtMs, patcher.endedAtMs) - patcher.startedAtMs) / 1000)
    }
    const cpu = cpuPerRequest(cpu0, cpu1, s1.received - s0.received)
    if (cpu.cpuUserUs !== undefined) result.cpuUsPerChange = cpu.cpuUserUs + (cpu.cpuSysUs ?? 0)
    // Capacity: a backlog (wrk flat out for a moment), then deliveries alone.
    const spec: LoadSpec = {
      url: `${running.server.baseUrl}/v1/inventory`,
      token: running.token,
      rotation: { script: 'patch', firstPetId: FIRST_PET_ID, petCount: dataset.items.length },
    }
    await runLoad(spec, BACKLOG_SECONDS)
    const c0 = await receiver.stats()
    const t0 = performance.now()
    await sleep(CAPACITY_SECONDS * 1000)
    const c1 = await receiver.stats()
    result.capacityPerS = (c1.received - c0.received) / ((performance.now() - t0) / 1000)
    result.capacityBacklogLeft = (await ledgerEnd(running, c1.lastSeq ?? 0)).rows > 0
    result.receiver = await receiver.stats()
    log(
      `  ${target.name}: ${patcher.achievedRate.toFixed(0)} PATCH/s answered, ${result.deliveredPerS.toFixed(0)} delivered/s, ` +
        `lag at the end ${result.lagAtEnd}, drained in ${result.drainMs === undefined ? `NOT within ${DRAIN_WAIT_MS / 1000} s` : `${result.drainMs.toFixed(0)} ms`}; ` +
        `capacity ${result.capacityPerS.toFixed(0)}/s; receiver: ${result.receiver.missing} missing, ${result.receiver.notAscending} out of order, ` +
        `${result.receiver.malformed} malformed, ${result.receiver.badSignatures} bad signatures`,
    )
  } catch (err) {
    result.failure = message(err)
    log(`  FAILED live-webhook / ${target.name}: ${result.failure}`)
  }
  if (running) {
    try {
      await running.stop()
    } catch (err) {
      result.failure ??= message(err)
    }
  }
  return result
}

// ---------------------------------------------------------------- live-streams

export interface StreamsResult {
  target: string
  opened?: number
  openMs?: number
  idleKiB?: number
  withStreamsKiB?: number
  /** Per PATCH: how many of the streams got its event, and the delivery latency from its 200 (ms). */
  patches?: { received: number; p50Ms: number; maxMs: number; maxFromSendMs: number }[]
  failure?: string
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN

async function streamsRun(target: LiveTarget, dataset: Dataset, clients: Clients, log: (l: string) => void): Promise<StreamsResult> {
  const result: StreamsResult = { target: target.name }
  let running: Running | undefined
  try {
    running = target.bare ? await startBareLive(dataset) : await target.start()
    await checkPatch(running, dataset)
    await sleep(1000)
    result.idleKiB = (await memoryOf(running.server.pid)).rssKiB
    const port = Number(new URL(running.server.baseUrl).port)
    const opened = await clients.open({ port, token: running.token, path: STREAM_PATH, count: STREAMS, record: true })
    result.opened = opened.opened
    result.openMs = opened.ms
    if (opened.failed > 0) throw new Error(`${opened.failed} of ${STREAMS} streams failed to open (first: ${opened.firstError})`)
    await sleep(2000)
    result.withStreamsKiB = (await memoryOf(running.server.pid)).rssKiB
    const sent: { sentAt: number; answeredAt: number }[] = []
    for (let i = 0; i < FANOUT_PATCHES; i++) {
      const pet = dataset.items[(i + 1) % dataset.items.length]!
      const sentAt = now()
      const res = await fetch(`${running.server.baseUrl}/v1/inventory/${pet.petId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ quantity: 1_000_000 + i }),
        signal: AbortSignal.timeout(10_000),
      })
      await res.arrayBuffer()
      const answeredAt = now()
      if (res.status !== 200) throw new Error(`PATCH -> ${res.status}`)
      sent.push({ sentAt, answeredAt })
      await sleep(FANOUT_GAP_MS)
    }
    await sleep(1000)
    const collected = await clients.collect()
    // Nothing else writes: the i-th event id is the i-th PATCH's row.
    const ids = Object.keys(collected.arrivals)
      .map(Number)
      .sort((a, b) => a - b)
    if (ids.length !== FANOUT_PATCHES) throw new Error(`the streams saw ${ids.length} distinct events, expected ${FANOUT_PATCHES}`)
    result.patches = ids.map((id, i) => {
      const times = [...(collected.arrivals[String(id)] ?? [])].sort((a, b) => a - b)
      const { sentAt, answeredAt } = sent[i]!
      const fromAnswer = times.map((t) => t - answeredAt)
      return {
        received: times.length,
        p50Ms: percentile(fromAnswer, 0.5),
        maxMs: fromAnswer.at(-1) ?? Number.NaN,
        maxFromSendMs: (times.at(-1) ?? Number.NaN) - sentAt,
      }
    })
    const worst = Math.max(...result.patches.map((p) => p.maxMs))
    log(
      `  ${target.name}: ${result.opened} streams opened in ${result.openMs.toFixed(0)} ms; RSS ${(result.idleKiB / 1024).toFixed(0)} -> ` +
        `${(result.withStreamsKiB / 1024).toFixed(0)} MiB; each PATCH reached ${result.patches.map((p) => p.received).join('/')} streams, ` +
        `slowest ${worst.toFixed(1)} ms after its 200`,
    )
  } catch (err) {
    result.failure = message(err)
    log(`  FAILED live-streams / ${target.name}: ${result.failure}`)
  }
  await clients.closeAll().catch(() => {})
  if (running) {
    try {
      await running.stop()
    } catch (err) {
      result.failure ??= message(err)
    }
  }
  return result
}

// ---------------------------------------------------------------- live-patch

export interface PatchRow {
  /** 'service/<backend>', 'service/<backend> + live', 'bare' or 'bare + live'. */
  target: string
  backend?: string
  live: boolean
  /** For 'bare + live': the secret its webhook signs with (bare-live.ts takes its receiver at start). */
  bareSecret?: string
  runs: Measured[]
  /** Webhook messages delivered and stream events received (over all streams) during each measured run. */
  delivered: number[]
  streamEvents: number[]
  /**
   * CPU the processes took during each measured run, in cores (CPU seconds ÷ wall seconds): the server,
   * and the stream clients plus the webhook receiver (on this machine too, so their CPU is not the
   * server's or wrk's).
   */
  serverCores: (number | undefined)[]
  consumerCores: (number | undefined)[]
  failure?: string
}

const noRuns = () => ({ runs: [], delivered: [], streamEvents: [], serverCores: [], consumerCores: [] })

/** CPU seconds a process took between two readings ÷ the wall seconds between them. */
function coresOf(before: CpuTime | undefined, after: CpuTime | undefined, wallMs: number): number | undefined {
  if (!before || !after || wallMs <= 0) return undefined
  return (after.userUs + after.sysUs - before.userUs - before.sysUs) / (wallMs * 1000)
}

async function patchRun(
  row: PatchRow,
  start: () => Promise<Running>,
  dataset: Dataset,
  receiver: Receiver,
  clients: Clients,
  log: (l: string) => void,
): Promise<void> {
  let running: Running | undefined
  try {
    running = await start()
    await checkPatch(running, dataset)
    if (row.live) {
      receiver.reset()
      if (PATCH_WEBHOOK) receiver.setSecret(row.bareSecret ?? (await subscribe(running, receiver.port)))
      const port = Number(new URL(running.server.baseUrl).port)
      const opened = await clients.open({ port, token: running.token, path: STREAM_PATH, count: PATCH_STREAMS, record: false })
      if (opened.failed > 0) throw new Error(`${opened.failed} of ${PATCH_STREAMS} streams failed to open (first: ${opened.firstError})`)
      await checkPatch(running, dataset) // a change after the subscription, so it is delivered before the load
      if (PATCH_WEBHOOK) await until('the first message', async () => (await receiver.stats()).received >= 1, 15_000)
    }
    const spec: LoadSpec = {
      url: `${running.server.baseUrl}/v1/inventory`,
      token: running.token,
      rotation: { script: 'patch', firstPetId: FIRST_PET_ID, petCount: dataset.items.length },
    }
    if (WARMUP_SECONDS > 0) await runLoad(spec, WARMUP_SECONDS)
    const [r0, e0] = row.live ? [await receiver.stats(), await clients.collect()] : [undefined, undefined]
    const consumers = [clients.pid, receiver.pid]
    const [cpuBefore, machineBefore] = [await cpuTimeOf(running.server.pid), await machineTicks()]
    const consumersBefore = await Promise.all(consumers.map(cpuTimeOf))
    const startedAt = performance.now()
    const measured = await runLoad(spec, DURATION_SECONDS)
    const wallMs = performance.now() - startedAt
    const [cpuAfter, machineAfter] = [await cpuTimeOf(running.server.pid), await machineTicks()]
    const consumersAfter = await Promise.all(consumers.map(cpuTimeOf))
    row.serverCores.push(coresOf(cpuBefore, cpuAfter, wallMs))
    const consumerShares = consumers.map((_, i) => coresOf(consumersBefore[i], consumersAfter[i], wallMs))
    row.consumerCores.push(consumerShares.some((c) => c === undefined) ? undefined : consumerShares.reduce((a, c) => a! + c!, 0))
    const died = running.server.unexpectedExit()
    if (died !== undefined) throw new Error(`${running.server.label} exited during the run: ${died}`)
    const stealPct = stealPercent(machineBefore, machineAfter)
    row.runs.push({
      ...measured,
      ...cpuPerRequest(cpuBefore, cpuAfter, measured.completed),
      ...(stealPct === undefined ? {} : { stealPct }),
    })
    if (row.live && r0 && e0) {
      row.delivered.push((await receiver.stats()).received - r0.received)
      const e1 = await clients.collect()
      row.streamEvents.push(e1.events - e0.events)
      if (e1.closed > 0) log(`  note: ${e1.closed} streams were closed by the server (a client that stops reading is cut off)`)
    }
    log(
      `  ${row.target}: ${measured.rps.toFixed(0)} req/s, p99 ${measured.p99.toFixed(2)} ms, non-2xx ${measured.non2xx}, errors ${measured.errors}` +
        (row.live
          ? `; webhook delivered ${row.delivered.at(-1)}, streams got ${PATCH_STREAMS === 0 ? '-' : ((row.streamEvents.at(-1) ?? 0) / PATCH_STREAMS).toFixed(0)} events each`
          : ''),
    )
  } catch (err) {
    row.failure = message(err)
    log(`  FAILED live-patch / ${row.target}: ${row.failure}`)
  }
  if (row.live) await clients.closeAll().catch(() => {})
  if (running) {
    try {
      await running.stop()
    } catch (err) {
      row.failure ??= message(err)
    }
  }
}

// ---------------------------------------------------------------- the group

export interface LiveResult {
  date: string
  command: string
  note?: string
  loadAverage: number
  backends: string[]
  rounds: number
  webhook: WebhookResult[]
  streams: StreamsResult[]
  patch: PatchRow[]
}

/** `npm run bench` with the BENCH_ variables this run was given (BENCH_NOTE's text aside), for the record. */
export function benchCommand(): string {
  const vars = Object.entries(process.env)
    .filter(([name, value]) => name.startsWith('BENCH_') && name !== 'BENCH_NOTE' && value !== undefined && value !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${/^[\w.,/:-]+$/.test(value!) ? value : `'${value}'`}`)
  return [...vars, ...(process.env.BENCH_NOTE ? ["BENCH_NOTE='…'"] : []), 'npm run bench'].join(' ')
}

/** Upper bound on the group's run time, for run.ts's watchdog. */
export function liveBudgetMs(selected: readonly LiveScenarioId[], backends: number, rounds: number): number {
  const perStart = 60_000
  let ms = 0
  if (selected.includes('live-webhook'))
    ms += (backends + 1) * (perStart + (2 * WARMUP_SECONDS + LIVE_SECONDS + 60) * 1000 + DRAIN_WAIT_MS * 2)
  if (selected.includes('live-streams')) ms += (backends + 1) * (perStart + 180_000)
  if (selected.includes('live-patch')) ms += rounds * (2 * backends + 2) * (perStart + (WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 60_000)
  return ms
}

export async function runLive(
  cli: string,
  backends: readonly Backend[],
  selected: readonly LiveScenarioId[],
  dir: string,
  rounds: number,
  log: (l: string) => void,
  loadAverage: number,
): Promise<LiveResult> {
  const result: LiveResult = {
    date: new Date().toISOString(),
    command: benchCommand(),
    ...(process.env.BENCH_NOTE ? { note: process.env.BENCH_NOTE } : {}),
    loadAverage,
    backends: backends.map((b) => b.name),
    rounds,
    webhook: [],
    streams: [],
    patch: [],
  }
  const dataset = await makeDataset(join(dir), LARGE_INVENTORY)
  const services: LiveTarget[] = backends.map((backend) => ({
    name: `service/${backend.name}`,
    bare: false,
    start: () => startLiveService(cli, backend, dataset, 'live'),
  }))
  const bare: LiveTarget = { name: 'bare', bare: true, start: () => startBareLive(dataset) }
  const receiver = await startReceiver()
  const clients = startClients()
  try {
    if (selected.includes('live-webhook')) {
      log(`live-webhook: one subscription, ${LIVE_RATE} PATCH/s for ${LIVE_SECONDS} s, then the backlog capacity`)
      for (const target of [...services, bare]) result.webhook.push(await webhookRun(target, dataset, receiver, log))
    }
    if (selected.includes('live-streams')) {
      log(`live-streams: ${STREAMS} open streams, ${FANOUT_PATCHES} PATCHes fanned out`)
      for (const target of [...services, bare]) result.streams.push(await streamsRun(target, dataset, clients, log))
    }
    if (selected.includes('live-patch')) {
      log(`live-patch: PATCH throughput with ${PATCH_MIX} vs none, ${rounds} rounds`)
      const pairs = backends.map((backend) => {
        const start = () => startLiveService(cli, backend, dataset, 'live-patch')
        const row = (live: boolean): PatchRow => ({
          target: `service/${backend.name}${live ? ' + live' : ''}`,
          backend: backend.name,
          live,
          runs: [],
          delivered: [],
          streamEvents: [],
          serverCores: [],
          consumerCores: [],
        })
        return { plain: row(false), live: row(true), start }
      })
      const bareRow: PatchRow = { target: 'bare', live: false, ...noRuns() }
      // The same job on bare node:http: what the fan-out and the webhook cost a PATCH on this machine at the least.
      const bareSecret = `whsec_${randomBytes(32).toString('base64')}`
      const bareLiveRow: PatchRow = { target: 'bare + live', live: true, bareSecret, ...noRuns() }
      result.patch.push(...pairs.flatMap((p) => [p.plain, p.live]), bareRow, bareLiveRow)
      const steps: (() => Promise<void>)[][] = [
        ...pairs.map((p) => [
          () => patchRun(p.plain, p.start, dataset, receiver, clients, log),
          () => patchRun(p.live, p.start, dataset, receiver, clients, log),
        ]),
        [
          () => patchRun(bareRow, () => startBareLive(dataset), dataset, receiver, clients, log),
          () =>
            patchRun(
              bareLiveRow,
              () => startBareLive(dataset, PATCH_WEBHOOK ? { port: receiver.port, secret: bareSecret } : undefined),
              dataset,
              receiver,
              clients,
              log,
            ),
        ],
      ]
      for (let round = 0; round < rounds; round++) {
        log(`live-patch: round ${round + 1} of ${rounds}`)
        // Each pair runs back to back, its order flipped every round; the groups rotate.
        for (let i = 0; i < steps.length; i++) {
          const group = steps[(i + round) % steps.length]!
          for (const step of round % 2 === 0 ? group : [...group].reverse()) await step()
        }
      }
    }
  } finally {
    await clients.stop()
    await receiver.stop()
  }
  return result
}

// ---------------------------------------------------------------- the report

const MARK_START = '<!-- live-changes: start -->'
const MARK_END = '<!-- live-changes: end -->'
const num = (v: number | undefined, digits = 0): string => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits))
const mbOf = (kiB: number): number => (kiB * 1024) / 1e6

/** The median run by req/s (the higher middle one of an even count), as the wrk table reports. */
const medianRun = (row: PatchRow): Measured | undefined => [...row.runs].sort((a, b) => a.rps - b.rps)[Math.floor(row.runs.length / 2)]
const valid = (row: PatchRow): boolean =>
  row.failure === undefined && row.runs.length > 0 && row.runs.every((r) => r.errors === 0 && r.non2xx === 0)

export interface LiveGoal {
  goal: string
  measured: string
  met: boolean | undefined
}

export function liveGoals(r: LiveResult): LiveGoal[] {
  const goals: LiveGoal[] = []
  for (const w of r.webhook.filter((w) => w.target !== 'bare')) {
    const ok = w.failure === undefined && w.deliveredPerS !== undefined
    const clean =
      w.receiver !== undefined &&
      w.receiver.missing === 0 &&
      w.receiver.notAscending === 0 &&
      w.receiver.malformed === 0 &&
      w.receiver.badSignatures === 0
    goals.push({
      goal: `${w.target.replace('service/', '')}: one webhook delivers ≥ ${WEBHOOK_GOAL_PER_S} changes/s sustained (in seq order, no gap)`,
      measured: ok
        ? `${num(w.deliveredPerS)}/s while ${num(w.patcher?.achievedRate)} PATCH/s were answered; capacity with a backlog ${num(w.capacityPerS)}/s; ${clean ? 'in order, no gap' : 'ORDER/GAP/SIGNATURE problems (see the table)'}`
        : '-',
      met: ok ? (w.deliveredPerS ?? 0) >= WEBHOOK_GOAL_PER_S && clean : undefined,
    })
    goals.push({
      goal: `${w.target.replace('service/', '')}: the webhook's lag at the end of the load drains within ${DRAIN_GOAL_MS / 1000} s`,
      measured: ok
        ? `lag ${num(w.lagAtEnd)} changes, drained in ${w.drainMs === undefined ? `more than ${DRAIN_WAIT_MS / 1000} s` : `${num(w.drainMs)} ms`}`
        : '-',
      met: ok ? w.drainMs !== undefined && w.drainMs <= DRAIN_GOAL_MS : undefined,
    })
  }
  for (const s of r.streams.filter((s) => s.target !== 'bare')) {
    const ok = s.failure === undefined && s.idleKiB !== undefined && s.withStreamsKiB !== undefined && s.patches !== undefined
    const delta = ok ? mbOf(s.withStreamsKiB! - s.idleKiB!) : undefined
    goals.push({
      goal: `${s.target.replace('service/', '')}: ${STREAMS} open streams cost < ${STREAM_RSS_GOAL_MB} MB of server RSS`,
      measured: delta === undefined ? '-' : `${num(delta, 1)} MB (${num(mbOf(s.idleKiB!), 0)} → ${num(mbOf(s.withStreamsKiB!), 0)} MB)`,
      met: delta === undefined ? undefined : delta < STREAM_RSS_GOAL_MB,
    })
    const worst = ok ? Math.max(...s.patches!.map((p) => p.maxMs)) : undefined
    const all = ok && s.patches!.every((p) => p.received === STREAMS)
    goals.push({
      goal: `${s.target.replace('service/', '')}: one change reaches all ${STREAMS} streams within ${FANOUT_GOAL_MS} ms of its PATCH's 200`,
      measured:
        worst === undefined
          ? '-'
          : `slowest ${num(worst, 1)} ms over ${s.patches!.length} PATCHes (p50s ${s.patches!.map((p) => num(p.p50Ms, 1)).join(', ')} ms)${all ? '' : '; NOT every stream got every event'}`,
      met: worst === undefined ? undefined : all && worst <= FANOUT_GOAL_MS,
    })
  }
  for (const backend of r.backends) {
    const plain = r.patch.find((p) => p.backend === backend && !p.live)
    const live = r.patch.find((p) => p.backend === backend && p.live)
    if (!plain || !live) continue
    const [a, b] = [medianRun(plain), medianRun(live)]
    const ratio = valid(plain) && valid(live) && a && b ? b.rps / a.rps : undefined
    goals.push({
      goal: `${backend}: PATCH req/s with ${PATCH_MIX} ≥ ${PATCH_RATIO_GOAL} × without`,
      measured:
        ratio === undefined
          ? '-'
          : `${num(ratio, 2)} (${num(b?.rps)} vs ${num(a?.rps)} req/s, medians of ${live.runs.length} alternating rounds); ` +
            `server CPU per PATCH ${cpuText(b)} vs ${cpuText(a)} µs; the stream clients and the receiver took ` +
            `${live.consumerCores.map((c) => num(c, 2)).join(', ')} of the machine's cores`,
      met: ratio === undefined || !PATCH_MIX_IS_THE_GOALS ? undefined : ratio >= PATCH_RATIO_GOAL,
    })
  }
  return goals
}

const cpuText = (m: Measured | undefined): string =>
  m?.cpuUserUs === undefined || m.cpuSysUs === undefined ? '-' : num(m.cpuUserUs + m.cpuSysUs, 1)

/** A goal's verdict; a measured one without a verdict was run with another mix than the goal's (BENCH_LIVE_STREAMS, BENCH_LIVE_WEBHOOK). */
const verdict = (g: LiveGoal): string =>
  g.met !== undefined ? (g.met ? 'met' : 'NOT met') : g.measured === '-' ? 'not measured' : 'not judged'
const metText = (g: LiveGoal): string => (g.met === false ? `**${verdict(g)}**` : verdict(g))

/** The live-changes section of RESULTS.md (markdown, between its markers). */
export function renderLive(r: LiveResult): string {
  const goals = liveGoals(r)
  const met = goals.filter((g) => g.met === true).length
  const bareOf = <T extends { target: string }>(list: readonly T[]): T | undefined => list.find((x) => x.target === 'bare')
  const lines: string[] = [
    MARK_START,
    `## Live changes (${r.date.slice(0, 10)})`,
    '',
    ...(r.note ? [`**${r.note}**`, ''] : []),
    `${generatedBy(r, 'bench/live.ts')} backends ${r.backends.join(', ')}.` +
      ' How each figure is measured: [README.md](README.md#live-changes). `bare` is bench/bare-live.ts, the same job on node:http from memory' +
      ' (SSE fan-out of one shared Buffer per change; webhook messages signed and POSTed one at a time from an in-memory queue, no durable cursor).',
    '',
  ]
  if (r.webhook.length > 0) {
    lines.push(
      `### Webhook throughput (one subscription, ${LIVE_RATE} PATCH/s offered for ${LIVE_SECONDS} s)`,
      '',
      ...mdTable([
        [
          'Target',
          'PATCH/s answered (p50 / p99 ms)',
          'delivered/s during the load',
          'lag at the end',
          'drained after',
          'delivered/s until drained',
          'capacity/s with a backlog',
          'server CPU µs per delivered message (PATCHes included)',
          'received; missing / out of order / malformed / bad signature',
        ],
        ...r.webhook.map((w) =>
          w.failure !== undefined
            ? [w.target, `FAILED: ${w.failure.split('\n')[0] ?? ''}`, '', '', '', '', '', '', '']
            : [
                w.target,
                `${num(w.patcher?.achievedRate)} (${num(w.patcher?.p50Ms, 2)} / ${num(w.patcher?.p99Ms, 2)})`,
                num(w.deliveredPerS),
                num(w.lagAtEnd),
                w.drainMs === undefined ? `> ${DRAIN_WAIT_MS / 1000} s` : `${num(w.drainMs)} ms`,
                num(w.sustainedPerS),
                `${num(w.capacityPerS)}${w.capacityBacklogLeft === false ? ' (backlog ran out: at least this)' : ''}`,
                num(w.cpuUsPerChange, 1),
                w.receiver
                  ? `${w.receiver.received}; ${w.receiver.missing} / ${w.receiver.notAscending} / ${w.receiver.malformed} / ${w.receiver.badSignatures}`
                  : '-',
              ],
        ),
      ]),
      '',
    )
  }
  if (r.streams.length > 0) {
    const bare = bareOf(r.streams)
    lines.push(
      `### ${STREAMS} open streams`,
      '',
      ...mdTable([
        [
          'Target',
          'opened (ms)',
          'RSS idle',
          `RSS with ${STREAMS} streams`,
          'difference',
          'per stream',
          'streams reached by each PATCH',
          'p50 after the 200, per PATCH (ms)',
          'slowest after the 200 (ms)',
          'slowest after sending (ms)',
        ],
        ...r.streams.map((s) => {
          if (s.failure !== undefined || s.idleKiB === undefined || s.withStreamsKiB === undefined) {
            return [s.target, `FAILED: ${(s.failure ?? 'no result').split('\n')[0] ?? ''}`, '', '', '', '', '', '', '', '']
          }
          const delta = s.withStreamsKiB - s.idleKiB
          const patches = s.patches ?? []
          return [
            s.target,
            `${num(s.opened)} (${num(s.openMs)})`,
            `${num(mbOf(s.idleKiB))} MB`,
            `${num(mbOf(s.withStreamsKiB))} MB`,
            `${num(mbOf(delta), 1)} MB`,
            `${num((delta * 1024) / STREAMS / 1024, 1)} KiB`,
            patches.map((p) => p.received).join(', ') || '-',
            patches.map((p) => num(p.p50Ms, 1)).join(', ') || '-',
            num(Math.max(...patches.map((p) => p.maxMs)), 1),
            num(Math.max(...patches.map((p) => p.maxFromSendMs)), 1),
          ]
        }),
      ]),
      '',
      bare === undefined
        ? ''
        : 'The bare row is the same fan-out without Fastify, a database or a ledger tail: what the goal costs at the least.',
      '',
    )
  }
  if (r.patch.length > 0) {
    const bare = bareOf(r.patch)
    const bareRun = bare && valid(bare) ? medianRun(bare) : undefined
    lines.push(
      `### PATCH throughput with live changes active (wrk -t1 -c64, bench/patch.lua; ${r.rounds} rounds, alternating)`,
      '',
      ...mdTable([
        [
          'Target',
          'req/s',
          'req/s by round',
          'p50 ms',
          'p99 ms',
          'server CPU µs/req (user+sys)',
          'cores used by the server / by the stream clients + receiver, by round',
          'CPU steal % by round',
          '÷ without',
          '÷ bare',
          'webhook messages / stream events per stream, by round',
        ],
        ...r.patch.map((p) => {
          if (p.failure !== undefined && p.runs.length === 0)
            return [p.target, `FAILED: ${p.failure.split('\n')[0] ?? ''}`, '', '', '', '', '', '', '', '', '']
          const m = medianRun(p)
          const plain = p.live ? r.patch.find((q) => q.backend === p.backend && !q.live) : undefined
          const plainRun = plain && valid(plain) ? medianRun(plain) : undefined
          return [
            p.target + (valid(p) ? '' : ' (INVALID)'),
            num(m?.rps),
            p.runs.map((x) => num(x.rps)).join(', '),
            num(m?.p50, 2),
            num(m?.p99, 2),
            m?.cpuUserUs === undefined ? '-' : `${num(m.cpuUserUs, 1)} + ${num(m.cpuSysUs, 1)}`,
            p.serverCores.map((c, i) => `${num(c, 2)} / ${p.live ? num(p.consumerCores[i], 2) : '-'}`).join(', '),
            p.runs.map((x) => num(x.stealPct)).join(', '),
            plainRun && m && valid(p) ? num(m.rps / plainRun.rps, 2) : '-',
            bareRun && m && !p.target.startsWith('bare') ? num(m.rps / bareRun.rps, 2) : '-',
            p.live
              ? p.delivered.map((d, i) => `${d} / ${PATCH_STREAMS === 0 ? '-' : num((p.streamEvents[i] ?? 0) / PATCH_STREAMS)}`).join(', ')
              : '-',
          ]
        }),
      ]),
      '',
    )
  }
  lines.push(
    `### Live-changes goals (${met} of ${goals.filter((g) => verdict(g) !== 'not judged').length} met)`,
    '',
    ...mdTable([['Goal', 'Measured', 'Result'], ...goals.map((g) => [g.goal, g.measured, metText(g)])]),
    '',
    MARK_END,
    '',
  )
  return lines.join('\n')
}

export function liveConsole(r: LiveResult): string {
  return liveGoals(r)
    .map((g) => `${verdict(g)}  ${g.goal}: ${g.measured}`)
    .join('\n')
}

/** Puts `section` into RESULTS.md in place of its live-changes section, or after everything else. */
export const writeLiveSection = (path: string, section: string): Promise<void> =>
  writeSection(path, section, { start: MARK_START, end: MARK_END })
