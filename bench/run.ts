// `npm run bench`: service vs bare node:http, per scenario and backend. See bench/RESULTS.md for the output.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableBackends } from './backends.js'
import {
  DURATION_SECONDS, FIRST_PET_ID, GET_CONNECTIONS, LARGE_INVENTORY, LOAD_GRACE_MS, PATCH_CONNECTIONS,
  RATIO_TARGETS, SMALL_INVENTORY, WARMUP_SECONDS, WORKERS,
} from './config.js'
import { runLoad, type LoadSpec, type Measured } from './load.js'
import { killAllChildren } from './procs.js'
import { consoleTable, loadAverage, loadGenerator, machine, rowProblem, writeMarkdown, type Row, type RunInfo } from './report.js'
import { checkGet, checkPatch, makeDataset, startBare, startService, type Dataset, type Running } from './targets.js'

interface Scenario {
  id: string
  size: number
  kind: 'get' | 'patch'
  connections: number
}

const SCENARIOS: readonly Scenario[] = [
  { id: 'get-100', size: SMALL_INVENTORY, kind: 'get', connections: GET_CONNECTIONS },
  { id: 'get-10000', size: LARGE_INVENTORY, kind: 'get', connections: GET_CONNECTIONS },
  { id: 'patch', size: LARGE_INVENTORY, kind: 'patch', connections: PATCH_CONNECTIONS },
]

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CLI = process.env['BENCH_CLI'] ? resolve(process.env['BENCH_CLI']) : join(ROOT, 'dist/src/cli.js')
const RESULTS = join(ROOT, 'bench/RESULTS.md')

const log = (msg: string): void => { console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`) }
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))
const BACKENDS = await availableBackends(log)

/** Warm-up, then the measured run, against a server that has already answered correctly once. */
async function measure(scenario: Scenario, running: Running, dataset: Dataset): Promise<Measured> {
  const spec: LoadSpec = {
    url: `${running.server.baseUrl}/v1/inventory`,
    connections: scenario.connections,
    headers: { authorization: `Bearer ${running.token}` },
  }
  if (scenario.kind === 'patch') {
    spec.headers['content-type'] = 'application/json'
    spec.patchPets = { firstPetId: FIRST_PET_ID, petCount: dataset.items.length }
  }
  const warm = await runLoad(spec, WARMUP_SECONDS)
  const diedEarly = running.server.unexpectedExit()
  if (diedEarly !== undefined) throw new Error(`${running.server.label} exited during the warm-up: ${diedEarly}`)
  if (warm.errors > 0 || warm.non2xx > 0) {
    log(`  warning: warm-up saw ${warm.non2xx} non-2xx and ${warm.errors} errors (${warm.statusCodes})`)
  }
  const measured = await runLoad(spec, DURATION_SECONDS)
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${running.server.label} exited during the run: ${died}`)
  return measured
}

/** Starts a target, checks one request, measures, always stops it. Failures land in the row. */
async function runTarget(row: Row, scenario: Scenario, dataset: Dataset, start: () => Promise<Running>): Promise<Buffer | undefined> {
  log(`${scenario.id} / ${row.target}: starting`)
  let body: Buffer | undefined
  let error: unknown
  try {
    const running = await start()
    try {
      if (scenario.kind === 'get') body = await checkGet(running, dataset)
      else await checkPatch(running, dataset)
      row.measured = await measure(scenario, running, dataset)
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
  else if (row.measured) log(`  ${row.measured.rps.toFixed(0)} req/s, p50 ${row.measured.p50} ms, p99 ${row.measured.p99} ms`)
  return body
}

async function main(): Promise<number> {
  if (!existsSync(CLI)) {
    console.error(`bench: ${CLI} not found; build the service first (npm run build) or set BENCH_CLI`)
    return 1
  }
  const info: RunInfo = {
    date: new Date().toISOString(), durationSeconds: DURATION_SECONDS, warmupSeconds: WARMUP_SECONDS,
    getConnections: GET_CONNECTIONS, patchConnections: PATCH_CONNECTIONS, workers: WORKERS, loadAverage: loadAverage(),
  }
  log(`machine: ${machine()}; load average ${info.loadAverage.toFixed(2)}`)
  log(`load generator: ${loadGenerator(WORKERS)}; ${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s per run; ` +
    `${GET_CONNECTIONS} connections for GET, ${PATCH_CONNECTIONS} for PATCH; backends: ${BACKENDS.map((b) => b.name).join(', ')}`)
  log(`service: ${CLI}`)

  const dir = await mkdtemp(join(tmpdir(), 'petstore-bench-'))
  const rows: Row[] = []
  try {
    const datasets = new Map<number, Dataset>()
    for (const scenario of SCENARIOS) {
      let dataset = datasets.get(scenario.size)
      if (!dataset) {
        dataset = await makeDataset(dir, scenario.size)
        datasets.set(scenario.size, dataset)
      }
      const ds = dataset
      const serviceRows: Row[] = []
      let serviceBody: Buffer | undefined
      for (const backend of BACKENDS) {
        const row: Row = { scenario: scenario.id, target: `service/${backend.name}` }
        // The goals are the foundation's, for the default (SQLite) backend.
        const goal = backend.name === 'sqlite' ? RATIO_TARGETS[scenario.id] : undefined
        if (goal !== undefined) row.goal = goal
        const body = await runTarget(row, scenario, ds, () => startService(CLI, backend, ds, scenario.id))
        if (body !== undefined && serviceBody !== undefined && !body.equals(serviceBody)) {
          log(`  note: ${row.target} returned different bytes than ${serviceRows[0]?.target ?? 'the first backend'}; bare serves the first`)
        }
        serviceBody ??= body
        serviceRows.push(row)
      }
      // The bare server answers GET with the exact bytes the service returned (same items either way; checked).
      if (serviceBody !== undefined && !serviceBody.equals(ds.expectedBody)) {
        log(`  note: service body (${serviceBody.length} B) differs in bytes from JSON.stringify (${ds.expectedBody.length} B); bare serves the service's bytes`)
      }
      const bare: Row = { scenario: scenario.id, target: 'bare' }
      await runTarget(bare, scenario, ds, () => startBare(ds, dir, serviceBody))
      for (const row of serviceRows) {
        if (row.measured && bare.measured && bare.measured.rps > 0) row.ratio = row.measured.rps / bare.measured.rps
      }
      rows.push(...serviceRows, bare)
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }

  console.log(`\nLoad generator: ${loadGenerator(WORKERS)}\n`)
  console.log(consoleTable(rows))
  await writeMarkdown(RESULTS, info, rows)
  console.log(`\nwrote ${RESULTS}`)
  const invalid = rows.filter((r) => rowProblem(r) !== undefined)
  if (invalid.length > 0) {
    console.log(`\nWARNING: ${invalid.length} run(s) invalid (crash, errors or non-2xx responses); exiting with status 1`)
    return 1
  }
  const missed = rows.filter((r) => r.goal !== undefined && r.ratio !== undefined && r.ratio < r.goal)
  console.log(missed.length === 0 ? '\nAll ratio goals met.' : `\nRatio goal missed for: ${missed.map((r) => `${r.scenario} ${r.target}`).join(', ')} (not an error)`)
  return 0
}

// Hard upper bound on the whole run: per run warm-up + duration + load grace + start/stop/import allowance.
const runs = SCENARIOS.length * (BACKENDS.length + 1)
const budgetMs = runs * ((WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 2 * LOAD_GRACE_MS + 60_000)
const watchdog = setTimeout(() => {
  console.error(`bench: exceeded ${Math.round(budgetMs / 1000)} s overall; killing servers`)
  killAllChildren()
  process.exit(1)
}, budgetMs)
watchdog.unref()
process.once('SIGINT', () => { killAllChildren(); process.exit(130) })

main().then((code) => { process.exitCode = code }, (err: unknown) => {
  console.error('bench crashed:', err)
  killAllChildren()
  process.exitCode = 1
}).finally(() => clearTimeout(watchdog))
