// Benchmark knobs. Everything tunable lives here; env overrides are read once at start-up.

/** Concurrent connections for the GET scenarios. */
export const GET_CONNECTIONS = 50
/** Concurrent connections for the PATCH scenario (the service batches concurrent PATCHes into one commit). */
export const PATCH_CONNECTIONS = 100
/** Un-measured warm-up run before every measured run, in seconds. */
export const WARMUP_SECONDS = 2
/** Measured run length in seconds (env BENCH_DURATION). */
export const DURATION_SECONDS = envNumber('BENCH_DURATION', 10, 1)
/**
 * autocannon worker threads (env BENCH_WORKERS). 0 = run autocannon in this process's main thread.
 * Workers work with setupRequest because the PATCH request setup is a CommonJS module (patch-request.cts)
 * that each worker require()s by absolute path.
 */
export const WORKERS = Math.floor(envNumber('BENCH_WORKERS', 2, 0))

export const SMALL_INVENTORY = 100
export const LARGE_INVENTORY = 10_000
/** Pet ids in the generated inventories are FIRST_PET_ID .. FIRST_PET_ID + size - 1. */
export const FIRST_PET_ID = 1

/** Goals from the issue: service req/s divided by bare node:http req/s. */
export const RATIO_TARGETS: Readonly<Record<string, number>> = { 'get-100': 0.5, patch: 0.3 }

/** Time limits (ms) for the steps around the load runs. */
export const CLI_TIMEOUT_MS = 120_000
export const READY_TIMEOUT_MS = 30_000
export const STOP_TIMEOUT_MS = 10_000
/** Extra time an autocannon run may take beyond its duration before it is stopped and marked failed. */
export const LOAD_GRACE_MS = 20_000

function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min) {
    throw new Error(`${name} must be a number >= ${min}, got ${JSON.stringify(raw)}`)
  }
  return value
}
