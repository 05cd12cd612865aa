// What OpenTelemetry tracing costs the service (issue 39's goal: with tracing on and every request
// sampled, the server's CPU per PATCH at most 1.3 × off), on each backend (SQLite; PostgreSQL when it
// answers). Part of `npm run bench` (run.ts runs it after the message-broker group, and
// `BENCH_SCENARIOS=tracing` alone runs only it, replacing only its section of bench/RESULTS.md).
//
// Per backend, two services (five with the variants below) side by side on fresh databases of 100
// entries (each holding 2^31 - 1 units, so no order is refused), `petstore serve` as users run it
// (LOG_LEVEL info, rate limits counted but never reached), every OTEL_* variable of the bench's own
// environment removed:
//   off  nothing more: tracing off;
//   on   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port> of a sink collector (bench/otlp-sink.ts,
//        a process of its own: its CPU counts neither for the server nor inside the bench's event
//        loop) and nothing else: the default protocol (http/protobuf), sampler (parent-based always
//        on: every request sampled, wrk sends no traceparent) and batch processor settings;
// and, for patch-one only, the tracing-on variants of TRACING_VARIANTS (all three by default; empty:
// none), each a service of its own started like `on`, to show where on's cost goes and what a
// collector that cannot be reached does to a request:
//   unsampled        the endpoint of a sink of its own plus OTEL_TRACES_SAMPLER=always_off: the SDK
//                    and @fastify/otel loaded and every instrumentation path run, every span
//                    non-recording and nothing exported (a round whose sink took an export fails):
//                    its ratio to off is the instrumentation's own cost, on − unsampled the SDK's
//                    recording and export;
//   collector down   the endpoint http://127.0.0.1:<a free port nothing listens on> (checked before
//                    each run);
//   collector hangs  the endpoint of a sink run with OTLP_SINK_HANG=1, which reads and counts each
//                    export and never answers it (a process of its own too).
// Each answers a GET, an order and a PATCH correctly first. Then, per scenario (TRACING_SCENARIOS:
// patch-one, get-100 by default; order-one too when named), one unmeasured warm-up round of
// TRACING_WARMUP requests, then TRACING_ROUNDS rounds of TRACING_REQUESTS requests against each
// service (bench/guard.lua, wrk -t1 -c64, SIGINTed once they are answered, bounded in time). A round
// is interleaved: its load is cut into TRACING_SLICES (5) turns, in each of which every service
// answers its share in turn (the order rotated every round), so that the machine's drift from minute
// to minute (a third or more here) falls on every service alike instead of on whichever ran at a bad
// moment. The server's CPU time (utime + stime of /proc/<pid>/stat) of every service is read before
// the round's first turn and, all at once, after its last: once the sink holds a SERVER span for
// every request on answered (or has taken nothing more for 6 s) and at least 5 s past the load. The
// processor sends each batch of 512 spans as it fills and the rest on its 5 s timer, so the window
// holds every span of the round's export; every service's window is the same stretch of time,
// holding its own load, the others' (itself idle) and the same tail. CPU per request = that time ÷
// the requests wrk saw it answer; an answer not 2xx or a socket error fails its scenario. Reported
// per backend and scenario: the medians of off and on, the median of the rounds' on/off ratios, req/s
// (information only; wrk's over the service's own turns), and
// what the sink received; for patch-one with variants, a second table of every service (CPU per
// request, the median of the rounds' ratios to off, wrk's p50 and p99 latency and req/s, medians
// over the rounds, and what its collector took) and a note splitting on's ratio to off into
// unsampled − off and on − unsampled. A round whose on-run exported SERVER spans for fewer than
// 90 % of its requests fails the scenario (spans dropped by the processor's bounded queue, or an
// export that failed). Goal: patch-one's on/off ratio ≤ 1.3 on each backend (the other scenarios
// and the variants are shown, not judged).
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { Backend } from './backends.js'
import { CONNECTIONS, envNumber, ORDER_STOCK, SMALL_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { type Measured, spawnWrk } from './load.js'
import type { SinkStats } from './otlp-sink.js'
import { cpuTimeOf, freePort, HOST, runNode, type ServerHandle, startServer } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, type WrkGroupRun, wrkGroupRun, writeSection } from './results-section.js'
import { checkGet, checkOrder, checkPatch, type Dataset, makeDataset, type Running, serviceEnv, startService } from './targets.js'
import { median } from './stats.js'

/** `tracing` in BENCH_SCENARIOS runs this group; a default run (no BENCH_SCENARIOS) includes it. */
export const TRACING_GROUP = 'tracing'

export function selectTracing(ids: readonly string[] | undefined): boolean {
  return ids === undefined || ids.includes(TRACING_GROUP)
}

/** True when BENCH_SCENARIOS names this group and nothing else: then run.ts runs it alone. */
export function tracingOnly(ids: readonly string[] | undefined): boolean {
  return ids !== undefined && ids.length > 0 && ids.every((id) => id === TRACING_GROUP)
}

interface TracingScenario {
  id: string
  kind: 'get' | 'patch' | 'order'
  /** The pet guard.lua names (PATCH, order): one hot pet, the unfriendly case. */
  pet: number
  path: string
}

const ALL_SCENARIOS: readonly TracingScenario[] = [
  { id: 'patch-one', kind: 'patch', pet: 1, path: '/v1/inventory' },
  { id: 'get-100', kind: 'get', pet: 1, path: '/v1/inventory' },
  { id: 'order-one', kind: 'order', pet: 2, path: '/v1/store/orders' },
]
const DEFAULT_SCENARIOS = 'patch-one,get-100'

const ROUNDS = Math.floor(envNumber('TRACING_ROUNDS', 5, 1))
const REQUESTS = Math.floor(envNumber('TRACING_REQUESTS', 20_000, 1_000))
const WARMUP_REQUESTS = Math.floor(envNumber('TRACING_WARMUP', 5_000, 0))
/** Turns a round's load is cut into, every service answering its share in each (interleaved). */
const SLICES = Math.floor(envNumber('TRACING_SLICES', 5, 1))
const LOG_LEVEL = process.env.TRACING_LOG_LEVEL || 'info'
const SCENARIO_NAMES = (process.env.TRACING_SCENARIOS || DEFAULT_SCENARIOS)
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '')
const unknown = SCENARIO_NAMES.filter((id) => !ALL_SCENARIOS.some((s) => s.id === id))
if (unknown.length > 0)
  throw new Error(`TRACING_SCENARIOS names unknown scenarios: ${unknown.join(', ')} (known: ${ALL_SCENARIOS.map((s) => s.id).join(', ')})`)
const SCENARIOS = ALL_SCENARIOS.filter((s) => SCENARIO_NAMES.includes(s.id))

/** Tracing-on services run beside off and on for the goal scenario only (TRACING_VARIANTS). */
const ALL_VARIANTS = ['unsampled', 'collector-down', 'collector-hangs'] as const
export type VariantId = (typeof ALL_VARIANTS)[number]
const VARIANT_NAMES = (process.env.TRACING_VARIANTS ?? ALL_VARIANTS.join(','))
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '')
const unknownVariants = VARIANT_NAMES.filter((id) => !(ALL_VARIANTS as readonly string[]).includes(id))
if (unknownVariants.length > 0)
  throw new Error(`TRACING_VARIANTS names unknown variants: ${unknownVariants.join(', ')} (known: ${ALL_VARIANTS.join(', ')})`)
const VARIANTS = ALL_VARIANTS.filter((v) => VARIANT_NAMES.includes(v))
/** The report's name of each service. */
const SERVICE_NAMES: Readonly<Record<'off' | 'on' | VariantId, string>> = {
  off: 'off',
  on: 'on',
  unsampled: 'unsampled',
  'collector-down': 'collector down',
  'collector-hangs': 'collector hangs',
}

/** Issue 39: the server's CPU per PATCH with tracing on (every request sampled) at most this × off. */
export const CPU_RATIO_GOAL = 1.3
const GOAL_SCENARIO = 'patch-one'
/** An on-run must have exported a SERVER span for at least this share of the requests it answered. */
export const EXPORTED_MIN = 0.9

const GUARD_LUA = fileURLToPath(new URL('../../bench/guard.lua', import.meta.url))
const GUARD_DONE = 'guard: requests done'
const SINK = fileURLToPath(new URL('./otlp-sink.js', import.meta.url))
/** The SDK alone, spans made and exported with no server around them (bench/span-cost.ts). */
const SPAN_COST = fileURLToPath(new URL('./span-cost.js', import.meta.url))
/** Bound of one wrk run: it ends once its requests are answered, long before at 500 a second or more. */
const WRK_SECONDS = Math.max(60, Math.ceil(REQUESTS / 500))
/** The batch processor's default schedule is 5 s: the sink taking nothing for longer means the round's spans are all in. */
const SINK_QUIET_MS = 6_000
/**
 * How long the off window runs past its load: what the on window runs past its own (the processor's
 * 5 s timer), so both hold the same stretch of a service finishing its requests (its log's last
 * writes, garbage collection) and then idle.
 */
const OFF_TAIL_MS = 5_000
const SINK_WAIT_MAX_MS = 20_000
const POLL_MS = 50

const int = (n: number) => Math.round(n).toLocaleString('en-US')
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

// ---------------------------------------------------------------- the sink and the services

interface Sink {
  server: ServerHandle
  endpoint: string
  stats(): Promise<SinkStats>
}

/** The sink collector; `hang`: one that reads and counts each export and never answers it (OTLP_SINK_HANG). */
async function startSink(label: string, hang = false): Promise<Sink> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST }
  if (hang) env.OTLP_SINK_HANG = '1'
  else delete env.OTLP_SINK_HANG
  const server = await startServer(label, SINK, [], env, port, '/stats')
  return {
    server,
    endpoint: server.baseUrl,
    async stats() {
      const res = await fetch(`${server.baseUrl}/stats`, { signal: AbortSignal.timeout(5_000) })
      if (res.status !== 200) throw new Error(`${label}: GET /stats -> ${res.status}`)
      return (await res.json()) as SinkStats
    },
  }
}

/** The service as users run it: the request log at TRACING_LOG_LEVEL (info), rate limits counted but never reached; no OTEL_* but `endpoint`'s (and `sampler`'s). */
function tracingEnv(url: string, endpoint: string | undefined, sampler?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...serviceEnv(url), LOG_LEVEL: LOG_LEVEL, RATE_LIMIT_PER_KEY: '100000000' }
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name]
  if (endpoint !== undefined) env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint
  if (sampler !== undefined) env.OTEL_TRACES_SAMPLER = sampler
  return env
}

/** Resolves when a connection to 127.0.0.1:`port` is refused (nothing listens there); rejects otherwise. */
function nothingListens(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port, timeout: 2_000 })
    socket.once('connect', () => {
      socket.destroy()
      reject(new Error(`something listens on ${HOST}:${port}, the collector-down service's endpoint`))
    })
    socket.once('timeout', () => {
      socket.destroy()
      reject(new Error(`connecting to ${HOST}:${port} (the collector-down endpoint) neither succeeded nor was refused within 2 s`))
    })
    socket.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' ? resolve() : reject(new Error(`connecting to ${HOST}:${port}: ${err.message}`)),
    )
  })
}

/** One service of a backend, as a round runs it. */
interface Service {
  id: 'off' | 'on' | VariantId
  running: Running
  /** on: the sink that counts its spans; unsampled: a sink of its own (which must take nothing); collector-hangs: the hanging one. */
  collector?: Sink
  /** collector-down: the port nothing listens on, checked before each of its runs. */
  downPort?: number
}

// ---------------------------------------------------------------- one run

/** guard.lua: `requests` requests of the scenario's kind with wrk -t1 -c64, SIGINTed once they are answered. */
function runWrk(scenario: TracingScenario, running: Running, requests: number): Promise<Measured> {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${WRK_SECONDS}s`, '--latency', '--timeout', `${WRK_TIMEOUT_SECONDS}s`, '-s', GUARD_LUA]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}${scenario.path}`)
  const env = { ...process.env, GUARD_KIND: scenario.kind, GUARD_PET: String(scenario.pet), GUARD_REQUESTS: String(requests) }
  const label = running.server.label
  return spawnWrk(args, env, WRK_SECONDS, { stopOn: GUARD_DONE, label }).done.then((run) => {
    if (run.non2xx > 0 || run.errors > 0)
      throw new Error(`${label}: ${run.non2xx} answers not 2xx and socket errors ${run.errorDetail} in ${scenario.id}`)
    if (run.completed < requests)
      throw new Error(`${label}: only ${run.completed} of ${requests} requests answered within ${WRK_SECONDS} s in ${scenario.id}`)
    return run
  })
}

/** One run's figures: the server's CPU (utime + stime) per answered request. */
export interface Sample {
  usPerRequest: number
  completed: number
  rps: number
  /** wrk --latency's, in ms. */
  p50: number
  p99: number
  /** unsampled and collector-hangs: what their collector took over the window (exports = POSTs, answered or not). */
  collector?: { exports: number; spans: number }
}

/** An on-run's, with what the sink took over its window. */
export interface OnSample extends Sample {
  exports: number
  bytes: number
  spans: number
  serverSpans: number
  /** From wrk's end until the sink held every span (or went quiet). */
  waitMs: number
}

async function cpuUs(server: ServerHandle): Promise<number> {
  const cpu = await cpuTimeOf(server.pid)
  if (cpu === undefined) throw new Error(`cannot read /proc/${server.pid}/stat`)
  return cpu.userUs + cpu.sysUs
}

function alive(server: ServerHandle): void {
  const died = server.unexpectedExit()
  if (died !== undefined) throw new Error(`${server.label} exited during the run: ${died}`)
}

/** One service's window over a round: its CPU and its collector's counts when the round began, and its runs. */
interface Window {
  svc: Service
  cpuBefore: number
  took?: SinkStats | undefined
  runs: Measured[]
}

async function openWindow(svc: Service): Promise<Window> {
  if (svc.downPort !== undefined) await nothingListens(svc.downPort)
  const took = svc.collector === undefined ? undefined : await svc.collector.stats()
  return { svc, took, cpuBefore: await cpuUs(svc.running.server), runs: [] }
}

/** Waits until on's sink holds a SERVER span for each of its requests, or took nothing more for SINK_QUIET_MS. */
async function spansIn(on: Window, completed: number, loadEnd: number): Promise<SinkStats> {
  const sink = on.svc.collector!
  let now = on.took!
  let lastChange = performance.now()
  for (;;) {
    const next = await sink.stats()
    if (next.exports !== now.exports) lastChange = performance.now()
    now = next
    if (now.serverSpans - on.took!.serverSpans >= completed) return now
    if (performance.now() - lastChange > SINK_QUIET_MS || performance.now() - loadEnd > SINK_WAIT_MAX_MS) return now
    await sleep(POLL_MS)
  }
}

/** A window's figures once the round is over: CPU per request over the whole round, wrk's figures over its slices. */
async function closeWindow(w: Window, cpuAfter: number, sunk: SinkStats | undefined, waitMs: number): Promise<Sample | OnSample> {
  const server = w.svc.running.server
  alive(server)
  const completed = w.runs.reduce((n, r) => n + r.completed, 0)
  const sample: Sample = {
    usPerRequest: (cpuAfter - w.cpuBefore) / completed,
    completed,
    // The slices' requests over their time under load.
    rps: completed / w.runs.reduce((t, r) => t + r.completed / r.rps, 0),
    p50: median(w.runs.map((r) => r.p50)),
    p99: median(w.runs.map((r) => r.p99)),
  }
  const collector = w.svc.collector
  if (collector === undefined || w.took === undefined) return sample
  alive(collector.server)
  const now = sunk ?? (await collector.stats())
  if (w.svc.id !== 'on') {
    sample.collector = { exports: now.exports - w.took.exports, spans: now.spans - w.took.spans }
    if (w.svc.id === 'unsampled' && sample.collector.exports > 0)
      throw new Error(
        `${server.label} (unsampled: OTEL_TRACES_SAMPLER=always_off) exported ${sample.collector.spans} spans in ${sample.collector.exports} exports`,
      )
    return sample
  }
  const on: OnSample = {
    ...sample,
    exports: now.exports - w.took.exports,
    bytes: now.bytes - w.took.bytes,
    spans: now.spans - w.took.spans,
    serverSpans: now.serverSpans - w.took.serverSpans,
    waitMs,
  }
  if (now.undecoded > 0) throw new Error(`the sink could not decode ${now.undecoded} of the ${now.exports} exports it took`)
  if (on.serverSpans < EXPORTED_MIN * on.completed) {
    throw new Error(
      `${server.label} (tracing on) answered ${on.completed} requests but the sink took only ${on.serverSpans} SERVER spans ` +
        `(${((100 * on.serverSpans) / on.completed).toFixed(1)} %, below ${100 * EXPORTED_MIN} %; ${on.spans} spans in all, ` +
        `${on.exports} exports) within ${Math.round(waitMs)} ms of the load's end: spans dropped by the batch processor's ` +
        'bounded queue, or exports that failed',
    )
  }
  return on
}

/**
 * One round: every service's window opened, then TRACING_SLICES turns in which each service in
 * `order` answers its share of `requests`, so the machine's minute-to-minute drift falls on every
 * service alike; then, once on's sink holds the round's spans (and at least OFF_TAIL_MS after the
 * load), every window closed at the same moment: each holds the whole round, its own load, the
 * others' (itself idle) and the same stretch past it.
 */
async function runRound(scenario: TracingScenario, order: readonly Service[], requests: number): Promise<Map<Service['id'], Sample>> {
  const windows: Window[] = []
  for (const svc of order) windows.push(await openWindow(svc))
  const perSlice = Math.ceil(requests / SLICES)
  for (let slice = 0; slice < SLICES; slice++)
    for (const w of windows) w.runs.push(await runWrk(scenario, w.svc.running, Math.min(perSlice, requests - slice * perSlice)))
  const loadEnd = performance.now()
  const on = windows.find((w) => w.svc.id === 'on')!
  const sunk = await spansIn(
    on,
    on.runs.reduce((n, r) => n + r.completed, 0),
    loadEnd,
  )
  await sleep(OFF_TAIL_MS - (performance.now() - loadEnd))
  const waitMs = performance.now() - loadEnd
  const after = await Promise.all(windows.map((w) => cpuUs(w.svc.running.server)))
  const samples = new Map<Service['id'], Sample>()
  for (const [i, w] of windows.entries()) samples.set(w.svc.id, await closeWindow(w, after[i]!, w === on ? sunk : undefined, waitMs))
  return samples
}

// ---------------------------------------------------------------- a backend

export interface TracingRound {
  off: Sample
  on: OnSample
  ratio: number
  /** The goal scenario with TRACING_VARIANTS: each variant's run of the round. */
  variants?: Partial<Record<VariantId, Sample>>
}

/** One service of the goal scenario's second table (off, on and each variant): medians over the rounds. */
export interface ServiceSummary {
  service: string
  us: number
  /** Median of the rounds' service/off ratios (1 for off). */
  ratio: number
  ratios: number[]
  p50: number
  p99: number
  rps: number
  /** What its collector took over the measured rounds, as text. */
  collector: string
}

/** A (backend, scenario): its rounds and medians, or why it failed (a failure is an error of the run, a missed goal is not). */
export interface TracingRow {
  backend: string
  scenario: string
  rounds: TracingRound[]
  offUs?: number
  onUs?: number
  /** Median of the rounds' on/off ratios. */
  ratio?: number
  offRps?: number
  onRps?: number
  /** The lowest round's SERVER spans ÷ requests answered. */
  exportedMin?: number
  spansPerRequest?: number
  bytesPerSpan?: number
  /** The goal scenario with TRACING_VARIANTS: off, on and each variant. */
  services?: ServiceSummary[]
  failure?: string
}

const sampleOf = (round: TracingRound, id: Service['id']): Sample | undefined =>
  id === 'off' ? round.off : id === 'on' ? round.on : round.variants?.[id]

async function runScenario(
  scenario: TracingScenario,
  backend: Backend,
  services: readonly Service[],
  log: (l: string) => void,
): Promise<TracingRow> {
  const row: TracingRow = { backend: backend.name, scenario: scenario.id, rounds: [] }
  const name = `${backend.name}/${scenario.id}`
  try {
    for (let round = WARMUP_REQUESTS > 0 ? 0 : 1; round <= ROUNDS; round++) {
      const requests = round === 0 ? WARMUP_REQUESTS : REQUESTS
      // Rotated each round (off and on alone: flipped), so no service is always first in a slice.
      const shift = (((round - 1) % services.length) + services.length) % services.length
      const order = [...services.slice(shift), ...services.slice(0, shift)]
      const got = await runRound(scenario, order, requests)
      const o = got.get('off')!
      const w = got.get('on')! as OnSample
      const variants: Partial<Record<VariantId, Sample>> = {}
      for (const svc of services) if (svc.id !== 'off' && svc.id !== 'on') variants[svc.id] = got.get(svc.id)!
      const others = Object.entries(variants).map(
        ([id, v]) =>
          `, ${SERVICE_NAMES[id as VariantId]} ${v.usPerRequest.toFixed(1)} µs/req (${Math.round(v.rps)}/s, ratio ${(v.usPerRequest / o.usPerRequest).toFixed(3)}` +
          `${v.collector === undefined ? '' : `; exports its collector took: ${v.collector.exports}`})`,
      )
      if (round === 0) {
        log(
          `${name}: warm-up round done (${order.map((svc) => `${SERVICE_NAMES[svc.id]} ${Math.round(got.get(svc.id)!.rps)}`).join(', ')} req/s)`,
        )
        continue
      }
      const ratio = w.usPerRequest / o.usPerRequest
      row.rounds.push({ off: o, on: w, ratio, ...(services.length > 2 ? { variants } : {}) })
      log(
        `${name}: round ${round}: off ${o.usPerRequest.toFixed(1)} µs/req (${Math.round(o.rps)}/s), ` +
          `on ${w.usPerRequest.toFixed(1)} µs/req (${Math.round(w.rps)}/s; ${w.serverSpans} SERVER spans of ${w.spans} ` +
          `for ${w.completed} requests, ${Math.round(w.bytes / 1024)} KiB in ${w.exports} exports, all in ${Math.round(w.waitMs)} ms after wrk), ` +
          `ratio ${ratio.toFixed(3)}${others.join('')}${services.length > 2 ? ` (order ${order.map((svc) => svc.id).join(', ')})` : ''}`,
      )
    }
  } catch (err) {
    row.failure = message(err)
    log(`  FAILED tracing ${name}:\n${row.failure}`)
    return row
  }
  const rounds = row.rounds
  row.offUs = median(rounds.map((r) => r.off.usPerRequest))
  row.onUs = median(rounds.map((r) => r.on.usPerRequest))
  row.ratio = median(rounds.map((r) => r.ratio))
  row.offRps = median(rounds.map((r) => r.off.rps))
  row.onRps = median(rounds.map((r) => r.on.rps))
  row.exportedMin = Math.min(...rounds.map((r) => r.on.serverSpans / r.on.completed))
  row.spansPerRequest = median(rounds.map((r) => r.on.spans / r.on.completed))
  row.bytesPerSpan = median(rounds.map((r) => r.on.bytes / Math.max(1, r.on.spans)))
  if (services.length > 2) {
    row.services = services.map((svc) => {
      const samples = rounds.map((r) => sampleOf(r, svc.id)!)
      const ratios = rounds.map((r) => sampleOf(r, svc.id)!.usPerRequest / r.off.usPerRequest)
      const sum = (f: (s: Sample) => number) => samples.reduce((n, x) => n + f(x), 0)
      const collector =
        svc.id === 'off'
          ? 'none (tracing off)'
          : svc.id === 'on'
            ? `sink: ${int(rounds.reduce((n, r) => n + r.on.exports, 0))} exports answered, ${int(rounds.reduce((n, r) => n + r.on.spans, 0))} spans`
            : svc.id === 'unsampled'
              ? `sink: exports ${int(sum((x) => x.collector?.exports ?? 0))}`
              : svc.id === 'collector-down'
                ? `none: ${HOST}:${svc.downPort} refuses connections`
                : `hanging sink: exports taken ${int(sum((x) => x.collector?.exports ?? 0))} (${int(sum((x) => x.collector?.spans ?? 0))} spans), answered 0`
      return {
        service: SERVICE_NAMES[svc.id],
        us: median(samples.map((x) => x.usPerRequest)),
        ratio: svc.id === 'off' ? 1 : median(ratios),
        ratios,
        p50: median(samples.map((x) => x.p50)),
        p99: median(samples.map((x) => x.p99)),
        rps: median(samples.map((x) => x.rps)),
        collector,
      }
    })
  }
  return row
}

async function runBackend(cli: string, backend: Backend, dataset: Dataset, log: (l: string) => void): Promise<TracingRow[]> {
  const stops: Array<() => Promise<void>> = []
  try {
    // The variants run only with the goal scenario.
    const variants = SCENARIOS.some((s) => s.id === GOAL_SCENARIO) ? VARIANTS : []
    const sink = await startSink(`otlp-sink/${backend.name}`)
    stops.push(() => sink.server.stop())
    log(
      `${backend.name}: sink collector at ${sink.endpoint} (pid ${sink.server.pid}); starting the services ${['off', 'on', ...variants].join(', ')}`,
    )
    const off = await startService(cli, backend, dataset, 'tracing-off', (url) => tracingEnv(url, undefined))
    stops.push(() => off.stop())
    const on = await startService(cli, backend, dataset, 'tracing-on', (url) => tracingEnv(url, sink.endpoint))
    stops.push(() => on.stop())
    const pair: Service[] = [
      { id: 'off', running: off },
      { id: 'on', running: on, collector: sink },
    ]
    const all = [...pair]
    for (const variant of variants) {
      let collector: Sink | undefined
      let downPort: number | undefined
      if (variant === 'collector-down') {
        // A free port nothing listens on (checked before every run of it: another process might take it).
        downPort = await freePort()
      } else {
        // unsampled: a sink of its own, which must take nothing (every span non-recording); collector-hangs: the hanging one.
        const sinkOf = await startSink(`otlp-sink/${backend.name}/${variant}`, variant === 'collector-hangs')
        stops.push(() => sinkOf.server.stop())
        collector = sinkOf
      }
      const endpoint = collector?.endpoint ?? `http://${HOST}:${downPort}`
      const sampler = variant === 'unsampled' ? 'always_off' : undefined
      const running = await startService(cli, backend, dataset, `tracing-${variant}`, (url) => tracingEnv(url, endpoint, sampler))
      stops.push(() => running.stop())
      if (downPort !== undefined) await nothingListens(downPort)
      all.push({ id: variant, running, ...(collector === undefined ? {} : { collector }), ...(downPort === undefined ? {} : { downPort }) })
    }
    for (const svc of all) {
      // All three name the first pet (the order pet 1 while it still holds its stock); GET first, while the entries are as imported.
      await checkGet(svc.running, dataset)
      await checkOrder(svc.running, dataset, true)
      await checkPatch(svc.running, dataset)
    }
    const rows: TracingRow[] = []
    for (const scenario of SCENARIOS) rows.push(await runScenario(scenario, backend, scenario.id === GOAL_SCENARIO ? all : pair, log))
    return rows
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`${backend.name}: stopping: ${message(err)}`))
  }
}

// ---------------------------------------------------------------- the group

export interface TracingResult extends WrkGroupRun {
  settings: {
    rounds: number
    requests: number
    warmup: number
    connections: number
    /** TRACING_SLICES: the turns each round's load is cut into. */
    slices: number
    logLevel: string
    scenarios: string[]
    /** TRACING_VARIANTS, when the goal scenario runs (else none). */
    variants: VariantId[]
  }
  goal: { ratio: number; scenario: string; exportedMin: number }
  backends: string[]
  notes: string[]
  rows: TracingRow[]
  /** The SDK's own CPU per span, measured alone (bench/span-cost.ts); undefined when that failed. */
  spanCost?: { cpuUsPerSpan: number; spans: number; exported: number } | undefined
  seconds: number
}

/** The SDK's own CPU per span: bench/span-cost.ts in a process of its own, exporting to a sink of its own. */
async function measureSpanCost(log: (l: string) => void): Promise<TracingResult['spanCost']> {
  const sink = await startSink('otlp-sink/span-cost')
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint }
    for (const name of Object.keys(env)) if (name.startsWith('OTEL_') && name !== 'OTEL_EXPORTER_OTLP_ENDPOINT') delete env[name]
    const cost = JSON.parse(await runNode(SPAN_COST, [], env, 180_000)) as NonNullable<TracingResult['spanCost']>
    log(`tracing: the SDK alone: ${cost.cpuUsPerSpan.toFixed(2)} µs of CPU per span (${cost.exported} of ${cost.spans} exported)`)
    return cost
  } catch (err) {
    log(`  FAILED tracing span cost:\n${message(err)}`)
    return undefined
  } finally {
    await sink.server.stop().catch(() => {})
  }
}

/**
 * Upper bound on the group's run time, for run.ts's watchdog: per backend a minute for the sink, the
 * two services and their checks, and 30 s for each variant's; per scenario and round (the warm-up one
 * included) and service 1 s per slice plus 1 ms a request (at no less than 1,000 a second), and the
 * wait for on's spans and the tail past the load.
 */
export function tracingBudgetMs(backends: number): number {
  const variants = SCENARIOS.some((s) => s.id === GOAL_SCENARIO) ? VARIANTS.length : 0
  const round = (services: number) => services * (SLICES * 1_000 + REQUESTS) + SINK_WAIT_MAX_MS + OFF_TAIL_MS
  const scenarios = SCENARIOS.reduce((ms, s) => ms + (ROUNDS + 1) * round(s.id === GOAL_SCENARIO ? 2 + variants : 2), 0)
  return 30_000 + backends * (60_000 + 30_000 * variants + scenarios)
}

export async function runTracing(
  cli: string,
  backends: readonly Backend[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<TracingResult> {
  const started = performance.now()
  const result: TracingResult = {
    ...wrkGroupRun(loadAverage, 'TRACING_'),
    settings: {
      rounds: ROUNDS,
      requests: REQUESTS,
      warmup: WARMUP_REQUESTS,
      connections: CONNECTIONS,
      slices: SLICES,
      logLevel: LOG_LEVEL,
      scenarios: SCENARIOS.map((s) => s.id),
      variants: SCENARIOS.some((s) => s.id === GOAL_SCENARIO) ? [...VARIANTS] : [],
    },
    goal: { ratio: CPU_RATIO_GOAL, scenario: GOAL_SCENARIO, exportedMin: EXPORTED_MIN },
    backends: backends.map((b) => b.name),
    notes: [],
    rows: [],
    seconds: 0,
  }
  if (!result.backends.includes('postgres')) result.notes.push('PostgreSQL was not reachable, so its rows are missing.')
  log(
    `tracing: ${result.settings.scenarios.join(', ')} on ${result.backends.join(', ')}; ${ROUNDS} rounds of ${REQUESTS} requests ` +
      `(warm-up ${WARMUP_REQUESTS}), interleaved in ${SLICES} turns, off and on` +
      (result.settings.variants.length > 0 ? ` (${GOAL_SCENARIO}: also ${result.settings.variants.join(', ')})` : ''),
  )
  const dataset = await makeDataset(dir, SMALL_INVENTORY, false, ORDER_STOCK)
  for (const backend of backends) {
    try {
      result.rows.push(...(await runBackend(cli, backend, dataset, log)))
    } catch (err) {
      const failure = message(err)
      log(`  FAILED tracing ${backend.name}:\n${failure}`)
      for (const scenario of SCENARIOS) {
        if (!result.rows.some((r) => r.backend === backend.name && r.scenario === scenario.id))
          result.rows.push({ backend: backend.name, scenario: scenario.id, rounds: [], failure })
      }
    }
  }
  result.spanCost = await measureSpanCost(log)
  const cost = result.spanCost
  if (cost !== undefined) {
    const floors = result.rows
      .filter((row) => row.scenario === GOAL_SCENARIO && row.offUs !== undefined && row.spansPerRequest !== undefined)
      .map((row) => {
        const us = cost.cpuUsPerSpan * row.spansPerRequest!
        return `${row.backend} ${us.toFixed(1)} µs, (${row.offUs!.toFixed(1)} + ${us.toFixed(1)}) / ${row.offUs!.toFixed(1)} = ${((row.offUs! + us) / row.offUs!).toFixed(2)} ×`
      })
    result.notes.push(
      `The OpenTelemetry SDK alone (bench/span-cost.ts: spans made, ended, batched, serialized and exported as the service sets it up, with no server around them) costs ${cost.cpuUsPerSpan.toFixed(2)} µs of CPU per span. ` +
        `At the spans per PATCH above, that alone is a floor under the ratio, before any instrumentation or a smaller group commit: ${floors.join('; ') || 'no PATCH row'}.`,
    )
  }
  // From the ratio column (each the median of the rounds' ratios to off, as the goal is judged), in
  // µs at off's median: the medians of the CPU column come from different rounds, and on a machine
  // whose speed moves between rounds their differences need not add up to the ratio.
  const parts = result.rows.flatMap((row) => {
    const svc = (name: string) => row.services?.find((x) => x.service === name)
    const [off, on, unsampled] = [svc('off'), svc('on'), svc('unsampled')]
    if (row.scenario !== GOAL_SCENARIO || off === undefined || on === undefined || unsampled === undefined) return []
    const part = (share: number) =>
      `${share >= 0 ? '+' : ''}${(share * off.us).toFixed(1)} µs (${share >= 0 ? '+' : ''}${(100 * share).toFixed(1)} % of off)`
    return [
      `${row.backend}: off ${off.us.toFixed(1)} µs; instrumentation alone (unsampled − off) ${part(unsampled.ratio - 1)}; ` +
        `the SDK's recording and export (on − unsampled) ${part(on.ratio - unsampled.ratio)}; together (on − off) ${part(on.ratio - 1)}`,
    ]
  })
  if (parts.length > 0)
    result.notes.push(
      `Where tracing's CPU per PATCH goes (${GOAL_SCENARIO}; from the services' table: each service's median ratio to off, less the one below it, times off's median CPU): ${parts.join('; ')}. ` +
        'Unsampled loads the SDK and @fastify/otel and runs every instrumentation path (context propagation, hooks, the trace context of the ledger row and the log line) with every span non-recording and nothing exported.',
    )
  result.seconds = (performance.now() - started) / 1000
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- tracing: start -->', end: '<!-- tracing: end -->' }
const range = (values: readonly number[]) => `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`

/** Per backend: the CPU-per-PATCH ratio goal (not measured when the scenario was not run or failed). */
export function tracingGoals(r: TracingResult): Goal[] {
  return r.backends.map((backend) => {
    const row = r.rows.find((x) => x.backend === backend && x.scenario === r.goal.scenario)
    const ok = row !== undefined && row.failure === undefined && row.ratio !== undefined
    return {
      goal: `${backend}: the server's CPU per PATCH of one pet with tracing on (every request sampled, spans exported) ≤ ${r.goal.ratio} × off`,
      measured: ok
        ? `${row.ratio!.toFixed(3)} × (${row.onUs!.toFixed(1)} vs ${row.offUs!.toFixed(1)} µs, median of ${row.rounds.length} rounds)`
        : row === undefined
          ? `not run (TRACING_SCENARIOS has no ${r.goal.scenario})`
          : 'failed',
      met: ok ? row.ratio! <= r.goal.ratio : undefined,
    }
  })
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`

function table(r: TracingResult): string[][] {
  return [
    [
      'Backend',
      'Scenario',
      'CPU/req off (µs)',
      'on (µs)',
      `On/off, median of ${r.settings.rounds}`,
      'req/s off',
      'req/s on',
      'SERVER spans exported ÷ requests (lowest round)',
      'Sink took (measured rounds)',
      'Spans per request',
      'Bytes per span',
    ],
    ...r.rows.flatMap((row) => {
      if (row.failure !== undefined || row.ratio === undefined) return []
      const goal = row.scenario === r.goal.scenario ? `; goal ≤ ${r.goal.ratio}: ${row.ratio <= r.goal.ratio ? 'met' : 'NOT met'}` : ''
      const sum = (f: (s: OnSample) => number) => row.rounds.reduce((n, x) => n + f(x.on), 0)
      return [
        [
          row.backend,
          row.scenario,
          row.offUs!.toFixed(1),
          row.onUs!.toFixed(1),
          `${row.ratio.toFixed(3)} (rounds ${range(row.rounds.map((x) => x.ratio))}${goal})`,
          int(row.offRps!),
          int(row.onRps!),
          `${(100 * row.exportedMin!).toFixed(1)} %`,
          `${int(sum((s) => s.serverSpans))} SERVER of ${int(sum((s) => s.spans))} spans, ${mib(sum((s) => s.bytes))} ` +
            `for ${int(sum((s) => s.completed))} requests`,
          row.spansPerRequest!.toFixed(2),
          int(row.bytesPerSpan!),
        ],
      ]
    }),
  ]
}

/** The goal scenario's services, one row each (off, on and the variants), per backend. */
function servicesTable(r: TracingResult): string[][] {
  return [
    [
      'Backend',
      `Service (${r.goal.scenario})`,
      'CPU/req (µs)',
      `Ratio to off, median of ${r.settings.rounds}`,
      'p50 (ms)',
      'p99 (ms)',
      'req/s',
      'Collector took (measured rounds)',
    ],
    ...r.rows.flatMap((row) =>
      row.failure !== undefined || row.services === undefined
        ? []
        : row.services.map((x) => [
            row.backend,
            x.service,
            x.us.toFixed(1),
            x.service === 'off' ? '1' : `${x.ratio.toFixed(3)} (rounds ${range(x.ratios)})`,
            x.p50.toFixed(2),
            x.p99.toFixed(2),
            int(x.rps),
            x.collector,
          ]),
    ),
  ]
}

const withServices = (r: TracingResult): boolean => r.rows.some((x) => x.failure === undefined && x.services !== undefined)

const variantsText = (r: TracingResult): string =>
  r.settings.variants.length === 0 ? '' : ` (${r.goal.scenario}: also ${r.settings.variants.map((v) => SERVICE_NAMES[v]).join(', ')})`

const settingsText = (r: TracingResult): string =>
  `${r.settings.rounds} rounds of ${int(r.settings.requests)} requests per service (after a warm-up round of ${int(r.settings.warmup)}), ` +
  `off and on${variantsText(r)} interleaved (each round in ${r.settings.slices} turns, every service answering its share in each, ` +
  `the order rotated every round; every window the whole round), wrk -t1 -c${r.settings.connections}; LOG_LEVEL ${r.settings.logLevel}; tracing on: OTLP http/protobuf to a sink ` +
  'collector process, parent-based always-on sampler, default batch processor; CPU = utime + stime of the server process ÷ requests answered'

const measured = (r: TracingResult): boolean => r.rows.some((x) => x.failure === undefined && x.ratio !== undefined)
const failed = (r: TracingResult) =>
  r.rows.flatMap((x) => (x.failure === undefined ? [] : [{ what: `${x.backend}/${x.scenario}`, failure: x.failure }]))

/** The tracing section of RESULTS.md (markdown, between its markers). */
export function renderTracing(r: TracingResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Tracing',
    run: r,
    source: 'bench/tracing.ts',
    about:
      `Node ${r.node}; ${r.wrk}; backends ${r.backends.join(', ')}; ${settingsText(r)}; ${Math.round(r.seconds)} s.` +
      ' How each figure is measured: [README.md](README.md#tracing).',
    body: measured(r)
      ? [...mdTable(table(r)), '', ...(withServices(r) ? [...mdTable(servicesTable(r)), ''] : [])]
      : ['Nothing was measured.', ''],
    notes: r.notes,
    failures: failed(r),
    goalsTitle: 'Tracing goals',
    goals: tracingGoals(r),
  })
}

export function tracingConsole(r: TracingResult): string {
  const blocks = [`${settingsText(r)}; ${Math.round(r.seconds)} s`]
  if (measured(r)) blocks.push(textTable(table(r)))
  if (withServices(r)) blocks.push(textTable(servicesTable(r)))
  return sectionConsole({ blocks, notes: r.notes, failures: failed(r), goals: tracingGoals(r) })
}

/** RESULTS.md's tracing section as it stands (markers included), or undefined. */
export const readTracingSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its tracing section, or after everything else. */
export const writeTracingSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
