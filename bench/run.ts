// `npm run bench`: wrk against the service and, in the same run, two ceilings doing the same job from
// memory (bare node:http and a minimal Fastify app), per scenario and backend; then the live-changes
// group, the message-broker group, the tracing group, the stock-moves group, the 1,000,000-entry
// section and, when BENCH_SCENARIOS names them, the holds group, the ledger-size section and the console's
// first page (`BENCH_SCENARIOS=console`, `brokers`, `tracing`, `stock` or `holds` alone runs only that).
// Writes bench/RESULTS.md.
import { existsSync, rmSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableBackends, disposeOpenDatabases } from './backends.js'
import {
  BROKERS_GROUP,
  brokersBudgetMs,
  brokersConsole,
  brokersGoals,
  brokersOnly,
  removeBrokerDestinations,
  renderBrokers,
  runBrokers,
  selectBrokers,
  writeBrokersSection,
  type BrokersResult,
} from './brokers.js'
import {
  CONNECTIONS,
  DURATION_SECONDS,
  FIRST_PET_ID,
  HUGE_INVENTORY,
  LARGE_INVENTORY,
  LOAD_GRACE_MS,
  ORDER_STOCK,
  RUN_HUGE,
  ROUNDS,
  SCENARIO_IDS,
  SMALL_INVENTORY,
  WARMUP_SECONDS,
  WRK_THREADS,
} from './config.js'
import {
  CONSOLE_GROUP,
  consoleBudgetMs,
  consoleGoals,
  consoleOnly,
  consoleReportText,
  readConsoleSection,
  renderConsole,
  runConsole,
  selectConsole,
  writeConsoleSection,
  type ConsoleResult,
} from './console-first-page.js'
import {
  HOLDS_GROUP,
  holdsBudgetMs,
  holdsConsole,
  holdsGoals,
  holdsOnly,
  readHoldsSection,
  renderHolds,
  runHolds,
  selectHolds,
  writeHoldsSection,
  type HoldsResult,
} from './holds.js'
import { runHuge, type HugeResult } from './huge.js'
import {
  LEDGER_GROUP,
  LEDGER_SIZES,
  ledgerBudgetMs,
  ledgerConsole,
  ledgerGoals,
  readLedgerSection,
  renderLedger,
  runLedger,
  selectLedger,
  writeLedgerSection,
  type LedgerResult,
} from './ledger-size.js'
import {
  LIVE_GROUP,
  LIVE_SCENARIO_IDS,
  liveBudgetMs,
  liveConsole,
  liveGoals,
  renderLive,
  runLive,
  selectLive,
  writeLiveSection,
  type LiveResult,
} from './live.js'
import { cpuPerRequest, runLoad, wrkVersion, type LoadSpec, type Measured } from './load.js'
import { cpuTimeOf, killAllChildren, machineTicks, stealPercent } from './procs.js'
import {
  consoleReport,
  cpuText,
  goals,
  loadAverage,
  machine,
  medianBy,
  rowProblem,
  writeMarkdown,
  type Row,
  type RunInfo,
} from './report.js'
import {
  renderStock,
  runStock,
  selectStock,
  STOCK_GROUP,
  STOCK_PART_IDS,
  stockBudgetMs,
  stockConsole,
  stockGoals,
  stockOnly,
  writeStockSection,
  type StockResult,
} from './stock-moves.js'
import {
  TRACING_GROUP,
  renderTracing,
  runTracing,
  selectTracing,
  tracingBudgetMs,
  tracingConsole,
  tracingGoals,
  tracingOnly,
  writeTracingSection,
  type TracingResult,
} from './tracing.js'
import {
  checkGet,
  checkOrder,
  checkPatch,
  makeDataset,
  startCeiling,
  startService,
  type Ceiling,
  type Dataset,
  type Running,
} from './targets.js'

interface Scenario {
  id: string
  size: number
  kind: 'get' | 'patch' | 'order'
  /** Every pet's quantity, instead of the dataset's pseudo-random ones (the order scenario must never run out). */
  stock?: number
  /** The load names only this many pets (from the first): 1 is the unfriendly case, one hot pet (a flash sale). */
  pets?: number
}

const ALL_SCENARIOS: readonly Scenario[] = [
  { id: 'get-100', size: SMALL_INVENTORY, kind: 'get' },
  { id: 'get-10000', size: LARGE_INVENTORY, kind: 'get' },
  { id: 'patch', size: LARGE_INVENTORY, kind: 'patch' },
  { id: 'patch-one', size: LARGE_INVENTORY, kind: 'patch', pets: 1 },
  { id: 'order', size: LARGE_INVENTORY, kind: 'order', stock: ORDER_STOCK },
  { id: 'order-one', size: LARGE_INVENTORY, kind: 'order', stock: ORDER_STOCK, pets: 1 },
]
const KNOWN_IDS: readonly string[] = [
  ...ALL_SCENARIOS.map((s) => s.id),
  ...LIVE_SCENARIO_IDS,
  LIVE_GROUP,
  BROKERS_GROUP,
  TRACING_GROUP,
  STOCK_GROUP,
  ...STOCK_PART_IDS,
  HOLDS_GROUP,
  LEDGER_GROUP,
  CONSOLE_GROUP,
]
const unknownIds = SCENARIO_IDS?.filter((id) => !KNOWN_IDS.includes(id)) ?? []
if (unknownIds.length > 0) {
  console.error(`bench: BENCH_SCENARIOS names unknown scenarios: ${unknownIds.join(', ')} (known: ${KNOWN_IDS.join(', ')})`)
  process.exit(1)
}
const SCENARIOS = ALL_SCENARIOS.filter((s) => SCENARIO_IDS === undefined || SCENARIO_IDS.includes(s.id))
/** The live-changes group (bench/live.ts): all of it by default, or the ids (or `live`) BENCH_SCENARIOS names. */
const LIVE = selectLive(SCENARIO_IDS)
/** The message-broker group (bench/brokers.ts): in a default run, or when BENCH_SCENARIOS names `brokers`. */
const BROKERS = selectBrokers(SCENARIO_IDS)
/** The tracing group (bench/tracing.ts): in a default run, or when BENCH_SCENARIOS names `tracing`. */
const TRACING = selectTracing(SCENARIO_IDS)
/** The stock-moves group (bench/stock-moves.ts): in a default run, or the scenarios of `stock` (or its parts) BENCH_SCENARIOS names. */
const STOCK = selectStock(SCENARIO_IDS)
/** The holds group (bench/holds.ts): only when BENCH_SCENARIOS names `holds` (it takes 2.5 to 5 minutes). */
const HOLDS = selectHolds(SCENARIO_IDS)
/** The ledger-size section (bench/ledger-size.ts): only when BENCH_SCENARIOS names `ledger`. */
const LEDGER = selectLedger(SCENARIO_IDS)
/** The console's first page at 1,000,000 entries (bench/console-first-page.ts): only when BENCH_SCENARIOS names `console`. */
const CONSOLE = selectConsole(SCENARIO_IDS)
/** The 1,000,000-entry section, unless BENCH_HUGE=0 or BENCH_SCENARIOS names only `console`, only `brokers`, only `tracing`, only `stock` or only `holds` (which then runs alone). */
const HUGE =
  RUN_HUGE &&
  !consoleOnly(SCENARIO_IDS) &&
  !brokersOnly(SCENARIO_IDS) &&
  !tracingOnly(SCENARIO_IDS) &&
  !stockOnly(SCENARIO_IDS) &&
  !holdsOnly(SCENARIO_IDS)
const CEILINGS: readonly Ceiling[] = ['fastify', 'bare']

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist/src/cli.js')
/**
 * An earlier build of the service (its dist/src/cli.js), measured in the same run as `baseline/<backend>`
 * on every scenario (so it must serve orders): a before/after comparison that the machine's drift between runs cannot blur.
 */
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined
const BASELINE_LABEL = process.env.BENCH_BASELINE_LABEL ?? BASELINE
const RESULTS = join(ROOT, 'bench/RESULTS.md')

const log = (msg: string): void => {
  console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`)
}
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

const WRK = wrkVersion()
// The console's section alone drives a browser, not wrk.
if (WRK === undefined && !consoleOnly(SCENARIO_IDS)) {
  console.error('bench: wrk not found on PATH; install it first: apt-get install wrk')
  process.exit(1)
}
const BACKENDS = await availableBackends(log)
/** The run's temporary folder (datasets, the ceilings' bodies), removed at the end or on abort. */
let workDir: string | undefined

/** Warm-up, then the measured run, against a server that has already answered correctly once. */
async function measure(scenario: Scenario, running: Running, dataset: Dataset): Promise<Measured> {
  const spec: LoadSpec = { url: `${running.server.baseUrl}/v1/inventory`, token: running.token }
  if (scenario.kind === 'patch' || scenario.kind === 'order') {
    spec.rotation = { script: scenario.kind, firstPetId: FIRST_PET_ID, petCount: scenario.pets ?? dataset.items.length }
  }
  if (scenario.kind === 'order') spec.url = `${running.server.baseUrl}/v1/store/orders`
  if (WARMUP_SECONDS > 0) {
    const warm = await runLoad(spec, WARMUP_SECONDS)
    const diedEarly = running.server.unexpectedExit()
    if (diedEarly !== undefined) throw new Error(`${running.server.label} exited during the warm-up: ${diedEarly}`)
    if (warm.errors > 0 || warm.non2xx > 0) {
      log(`  warning: warm-up saw ${warm.non2xx} non-2xx/3xx and socket errors ${warm.errorDetail}`)
    }
  }
  // Read around the measured run only, so the warm-up's JIT and cache filling are not counted.
  const [cpuBefore, machineBefore] = [await cpuTimeOf(running.server.pid), await machineTicks()]
  const measured = await runLoad(spec, DURATION_SECONDS)
  const [cpuAfter, machineAfter] = [await cpuTimeOf(running.server.pid), await machineTicks()]
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${running.server.label} exited during the run: ${died}`)
  const stealPct = stealPercent(machineBefore, machineAfter)
  return { ...measured, ...cpuPerRequest(cpuBefore, cpuAfter, measured.completed), ...(stealPct === undefined ? {} : { stealPct }) }
}

/** A scenario's target: its row (every round's run lands there) and how to start it afresh. */
interface Target {
  row: Row
  start: () => Promise<Running>
}

/** Starts a target, checks one request, measures, always stops it. Failures land in the row. */
async function runTarget(
  row: Row,
  scenario: Scenario,
  dataset: Dataset,
  start: () => Promise<Running>,
  round: number,
): Promise<Buffer | undefined> {
  log(`${scenario.id} / ${row.target}: starting (round ${round + 1} of ${ROUNDS})`)
  let body: Buffer | undefined
  let error: unknown
  try {
    const running = await start()
    try {
      if (scenario.kind === 'get') body = await checkGet(running, dataset)
      else if (scenario.kind === 'patch') await checkPatch(running, dataset)
      else await checkOrder(running, dataset, row.target.startsWith('service/'))
      const run = await measure(scenario, running, dataset)
      row.runs.push(run)
      row.measured = medianBy(row.runs, (r) => r.rps)
    } catch (err) {
      error = err
    }
    try {
      await running.stop()
    } catch (err) {
      error ??= err // keep the first failure; a server that died mid-run also fails stop()
    }
  } catch (err) {
    error = err
  }
  if (error !== undefined) {
    row.failure = message(error)
    log(`  FAILED ${scenario.id} / ${row.target}:\n${row.failure}`)
  }
  const problem = rowProblem(row)
  if (problem !== undefined) log(`  WARNING ${scenario.id} / ${row.target}: ${problem}`)
  else if (row.runs.length > 0) {
    const m = row.runs[row.runs.length - 1]!
    log(
      `  ${m.rps.toFixed(0)} req/s, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms, server CPU ${cpuText(m)} µs/req (user+sys), CPU steal ${m.stealPct === undefined ? '-' : m.stealPct.toFixed(0)} %`,
    )
  }
  return body
}

async function main(): Promise<number> {
  if (!existsSync(CLI)) {
    console.error(`bench: ${CLI} not found; build the service first (npm run build) or set BENCH_CLI`)
    return 1
  }
  const info: RunInfo = {
    date: new Date().toISOString(),
    wrk: WRK ?? 'wrk',
    threads: WRK_THREADS,
    connections: CONNECTIONS,
    durationSeconds: DURATION_SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    rounds: ROUNDS,
    loadAverage: loadAverage(),
    backends: BACKENDS.map((b) => b.name),
    ...(BASELINE_LABEL !== undefined && { baseline: BASELINE_LABEL }),
  }
  log(`machine: ${machine()}, Node ${process.version}; load average ${info.loadAverage.toFixed(2)}`)
  log(
    `load generator: ${info.wrk}, -t${WRK_THREADS} -c${CONNECTIONS}; ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per run, ${ROUNDS} rounds; ` +
      `backends: ${info.backends.join(', ')}`,
  )
  log(`service: ${CLI}`)
  if (BASELINE !== undefined) log(`baseline: ${BASELINE_LABEL}`)

  const dir = await mkdtemp(join(tmpdir(), 'petstore-bench-'))
  workDir = dir
  const rows: Row[] = []
  const huge: HugeResult[] = []
  let live: LiveResult | undefined
  let brokers: BrokersResult | undefined
  let tracing: TracingResult | undefined
  let stock: StockResult | undefined
  let holds: HoldsResult | undefined
  let ledger: LedgerResult | undefined
  let consoleResult: ConsoleResult | undefined
  try {
    const datasets = new Map<string, Dataset>()
    const datasetOf = async (size: number, stock?: number): Promise<Dataset> => {
      const key = `${size}/${stock ?? 'random'}`
      let dataset = datasets.get(key)
      if (!dataset) {
        dataset = await makeDataset(dir, size, false, stock)
        datasets.set(key, dataset)
      }
      return dataset
    }
    for (const scenario of SCENARIOS) {
      const ds = await datasetOf(scenario.size, scenario.stock)
      let serviceBody: Buffer | undefined
      let serviceTarget = ''
      const target = (name: string, start: () => Promise<Running>): Target => ({
        row: { scenario: scenario.id, target: name, runs: [] },
        start,
      })
      const services = BACKENDS.map((backend) => target(`service/${backend.name}`, () => startService(CLI, backend, ds, scenario.id)))
      const baselines =
        BASELINE !== undefined
          ? BACKENDS.map((backend) =>
              target(`baseline/${backend.name}`, () => startService(BASELINE, backend, ds, `${scenario.id}-baseline`)),
            )
          : []
      // The ceilings answer GET with the exact bytes the service returned (same items either way; checked).
      const ceilings = CEILINGS.map((ceiling) => target(ceiling, () => startCeiling(ceiling, ds, dir, serviceBody)))
      const targets = [...services, ...baselines, ...ceilings]
      for (let round = 0; round < ROUNDS; round++) {
        // Round 1 runs the services first (the ceilings serve their bytes); later rounds rotate the order.
        for (let i = 0; i < targets.length; i++) {
          const { row, start } = targets[(i + round) % targets.length]!
          const body = await runTarget(row, scenario, ds, start, round)
          if (!row.target.startsWith('service/') || body === undefined) continue
          if (serviceBody !== undefined && !body.equals(serviceBody)) {
            log(`  note: ${row.target} returned different bytes than ${serviceTarget}; the ceilings serve the latter`)
          }
          if (serviceBody === undefined) {
            serviceBody = body
            serviceTarget = row.target
            if (!serviceBody.equals(ds.expectedBody)) {
              log(
                `  note: service body (${serviceBody.length} B) differs in bytes from JSON.stringify (${ds.expectedBody.length} B); the ceilings serve the service's bytes`,
              )
            }
          }
        }
      }
      rows.push(...targets.map((t) => t.row))
    }

    if (LIVE.length > 0) live = await runLive(CLI, BACKENDS, LIVE, dir, ROUNDS, log, info.loadAverage)

    if (BROKERS) brokers = await runBrokers(CLI, BACKENDS, dir, log, info.loadAverage)

    if (TRACING) tracing = await runTracing(CLI, BACKENDS, dir, log, info.loadAverage)

    if (STOCK.length > 0) stock = await runStock(CLI, BACKENDS, STOCK, dir, log, info.loadAverage)

    if (HOLDS) holds = await runHolds(CLI, BACKENDS, dir, log, info.loadAverage)

    if (HUGE) {
      log(`1M: generating ${HUGE_INVENTORY} entries (JSON and CSV)`)
      const hugeSet = await makeDataset(dir, HUGE_INVENTORY, true)
      const small = await datasetOf(SMALL_INVENTORY)
      for (const backend of BACKENDS) huge.push(await runHuge(CLI, backend, hugeSet, small, dir, log))
      if (!info.backends.includes('postgres')) info.hugeNote = 'PostgreSQL was not reachable, so its 1,000,000-entry columns are missing.'
    } else {
      info.hugeNote = 'the 1,000,000-entry section was skipped (BENCH_HUGE=0).'
    }

    if (LEDGER) ledger = await runLedger(CLI, BACKENDS, dir, log, info.loadAverage)

    if (CONSOLE) consoleResult = await runConsole(CLI, BACKENDS, dir, log, info.loadAverage)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }

  // A run of the live-changes group, the broker group, the tracing group, the stock-moves group, the holds group, the ledger-size section or the console section alone replaces only its
  // section of RESULTS.md; any other run rewrites the file, keeping the holds, ledger-size and console sections when
  // they did not run (they are not in a default run).
  if (rows.length > 0 || huge.length > 0) {
    const keptHolds = holds === undefined ? await readHoldsSection(RESULTS) : undefined
    const keptLedger = ledger === undefined ? await readLedgerSection(RESULTS) : undefined
    const keptConsole = consoleResult === undefined ? await readConsoleSection(RESULTS) : undefined
    console.log(`\nLoad generator: ${info.wrk}, -t${WRK_THREADS} -c${CONNECTIONS}\n`)
    console.log(consoleReport(rows, huge, info.backends))
    await writeMarkdown(RESULTS, info, rows, huge)
    if (keptHolds !== undefined) await writeHoldsSection(RESULTS, keptHolds)
    if (keptLedger !== undefined) await writeLedgerSection(RESULTS, keptLedger)
    if (keptConsole !== undefined) await writeConsoleSection(RESULTS, keptConsole)
  }
  if (live !== undefined) {
    console.log(`\nLive changes:\n${liveConsole(live)}`)
    await writeLiveSection(RESULTS, renderLive(live))
  }
  if (brokers !== undefined) {
    console.log(`\nMessage brokers:\n${brokersConsole(brokers)}`)
    await writeBrokersSection(RESULTS, renderBrokers(brokers))
  }
  if (tracing !== undefined) {
    console.log(`\nTracing:\n${tracingConsole(tracing)}`)
    await writeTracingSection(RESULTS, renderTracing(tracing))
  }
  if (stock !== undefined) {
    console.log(`\nStock moves:\n${stockConsole(stock)}`)
    await writeStockSection(RESULTS, renderStock(stock))
  }
  if (holds !== undefined) {
    console.log(`\nHolds:\n${holdsConsole(holds)}`)
    await writeHoldsSection(RESULTS, renderHolds(holds))
  }
  if (ledger !== undefined) {
    console.log(`\nLedger size:\n${ledgerConsole(ledger)}`)
    await writeLedgerSection(RESULTS, renderLedger(ledger))
  }
  if (consoleResult !== undefined) {
    console.log(`\nConsole first page:\n${consoleReportText(consoleResult)}`)
    await writeConsoleSection(RESULTS, renderConsole(consoleResult))
  }
  console.log(`\nwrote ${RESULTS}`)
  const liveMissed = live === undefined ? [] : liveGoals(live).filter((g) => g.met === false)
  const liveFailed =
    live === undefined ? 0 : [...live.webhook, ...live.streams, ...live.patch].filter((t) => t.failure !== undefined).length
  const brokersMissed = brokers === undefined ? [] : brokersGoals(brokers).filter((g) => g.met === false)
  const brokersFailed = brokers === undefined ? 0 : brokers.rows.filter((r) => r.failure !== undefined).length
  const tracingMissed = tracing === undefined ? [] : tracingGoals(tracing).filter((g) => g.met === false)
  const tracingFailed = tracing === undefined ? 0 : tracing.rows.filter((r) => r.failure !== undefined).length
  const stockMissed = stock === undefined ? [] : stockGoals(stock).filter((g) => g.met === false)
  const stockFailed = stock === undefined ? 0 : stock.rows.filter((r) => r.failure !== undefined).length
  const holdsMissed = holds === undefined ? [] : holdsGoals(holds).filter((g) => g.met === false)
  const holdsFailed = holds === undefined ? 0 : [...holds.rows, ...holds.expiry].filter((r) => r.failure !== undefined).length
  const ledgerMissed = ledger === undefined ? [] : ledgerGoals(ledger).filter((g) => g.met === false)
  const ledgerFailed = ledger === undefined ? 0 : ledger.rows.filter((r) => r.failure !== undefined).length
  const consoleMissed = consoleResult === undefined ? [] : consoleGoals(consoleResult).filter((g) => g.met === false)
  const consoleFailed = consoleResult === undefined ? 0 : consoleResult.rows.filter((r) => r.failure !== undefined).length
  const invalid = rows.filter((r) => rowProblem(r) !== undefined)
  const failedSteps = huge.reduce((n, h) => n + h.failures.length, 0)
  if (
    invalid.length > 0 ||
    failedSteps > 0 ||
    liveFailed > 0 ||
    brokersFailed > 0 ||
    tracingFailed > 0 ||
    stockFailed > 0 ||
    holdsFailed > 0 ||
    ledgerFailed > 0 ||
    consoleFailed > 0
  ) {
    console.log(
      `\nWARNING: ${invalid.length} invalid wrk run(s), ${failedSteps} failed 1M step(s), ${liveFailed} failed live-changes target(s), ` +
        `${brokersFailed} failed broker step(s), ${tracingFailed} failed tracing scenario(s), ${stockFailed} failed stock-move scenario(s), ` +
        `${holdsFailed} failed holds step(s), ` +
        `${ledgerFailed} failed ledger-size step(s) ` +
        `and ${consoleFailed} failed console backend(s); ` +
        'exiting with status 1',
    )
    return 1
  }
  const missed = [
    ...goals(rows, huge, info.backends).filter((g) => g.met === false),
    ...liveMissed,
    ...brokersMissed,
    ...tracingMissed,
    ...stockMissed,
    ...holdsMissed,
    ...ledgerMissed,
    ...consoleMissed,
  ]
  console.log(missed.length === 0 ? '\nAll goals met.' : `\nGoals not met (not an error): ${missed.map((g) => g.goal).join('; ')}`)
  return 0
}

// Hard upper bound on the whole run: each wrk run (warm-up + duration + grace + start/stop/import allowance),
// plus 6 minutes per backend for the 1,000,000-entry section, the live-changes group's, the broker group's, the
// tracing group's, the stock-moves group's, the holds group's, the ledger-size section's and the console section's bounds.
const runs = ROUNDS * SCENARIOS.length * (BACKENDS.length * (BASELINE === undefined ? 1 : 2) + CEILINGS.length)
const budgetMs =
  runs * ((WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 2 * LOAD_GRACE_MS + 60_000) +
  (HUGE ? BACKENDS.length * 360_000 : 0) +
  liveBudgetMs(LIVE, BACKENDS.length, ROUNDS) +
  (BROKERS ? brokersBudgetMs(BACKENDS.length) : 0) +
  (TRACING ? tracingBudgetMs(BACKENDS.length) : 0) +
  (STOCK.length > 0 ? stockBudgetMs(STOCK, BACKENDS.length) : 0) +
  (HOLDS ? holdsBudgetMs(BACKENDS.length) : 0) +
  (LEDGER ? ledgerBudgetMs(BACKENDS.length, LEDGER_SIZES) : 0) +
  (CONSOLE ? consoleBudgetMs(BACKENDS.length) : 0)
/**
 * Kills the servers, removes the run's folder, the broker group's streams, exchanges and queues, and
 * the databases still open (gigabytes at 10,000,000 ledger rows), then exits.
 */
let aborting = false
const abort = (code: number): void => {
  killAllChildren()
  if (aborting) return // a second signal while the databases are being dropped
  aborting = true
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true })
  void Promise.allSettled([removeBrokerDestinations(), disposeOpenDatabases()]).finally(() => process.exit(code))
}
const watchdog = setTimeout(() => {
  console.error(`bench: exceeded ${Math.round(budgetMs / 1000)} s overall; killing servers`)
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
    async (err: unknown) => {
      console.error('bench crashed:', err)
      killAllChildren()
      await Promise.allSettled([removeBrokerDestinations(), disposeOpenDatabases()])
      process.exitCode = 1
    },
  )
  .finally(() => clearTimeout(watchdog))
