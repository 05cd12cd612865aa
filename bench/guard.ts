// `npm run bench:guard`: this build's CPU time per request against a pinned earlier build of the
// service itself (bench/baseline, built by bench/baseline-build.ts), both run as users run them
// (`petstore serve`, a process each), alternated in one run, for each scenario of
// bench/cpu-scenarios.ts on each backend. The judged figure is the median over the rounds of each
// round's ratio, this build ÷ the baseline; over its budget (bench/budgets.json) the scenario is read
// once more (a third time when the two readings disagree), and over it again fails the run, printing
// the scenario, both builds' CPU per request, the ratio and every round.
import { readFile } from 'node:fs/promises'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableBackends, disposeOpenDatabases, postgresBackend, sqliteBackend } from './backends.js'
import { prepareBaseline } from './baseline-build.js'
import { envNumber } from './config.js'
import { type CpuSample, type CpuScenario, measureScenario, SCENARIOS, startTargets, type Targets } from './cpu-scenarios.js'
import { wrkVersion } from './load.js'
import { killAllChildren } from './procs.js'
import { median } from './stats.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist/src/cli.js')
/** Another build in the baseline's place (`GUARD_BASELINE_CLI=<build>/dist/src/cli.js`), for trying the guard itself; never in CI. */
const BASELINE_OVERRIDE = process.env.GUARD_BASELINE_CLI ? resolve(process.env.GUARD_BASELINE_CLI) : undefined
const BUDGETS = join(ROOT, 'bench/budgets.json')
/** Rounds of one reading: each build measured once per round, the first one turned every round. */
const ROUNDS = Math.floor(envNumber('GUARD_ROUNDS', 10, 2))
/** Unjudged rounds first: JIT, caches and the database's pages warm. */
const WARM_ROUNDS = 2
/** Only these scenarios (comma-separated ids) when set. */
const ONLY = process.env.GUARD_SCENARIOS?.split(',').map((s) => s.trim())
/** The whole run's bound. */
const LIMIT_MS = envNumber('GUARD_LIMIT_S', 900, 10) * 1000

const log = (line: string): void => console.log(`[guard ${new Date().toISOString().slice(11, 19)}] ${line}`)

interface Budgets {
  /** `<backend>/<scenario>` -> the largest ratio allowed, this build's CPU per request ÷ the baseline's. */
  budgets: Record<string, number>
}

interface Reading {
  /** Each round's ratio, this build ÷ the baseline. */
  ratios: number[]
  serviceUs: number[]
  baselineUs: number[]
}

/** One reading of a scenario: warm rounds, then ROUNDS rounds, each logged. */
async function read(scenario: CpuScenario, targets: Targets, key: string): Promise<Reading> {
  const rounds: Array<Map<string, CpuSample>> = []
  for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {
    const samples = await measureScenario(scenario, targets, round)
    if (round >= WARM_ROUNDS) rounds.push(samples)
  }
  const us = (name: string): number[] => rounds.map((r) => r.get(name)!.nsPerRequest / 1000)
  for (const name of ['service', 'baseline']) {
    const rps = median(rounds.map((r) => r.get(name)!.rps))
    const busy = median(rounds.map((r) => r.get(name)!.busy))
    const figures = us(name).map((v) => v.toFixed(1))
    log(
      `  ${key} ${name === 'service' ? 'this build' : 'baseline'}: ${figures.join(' ')} µs; ${rps.toFixed(0)} requests/s, ${(busy * 100).toFixed(0)} % of a CPU (medians)`,
    )
  }
  return {
    ratios: rounds.map((r) => r.get('service')!.nsPerRequest / r.get('baseline')!.nsPerRequest),
    serviceUs: us('service'),
    baselineUs: us('baseline'),
  }
}

/**
 * The judged line: both builds' median CPU per request, the judged ratio, every round's ratio, the
 * budget. The judged ratio is the median of every round's, over one reading or two; over three, the
 * middle one of the readings' medians: what two of the three pairs of processes read.
 */
function describe(key: string, readings: readonly Reading[], budget: number | undefined): { ratio: number; line: string } {
  const ratio = readings.length === 3 ? median(readings.map((r) => median(r.ratios))) : median(readings.flatMap((r) => r.ratios))
  const which = ['rounds', "both readings' rounds", "the three readings' rounds"][readings.length - 1]
  const line =
    `${key}: this build ${median(readings.flatMap((r) => r.serviceUs)).toFixed(1)} µs/request, ` +
    `baseline ${median(readings.flatMap((r) => r.baselineUs)).toFixed(1)}; ratio ${ratio.toFixed(3)} ` +
    `(${which} ${readings.map((r) => r.ratios.map((v) => v.toFixed(2)).join(' ')).join(' | ')}); ` +
    `budget ${budget === undefined ? 'none' : budget.toFixed(2)}`
  return { ratio, line }
}

async function main(): Promise<number> {
  if (wrkVersion() === undefined) {
    console.error('bench:guard: wrk not found on PATH; install it first: apt-get install wrk')
    return 1
  }
  const { budgets } = JSON.parse(await readFile(BUDGETS, 'utf8')) as Budgets
  let baselineCli: string
  let baselineName: string
  if (BASELINE_OVERRIDE !== undefined) {
    if (process.env.CI) throw new Error('GUARD_BASELINE_CLI is for trying the guard by hand; CI judges against bench/baseline')
    ;[baselineCli, baselineName] = [BASELINE_OVERRIDE, BASELINE_OVERRIDE]
  } else {
    const baseline = await prepareBaseline(ROOT, log)
    ;[baselineCli, baselineName] = [baseline.cli, baseline.commit.slice(0, 12)]
  }
  // Under CI both backends are required; elsewhere PostgreSQL is measured when it answers, or GUARD_BACKENDS picks.
  const named = process.env.GUARD_BACKENDS?.split(',').map((s) => s.trim())
  const backends = process.env.CI
    ? [sqliteBackend, postgresBackend]
    : (await availableBackends(log)).filter((b) => named === undefined || named.includes(b.name))
  const scenarios = SCENARIOS.filter((s) => ONLY === undefined || ONLY.includes(s.id))
  log(`Node ${process.version}, ${ROUNDS} rounds, scenarios ${scenarios.map((s) => s.id).join(', ')}`)
  log(`this build ${CLI}; baseline ${baselineName}`)
  const dir = await mkdtemp(join(tmpdir(), 'petstore-guard-'))
  const over: string[] = []
  const lines: string[] = []
  try {
    for (const backend of backends) {
      let targets = await startTargets(CLI, baselineCli, backend, dir, log)
      try {
        for (const scenario of scenarios) {
          const key = `${backend.name}/${scenario.id}`
          const budget = budgets[key]
          const readings = [await read(scenario, targets, key)]
          let judged = describe(key, readings, budget)
          log(judged.line)
          // Over its budget, a scenario is read once more, on both builds started anew (a process can
          // settle in a slower state for its life: the same build against itself read 1.13 in one pair
          // of processes, 1.00 in the next three), and judged on the rounds of both readings.
          if (budget !== undefined && judged.ratio > budget) {
            log(`${key}: over its budget; starting both builds anew for a second reading`)
            await targets.stop()
            targets = await startTargets(CLI, baselineCli, backend, dir, log)
            readings.push(await read(scenario, targets, key))
            // The two pairs disagree (the second one's median within the budget) and their rounds
            // together over it: a third pair decides. PostgreSQL's patch-one-100-streams read every
            // round of one pair at 1.14-1.38 and every round of the next at 0.77-1.09, 1.114 together.
            judged = describe(key, readings, budget)
            if (judged.ratio > budget && median(readings[1]!.ratios) <= budget) {
              log(judged.line)
              log(`${key}: the two readings disagree; starting both builds anew for a third`)
              await targets.stop()
              targets = await startTargets(CLI, baselineCli, backend, dir, log)
              readings.push(await read(scenario, targets, key))
              judged = describe(key, readings, budget)
            }
            log(judged.line)
          }
          lines.push(judged.line)
          if (budget === undefined) over.push(`${key}: no budget in bench/budgets.json`)
          else if (judged.ratio > budget)
            over.push(
              `${key}: CPU per request ${judged.ratio.toFixed(3)} × the baseline's (${readings.length} readings), over its budget ${budget.toFixed(2)}`,
            )
        }
      } finally {
        await targets.stop()
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  console.log(`\n${lines.join('\n')}\n`)
  if (over.length > 0) {
    console.log(`bench:guard FAILED against the baseline ${baselineName}:\n  ${over.join('\n  ')}`)
    return 1
  }
  console.log(`bench:guard: every scenario within its budget against the baseline ${baselineName}`)
  return 0
}

const watchdog = setTimeout(() => {
  console.error(`bench:guard: exceeded ${LIMIT_MS / 1000} s; killing the servers`)
  killAllChildren()
  void disposeOpenDatabases().finally(() => process.exit(1))
}, LIMIT_MS)
watchdog.unref()
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAllChildren()
    void disposeOpenDatabases().finally(() => process.exit(1))
  })
}

main()
  .then(
    (code) => {
      process.exitCode = code
    },
    async (error: unknown) => {
      console.error(`bench:guard failed: ${error instanceof Error ? error.message : String(error)}`)
      killAllChildren()
      await disposeOpenDatabases()
      process.exitCode = 1
    },
  )
  .finally(() => clearTimeout(watchdog))
