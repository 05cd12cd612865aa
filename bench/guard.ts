// `npm run bench:guard`: the service's CPU time per request, as users run it (`petstore serve`, a
// process of its own), against the minimal Fastify app and the bare node:http server doing the same
// job from memory in the same run, for each scenario of bench/cpu-scenarios.ts on each backend.
// Each ratio (service ÷ Fastify) is compared with bench/budgets.json; one over its budget is measured
// once more, and over it again fails the run, naming the scenario, the figure and the budget. BENCH_BASELINE=<build>/dist/src/cli.js
// measures an earlier build beside it (its ratios are reported, not judged).
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableBackends, disposeOpenDatabases, postgresBackend, sqliteBackend } from './backends.js'
import {
  type CpuSample,
  type CpuScenario,
  type GuardTarget,
  measureScenario,
  SCENARIOS,
  startTargets,
  type Targets,
} from './cpu-scenarios.js'
import { envNumber } from './config.js'
import { killAllChildren } from './procs.js'
import { wrkVersion } from './load.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist/src/cli.js')
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined
const BUDGETS = join(ROOT, 'bench/budgets.json')
/** Rounds: each scenario's targets measured once per round, alternating their order; the median round's ratio is judged. */
const ROUNDS = Math.floor(envNumber('GUARD_ROUNDS', 7, 1))
const WARM_ROUNDS = 2
/** Only these scenarios (comma-separated ids) when set. */
const ONLY = process.env.GUARD_SCENARIOS?.split(',').map((s) => s.trim())
/** The whole run's bound. */
const LIMIT_MS = envNumber('GUARD_LIMIT_S', 600, 10) * 1000

const log = (line: string): void => console.log(`[guard ${new Date().toISOString().slice(11, 19)}] ${line}`)

interface Budgets {
  /** `<backend>/<scenario>` -> the largest service ÷ Fastify CPU-per-request ratio allowed. */
  budgets: Record<string, number>
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const us = (sample: CpuSample): string => (sample.nsPerRequest / 1000).toFixed(1)

/** Warm-up rounds, then ROUNDS measured rounds of one scenario: the median round's service ÷ Fastify ratio, logged with every round. */
async function judge(
  scenario: CpuScenario,
  targets: Targets,
  key: string,
  budget: number | undefined,
): Promise<{ ratio: number; serviceUs: number; line: string }> {
  const rounds: Array<Map<string, CpuSample>> = []
  for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {
    // The first rounds warm every target (JIT, caches, the database's pages) and are not counted:
    // measured, the figures of the first two still fall from round to round.
    const samples = await measureScenario(scenario, targets, round)
    if (round >= WARM_ROUNDS) rounds.push(samples)
  }
  const ratioOf = (target: GuardTarget['name']): number[] => rounds.map((r) => r.get(target)!.nsPerRequest / r.get('fastify')!.nsPerRequest)
  const ratio = median(ratioOf('service'))
  const medianUs = (target: GuardTarget['name']): number => median(rounds.map((r) => r.get(target)!.nsPerRequest)) / 1000
  const baseline =
    BASELINE === undefined || !rounds[0]!.has('baseline')
      ? ''
      : `, baseline ${medianUs('baseline').toFixed(1)} µs (÷ Fastify ${median(ratioOf('baseline')).toFixed(2)})`
  const line =
    `${key}: service ${medianUs('service').toFixed(1)} µs/request, Fastify ${medianUs('fastify').toFixed(1)}, bare ${medianUs('bare').toFixed(1)}; ` +
    `service ÷ Fastify ${ratio.toFixed(2)} (rounds ${ratioOf('service')
      .map((r) => r.toFixed(2))
      .join(' ')})${baseline}; budget ${budget === undefined ? 'none' : budget.toFixed(2)}`
  log(line)
  for (const name of rounds[0]!.keys()) {
    const rps = median(rounds.map((r) => r.get(name)!.rps))
    log(`  ${name}: ${rounds.map((r) => us(r.get(name)!)).join(' ')} µs; ${rps.toFixed(0)} requests/s (median)`)
  }
  return { ratio, serviceUs: medianUs('service'), line }
}

async function main(): Promise<number> {
  if (wrkVersion() === undefined) {
    console.error('bench:guard: wrk not found on PATH; install it first: apt-get install wrk')
    return 1
  }
  const { budgets } = JSON.parse(await readFile(BUDGETS, 'utf8')) as Budgets
  // Under CI both backends are required; elsewhere PostgreSQL is measured when it answers, or GUARD_BACKENDS picks.
  const named = process.env.GUARD_BACKENDS?.split(',').map((s) => s.trim())
  const backends = process.env.CI
    ? [sqliteBackend, postgresBackend]
    : (await availableBackends(log)).filter((b) => named === undefined || named.includes(b.name))
  const scenarios = SCENARIOS.filter((s) => ONLY === undefined || ONLY.includes(s.id))
  log(`Node ${process.version}, ${ROUNDS} rounds, scenarios ${scenarios.map((s) => s.id).join(', ')}; service ${CLI}`)
  const dir = await mkdtemp(join(tmpdir(), 'petstore-guard-'))
  const over: string[] = []
  const lines: string[] = []
  try {
    for (const backend of backends) {
      const targets = await startTargets(CLI, BASELINE, backend, dir, log)
      const serviceUs = new Map<string, number>()
      try {
        for (const scenario of scenarios) {
          const key = `${backend.name}/${scenario.id}`
          const budget = budgets[key]
          let judged = await judge(scenario, targets, key, budget)
          // A scenario over its budget is measured once more, and judged on that: a burst of some other
          // work on the machine can lift one measurement, a cost in the build lifts both.
          if (budget !== undefined && judged.ratio > budget) {
            log(`${key}: over its budget; measuring it once more`)
            judged = await judge(scenario, targets, key, budget)
          }
          lines.push(judged.line)
          serviceUs.set(scenario.id, judged.serviceUs)
          if (budget === undefined) over.push(`${key}: no budget in bench/budgets.json`)
          else if (judged.ratio > budget)
            over.push(
              `${key}: service ÷ Fastify CPU per request ${judged.ratio.toFixed(2)} is over its budget ${budget.toFixed(2)} (twice)`,
            )
        }
        // Shown, not judged: what 100 open streams add to a PATCH (issue 36 asks at most 1.25 ×).
        const [withStreams, without] = [serviceUs.get('patch-one-100-streams'), serviceUs.get('patch-one')]
        if (withStreams !== undefined && without !== undefined) {
          const line = `${backend.name}: CPU per PATCH with 100 open streams ÷ without: ${(withStreams / without).toFixed(2)}`
          log(line)
          lines.push(line)
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
    console.log(`bench:guard FAILED:\n  ${over.join('\n  ')}`)
    return 1
  }
  console.log('bench:guard: every scenario within its budget')
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
      console.error('bench:guard crashed:', error)
      killAllChildren()
      await disposeOpenDatabases()
      process.exitCode = 1
    },
  )
  .finally(() => clearTimeout(watchdog))
