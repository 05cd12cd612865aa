// Benchmark knobs. Everything tunable lives here; env overrides are read once at start-up.

/** Concurrent connections for every wrk run (the goals are stated at 64). */
export const CONNECTIONS = 64
/** wrk threads. One is enough to saturate a Node process on 2 cores and leaves the other core to the server. */
export const WRK_THREADS = 1
/** Un-measured warm-up run before every measured run, in seconds (env BENCH_WARMUP). */
export const WARMUP_SECONDS = Math.floor(envNumber('BENCH_WARMUP', 2, 0))
/** Measured run length in seconds (env BENCH_DURATION). */
export const DURATION_SECONDS = Math.floor(envNumber('BENCH_DURATION', 5, 1))
/**
 * Rounds (env BENCH_ROUNDS): every target of a scenario is measured once per round, the order rotated
 * from round to round, and the median round is reported. On a shared 2-core machine one run of a
 * target can be a fifth off the next; rounds spread that drift over all targets alike.
 */
export const ROUNDS = Math.floor(envNumber('BENCH_ROUNDS', 3, 1))
/** wrk's per-request timeout in seconds: a reply slower than this counts as a socket timeout. */
export const WRK_TIMEOUT_SECONDS = 10

export const SMALL_INVENTORY = 100
export const LARGE_INVENTORY = 10_000
export const HUGE_INVENTORY = 1_000_000
/** Pet ids in the generated inventories are FIRST_PET_ID .. FIRST_PET_ID + size - 1. */
export const FIRST_PET_ID = 1
/**
 * Stock of every pet in the order scenario's inventory: the largest quantity the service accepts
 * (2^31 - 1), so one-unit orders spread over 10,000 pets never run out (that would take 2 × 10^13 orders).
 */
export const ORDER_STOCK = 2_147_483_647

/** 1,000,000-entry section: sequential PATCHes timed one by one, and the /healthz polling period. */
export const SEQUENTIAL_PATCHES = 200
export const HEALTH_POLL_MS = 10
/** Only these scenarios, when set (env BENCH_SCENARIOS, comma-separated ids: get-100,get-10000,patch,order). */
export const SCENARIO_IDS = process.env.BENCH_SCENARIOS?.split(',')
  .map((id) => id.trim())
  .filter((id) => id !== '')
/** Run the 1,000,000-entry section (env BENCH_HUGE=0 skips it). */
export const RUN_HUGE = process.env.BENCH_HUGE !== '0'

/** Time limits (ms) for the steps around the load runs. */
export const CLI_TIMEOUT_MS = 120_000
export const IMPORT_TIMEOUT_MS = 300_000
export const READY_TIMEOUT_MS = 60_000
export const STOP_TIMEOUT_MS = 20_000
/** Extra time a wrk run may take beyond its duration before it is killed and marked failed. */
export const LOAD_GRACE_MS = 20_000
/** Bound on one request of the 1,000,000-entry section (a whole 50 MB list included). */
export const HUGE_REQUEST_TIMEOUT_MS = 60_000

/** A number from the environment, `fallback` when unset; anything below `min` or not a number stops the bench. */
export function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min) {
    throw new Error(`${name} must be a number >= ${min}, got ${JSON.stringify(raw)}`)
  }
  return value
}
