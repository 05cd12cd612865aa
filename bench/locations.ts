// `npm run bench:locations` (issue 50, speed): the CPU guard's scenarios (bench/cpu-scenarios.ts) on
// this build twice, alternated in one run: a store of 100,000 pets with one location, and the same
// store with ten, every pet's stock spread over all ten (900,000 levels). Each round's ratio is the
// ten-location store's CPU per request ÷ the one-location store's, read from the scheduler's count as
// the guard reads it; the goal is that the ratio stays within the noise of 1 (the list, served from
// the cache, is the sums). Both stores are given the same ledger rows but for their location, so that
// the ledger's indexes are not what the figures show. Not part of CI (about 17 minutes; the method and
// the figures: bench/README.md, "Locations").
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { availableBackends, disposeOpenDatabases, openDatabaseUrls } from './backends.js'
import { envNumber } from './config.js'
import { type CpuScenario, type GuardTarget, measureScenario, SCENARIOS, startTargets } from './cpu-scenarios.js'
import { wrkVersion } from './load.js'
import { killAllChildren } from './procs.js'
import { median } from './stats.js'
import type { Dataset } from './targets.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const CLI = join(ROOT, 'dist/src/cli.js')
const PETS = envNumber('LOCATIONS_PETS', 100_000, 1000)
const LOCATIONS = 10
const ROUNDS = Math.floor(envNumber('LOCATIONS_ROUNDS', 8, 2))
const WARM_ROUNDS = 2
/** Units of each pet moved to each of the other nine locations (every pet starts with 2147483647). */
const SPREAD = 100_000_000
const BATCH = 1000

const log = (line: string): void => console.log(`[locations ${new Date().toISOString().slice(11, 19)}] ${line}`)

/**
 * The guard's scenarios, but the whole list of 100,000 entries (about 6 MB) a few hundred times, not
 * 10,000, over 8 connections: 64 of them, each waiting for 6 MB from a server sharing one core, passed
 * wrk's 2-second timeout.
 */
const scenarios: CpuScenario[] = SCENARIOS.map((s) =>
  s.kind === 'get' ? { ...s, id: `get-all-${PETS}`, requests: 300, connections: 8 } : s,
)

async function call(target: GuardTarget, method: string, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${target.running.server.baseUrl}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${target.running.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${target.running.server.label}: ${method} ${path} -> ${res.status} ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/**
 * The ten-location store ('service'): nine locations, and each pet's SPREAD units moved to each, by
 * batches of BATCH adjustments: -SPREAD at the default location, +SPREAD at the other one. The
 * one-location store ('baseline'): as many adjustments, of -1 and +1 at the default location, that
 * leave it as it was (every pet starts at the bound). Both ledgers then hold the same rows but for
 * their location: transfers would have given the first one a reason the second cannot have, and with
 * it a different index (inventory_changes_reason) for every later row to go into.
 */
async function prepare(target: GuardTarget, dataset: Dataset): Promise<void> {
  const started = Date.now()
  const pets = dataset.items.map((i) => i.petId)
  const perBatch = BATCH / 2
  if (target.name === 'service' && !CONTROL) {
    const ids: number[] = []
    for (let n = 2; n <= LOCATIONS; n++) ids.push(((await call(target, 'POST', '/locations', { name: `Shop ${n}` })) as { id: number }).id)
    for (const to of ids)
      for (let i = 0; i < pets.length; i += perBatch) {
        const changes = pets.slice(i, i + perBatch).flatMap((petId) => [
          { petId, delta: -SPREAD },
          { petId, locationId: to, delta: SPREAD },
        ])
        await call(target, 'POST', '/inventory/batch', { changes })
      }
  } else {
    for (let round = 0; round < LOCATIONS - 1; round++)
      for (let i = 0; i < pets.length; i += perBatch) {
        const changes = pets.slice(i, i + perBatch).flatMap((petId) => [
          { petId, delta: -1 },
          { petId, delta: 1 },
        ])
        await call(target, 'POST', '/inventory/batch', { changes })
      }
  }
  // The baseline is prepared last: both stores are then settled before anything is measured.
  if (target.name === 'baseline') await settle()
  const store = target.name === 'service' ? 'ten locations' : 'one location'
  log(`  ${store} (${target.running.server.label}): prepared in ${((Date.now() - started) / 1000).toFixed(0)} s`)
}

/**
 * PostgreSQL's stores vacuumed and analyzed once both are prepared: what autovacuum would do after so
 * many writes (the ten-location store's most), done before the measurements rather than beside them.
 * Without it, PostgreSQL's ratios read 1.15 to 1.35 for every scenario but the batch, the cached list
 * included, whose work in the service is the same bytes from the same cache.
 */
async function settle(): Promise<void> {
  for (const url of openDatabaseUrls()) {
    if (!url.startsWith('postgres')) continue
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await client.query('VACUUM (ANALYZE)')
    } finally {
      await client.end()
    }
  }
}

/** LOCATIONS_CONTROL=1: both stores prepared as the one-location store, to read what the comparison itself shows when the stores are alike. */
const CONTROL = process.env.LOCATIONS_CONTROL === '1'

/** Only these backends (comma-separated names) when set. */
const BACKENDS = process.env.LOCATIONS_BACKENDS?.split(',').map((name) => name.trim())

async function main(): Promise<number> {
  if (wrkVersion() === undefined) {
    console.error('bench:locations: wrk not found on PATH; install it first: apt-get install wrk')
    return 1
  }
  const backends = (await availableBackends(log)).filter((b) => !BACKENDS || BACKENDS.includes(b.name))
  log(`Node ${process.version}, ${PETS} pets, ${LOCATIONS} locations against 1, ${ROUNDS} rounds; ${scenarios.map((s) => s.id).join(', ')}`)
  const dir = await mkdtemp(join(tmpdir(), 'petstore-locations-'))
  const lines: string[] = []
  try {
    for (const backend of backends) {
      // 'service' is the ten-location store, 'baseline' the one-location store: one build, two databases.
      const targets = await startTargets(CLI, CLI, backend, dir, log, {
        size: PETS,
        prepare,
        check: (target) => target.name === 'baseline',
      })
      try {
        for (const scenario of scenarios) {
          const rounds: Awaited<ReturnType<typeof measureScenario>>[] = []
          for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {
            const samples = await measureScenario(scenario, targets, round)
            if (round >= WARM_ROUNDS) rounds.push(samples)
          }
          const us = (name: 'service' | 'baseline') => rounds.map((r) => r.get(name)!.nsPerRequest / 1000)
          const ratios = rounds.map((r) => r.get('service')!.nsPerRequest / r.get('baseline')!.nsPerRequest)
          const line =
            `${backend.name}/${scenario.id}: ten locations ${median(us('service')).toFixed(1)} µs/request, ` +
            `one ${median(us('baseline')).toFixed(1)}; ratio ${median(ratios).toFixed(3)} (rounds ${ratios.map((v) => v.toFixed(2)).join(' ')})`
          log(line)
          lines.push(line)
        }
      } finally {
        await targets.stop()
      }
    }
  } finally {
    await disposeOpenDatabases()
    await rm(dir, { recursive: true, force: true })
  }
  console.log(`\n${lines.join('\n')}`)
  return 0
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error)
    killAllChildren()
    process.exit(1)
  },
)
