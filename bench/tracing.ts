// What OpenTelemetry tracing costs the service (issue 39's goal: with tracing on and every request
// sampled, the server's CPU per PATCH at most 1.3 × off), on each backend (SQLite; PostgreSQL when it
// answers). Part of `npm run bench` (run.ts runs it after the message-broker group, and
// `BENCH_SCENARIOS=tracing` alone runs only it, replacing only its section of bench/RESULTS.md).
//
// Per backend, two services side by side on fresh databases of 100 entries (each holding 2^31 - 1
// units, so no order is refused), `petstore serve` as users run it (LOG_LEVEL info, rate limits
// counted but never reached), every OTEL_* variable of the bench's own environment removed:
//   off  nothing more: tracing off;
//   on   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port> of a sink collector (bench/otlp-sink.ts,
//        a process of its own: its CPU counts neither for the server nor inside the bench's event
//        loop) and nothing else: the default protocol (http/protobuf), sampler (parent-based always
//        on: every request sampled, wrk sends no traceparent) and batch processor settings.
// Each answers a GET, an order and a PATCH correctly first. Then, per scenario (TRACING_SCENARIOS:
// patch-one, get-100 by default; order-one too when named), one unmeasured warm-up round of
// TRACING_WARMUP requests, then TRACING_ROUNDS rounds of TRACING_REQUESTS requests against each
// service (bench/guard.lua, wrk -t1 -c64, SIGINTed once they are answered, bounded in time), the order
// flipped every round. The server's CPU time (utime + stime of /proc/<pid>/stat) is read before wrk
// starts and read again, for `on`, once the sink holds a SERVER span for every request answered (or
// has taken nothing more for 6 s), so the export of the round's spans is inside the round. The
// processor sends each batch of 512 spans as it fills and the rest on its 5 s timer, and a SERVER
// span ends after its request's other spans, so that is when the timer has sent the round's last
// partial batch, about 5 s after the load: the window holds every span of the round, and the
// service finishing its requests and then idle. For `off`, 5 s after wrk ends, so both windows hold
// the same stretch past the load. The first run's window stays open while the round's second run
// goes on (another process); both close before the next round. CPU per request = that
// time ÷ the requests wrk saw answered. Reported per backend and scenario: the medians of off and on,
// the median of the rounds' on/off ratios, req/s (information only), and what the sink received. A
// round whose on-run exported SERVER spans for fewer than 90 % of its requests fails the scenario
// (spans dropped by the processor's bounded queue, or an export that failed). Goal: patch-one's
// ratio ≤ 1.3 on each backend (the other scenarios are shown, not judged).
import { fileURLToPath } from 'node:url'
import type { Backend } from './backends.js'
import { CONNECTIONS, envNumber, ORDER_STOCK, SMALL_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { type Measured, spawnWrk } from './load.js'
import type { SinkStats } from './otlp-sink.js'
import { cpuTimeOf, freePort, HOST, runNode, type ServerHandle, startServer } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, type WrkGroupRun, wrkGroupRun, writeSection } from './results-section.js'
import { checkGet, checkOrder, checkPatch, type Dataset, makeDataset, type Running, serviceEnv, startService } from './targets.js'

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
const LOG_LEVEL = process.env.TRACING_LOG_LEVEL || 'info'
const SCENARIO_NAMES = (process.env.TRACING_SCENARIOS || DEFAULT_SCENARIOS)
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '')
const unknown = SCENARIO_NAMES.filter((id) => !ALL_SCENARIOS.some((s) => s.id === id))
if (unknown.length > 0)
  throw new Error(`TRACING_SCENARIOS names unknown scenarios: ${unknown.join(', ')} (known: ${ALL_SCENARIOS.map((s) => s.id).join(', ')})`)
const SCENARIOS = ALL_SCENARIOS.filter((s) => SCENARIO_NAMES.includes(s.id))

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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))
const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

// ---------------------------------------------------------------- the sink and the services

interface Sink {
  server: ServerHandle
  endpoint: string
  stats(): Promise<SinkStats>
}

async function startSink(label: string): Promise<Sink> {
  const port = await freePort()
  const server = await startServer(label, SINK, [], { ...process.env, PORT: String(port), HOST }, port, '/stats')
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

/** The service as users run it: the request log at TRACING_LOG_LEVEL (info), rate limits counted but never reached; no OTEL_* but `endpoint`'s. */
function tracingEnv(url: string, endpoint: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...serviceEnv(url), LOG_LEVEL: LOG_LEVEL, RATE_LIMIT_PER_KEY: '100000000' }
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name]
  if (endpoint !== undefined) env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint
  return env
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

/**
 * The off-run's load; resolves, once wrk is done, to the wait of OFF_TAIL_MS (which reads the CPU at
 * its end), so that the caller may run the on service meanwhile.
 */
async function runOff(scenario: TracingScenario, off: Running, requests: number): Promise<() => Promise<Sample>> {
  const before = await cpuUs(off.server)
  const run = await runWrk(scenario, off, requests)
  const wrkEnd = performance.now()
  return async () => {
    await sleep(OFF_TAIL_MS - (performance.now() - wrkEnd))
    const after = await cpuUs(off.server)
    alive(off.server)
    return { usPerRequest: (after - before) / run.completed, completed: run.completed, rps: run.rps }
  }
}

/**
 * The on-run's load; resolves, once wrk is done, to the wait for its spans (which reads the CPU at
 * its end), so that the caller may run the off service meanwhile.
 */
async function runOn(scenario: TracingScenario, on: Running, sink: Sink, requests: number): Promise<() => Promise<OnSample>> {
  const before = await cpuUs(on.server)
  const sunk = await sink.stats()
  const run = await runWrk(scenario, on, requests)
  const wrkEnd = performance.now()
  return async () => {
    let now = sunk
    let lastChange = performance.now()
    for (;;) {
      const next = await sink.stats()
      if (next.exports !== now.exports) lastChange = performance.now()
      now = next
      if (now.serverSpans - sunk.serverSpans >= run.completed) break
      if (performance.now() - lastChange > SINK_QUIET_MS || performance.now() - wrkEnd > SINK_WAIT_MAX_MS) break
      await sleep(POLL_MS)
    }
    const after = await cpuUs(on.server)
    alive(on.server)
    alive(sink.server)
    const sample: OnSample = {
      usPerRequest: (after - before) / run.completed,
      completed: run.completed,
      rps: run.rps,
      exports: now.exports - sunk.exports,
      bytes: now.bytes - sunk.bytes,
      spans: now.spans - sunk.spans,
      serverSpans: now.serverSpans - sunk.serverSpans,
      waitMs: performance.now() - wrkEnd,
    }
    if (now.undecoded > 0) throw new Error(`the sink could not decode ${now.undecoded} of the ${now.exports} exports it took`)
    if (sample.serverSpans < EXPORTED_MIN * sample.completed) {
      throw new Error(
        `${on.server.label} (tracing on) answered ${sample.completed} requests but the sink took only ${sample.serverSpans} SERVER spans ` +
          `(${((100 * sample.serverSpans) / sample.completed).toFixed(1)} %, below ${100 * EXPORTED_MIN} %; ${sample.spans} spans in all, ` +
          `${sample.exports} exports) within ${Math.round(sample.waitMs)} ms of the load's end: spans dropped by the batch processor's ` +
          'bounded queue, or exports that failed',
      )
    }
    return sample
  }
}

// ---------------------------------------------------------------- a backend

export interface TracingRound {
  off: Sample
  on: OnSample
  ratio: number
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
  failure?: string
}

async function runScenario(
  scenario: TracingScenario,
  backend: Backend,
  off: Running,
  on: Running,
  sink: Sink,
  log: (l: string) => void,
): Promise<TracingRow> {
  const row: TracingRow = { backend: backend.name, scenario: scenario.id, rounds: [] }
  const name = `${backend.name}/${scenario.id}`
  const windows: Promise<unknown>[] = []
  try {
    for (let round = WARMUP_REQUESTS > 0 ? 0 : 1; round <= ROUNDS; round++) {
      const requests = round === 0 ? WARMUP_REQUESTS : REQUESTS
      let offSample: Promise<Sample> | undefined
      let onSample: Promise<OnSample> | undefined
      // The first run's window stays open past its load while the second run's load goes on (another
      // process: its CPU is not counted there); both are closed before the round ends, so a service's
      // windows never overlap each other.
      for (const which of round % 2 === 1 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        if (which === 'off') {
          offSample = (await runOff(scenario, off, requests))()
          offSample.catch(() => {}) // awaited below; not an unhandled rejection meanwhile
          windows.push(offSample)
        } else {
          onSample = (await runOn(scenario, on, sink, requests))()
          onSample.catch(() => {})
          windows.push(onSample)
        }
      }
      const settled = await Promise.allSettled([offSample!, onSample!])
      for (const s of settled) if (s.status === 'rejected') throw s.reason
      const o = await offSample!
      const w = await onSample!
      if (round === 0) {
        log(`${name}: warm-up round done (${Math.round(o.rps)} and ${Math.round(w.rps)} req/s)`)
        continue
      }
      const ratio = w.usPerRequest / o.usPerRequest
      row.rounds.push({ off: o, on: w, ratio })
      log(
        `${name}: round ${round}: off ${o.usPerRequest.toFixed(1)} µs/req (${Math.round(o.rps)}/s), ` +
          `on ${w.usPerRequest.toFixed(1)} µs/req (${Math.round(w.rps)}/s; ${w.serverSpans} SERVER spans of ${w.spans} ` +
          `for ${w.completed} requests, ${Math.round(w.bytes / 1024)} KiB in ${w.exports} exports, all in ${Math.round(w.waitMs)} ms after wrk), ` +
          `ratio ${ratio.toFixed(3)}`,
      )
    }
  } catch (err) {
    row.failure = message(err)
    log(`  FAILED tracing ${name}:\n${row.failure}`)
    await Promise.allSettled(windows)
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
  return row
}

async function runBackend(cli: string, backend: Backend, dataset: Dataset, log: (l: string) => void): Promise<TracingRow[]> {
  const stops: Array<() => Promise<void>> = []
  try {
    const sink = await startSink(`otlp-sink/${backend.name}`)
    stops.push(() => sink.server.stop())
    log(`${backend.name}: sink collector at ${sink.endpoint} (pid ${sink.server.pid}); starting the services off and on`)
    const off = await startService(cli, backend, dataset, 'tracing-off', (url) => tracingEnv(url, undefined))
    stops.push(() => off.stop())
    const on = await startService(cli, backend, dataset, 'tracing-on', (url) => tracingEnv(url, sink.endpoint))
    stops.push(() => on.stop())
    for (const running of [off, on]) {
      // All three name the first pet (the order pet 1 while it still holds its stock); GET first, while the entries are as imported.
      await checkGet(running, dataset)
      await checkOrder(running, dataset, true)
      await checkPatch(running, dataset)
    }
    const rows: TracingRow[] = []
    for (const scenario of SCENARIOS) rows.push(await runScenario(scenario, backend, off, on, sink, log))
    return rows
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`${backend.name}: stopping: ${message(err)}`))
  }
}

// ---------------------------------------------------------------- the group

export interface TracingResult extends WrkGroupRun {
  settings: { rounds: number; requests: number; warmup: number; connections: number; logLevel: string; scenarios: string[] }
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
 * two services and their checks; per scenario and round (the warm-up one included) and service 10 s
 * plus 1 ms a request (at no less than 1,000 a second), and the on-run's wait for its spans and the off-run's tail.
 */
export function tracingBudgetMs(backends: number): number {
  const rounds = (ROUNDS + 1) * (2 * (10_000 + REQUESTS) + SINK_WAIT_MAX_MS + OFF_TAIL_MS)
  return 30_000 + backends * (60_000 + SCENARIOS.length * rounds)
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
      logLevel: LOG_LEVEL,
      scenarios: SCENARIOS.map((s) => s.id),
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
      `(warm-up ${WARMUP_REQUESTS}), off and on alternating`,
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
  result.seconds = (performance.now() - started) / 1000
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- tracing: start -->', end: '<!-- tracing: end -->' }
const int = (n: number) => Math.round(n).toLocaleString('en-US')
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

const settingsText = (r: TracingResult): string =>
  `${r.settings.rounds} rounds of ${int(r.settings.requests)} requests per service (after a warm-up round of ${int(r.settings.warmup)}), ` +
  `off and on alternating, wrk -t1 -c${r.settings.connections}; LOG_LEVEL ${r.settings.logLevel}; tracing on: OTLP http/protobuf to a sink ` +
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
    body: measured(r) ? [...mdTable(table(r)), ''] : ['Nothing was measured.', ''],
    notes: r.notes,
    failures: failed(r),
    goalsTitle: 'Tracing goals',
    goals: tracingGoals(r),
  })
}

export function tracingConsole(r: TracingResult): string {
  const blocks = [`${settingsText(r)}; ${Math.round(r.seconds)} s`]
  if (measured(r)) blocks.push(textTable(table(r)))
  return sectionConsole({ blocks, notes: r.notes, failures: failed(r), goals: tracingGoals(r) })
}

/** RESULTS.md's tracing section as it stands (markers included), or undefined. */
export const readTracingSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its tracing section, or after everything else. */
export const writeTracingSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
