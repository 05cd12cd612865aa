// Holds (issue 47): the expiry of 100,000 holds due in the same second while PATCHes keep their
// latency, holds placed on one hot pet, and a PATCH's cost with 10,000 active holds present, on each
// backend (SQLite; PostgreSQL when it answers). Not part of a default `npm run bench` (it takes 2.5
// to 5 minutes: three services a backend, PostgreSQL's expiry 16 to 35 s): `BENCH_SCENARIOS=holds`
// runs it, alone when named alone (no wrk scenario, no 1,000,000-entry section), replacing only its
// section of bench/RESULTS.md (a default run keeps that section as it stands).
//
// Per backend three services (`petstore serve` as the bench's wrk scenarios run it: LOG_LEVEL warn, no
// rate limits; METRICS_PORT set), each on a fresh database of 10,000 entries that each hold 10^9 units:
//   none   no hold ever active (a hold placed and released by the checks);
//   held   HOLDS_ACTIVE (10,000) active holds of 1 unit, due in 4 hours, over pets 2,001-10,000,
//          placed through the storage code from the bench's own process (below); later the expiry;
//   hot    the holds of one hot pet.
// Each answers a PATCH correctly first, and hot a hold placed and released (201, the entry down by
// its units, then 200 and back).
//
// Rounds (HOLDS_ROUNDS, 3, after an unmeasured warm-up round at a fifth), each scenario once a round,
// the order rotated every round:
//   patch-none   PATCH /v1/inventory/1 {"quantity": n} on none, HOLDS_REQUESTS requests, wrk -t1 -c64
//                (bench/adjust.lua, STOCK_KIND=patch): the reference of every ratio, same round;
//   patch-held   the same on held (10,000 active holds present, none due);
//   hold-one     POST /v1/store/reservations {"lines": [{"petId": 2, "quantity": 1}], "expiresInSeconds":
//                14400} on hot, the same count and connections (bench/adjust.lua, STOCK_KIND=hold).
// Each run sends exactly its requests and is SIGINTed once they are answered (stock-moves.ts's way),
// bounded in time; around it the ledger's last seq and the server's CPU time (schedstat; user and
// system from /proc/<pid>/stat) before wrk and after it, once the server was idle: the run must have
// added exactly one ledger row a request. CPU per request = that CPU ÷ the requests; on PostgreSQL the
// CPU of the backends connected to the service's database beside it.
//
// Then the expiry, on held: PATCHes of pet 1 at a moderate fixed rate (bench/tail-latency.lua,
// HOLDS_PROBE_CONNECTIONS (8) connections each pausing HOLDS_PROBE_DELAY_MS (10) between an answer
// and its next request, wrk --latency; the script prints p99.9 and the maximum) for
// HOLDS_REFERENCE_SECONDS (8): the reference without a sweep. Then HOLDS_EXPIRING (100,000) holds of
// 1 unit over pets 1,001-2,000, their expiresAt spread over one whole second T (a hundred distinct
// pets each millisecond), placed through the storage code from the bench's process
// (openStorage(loadConfig({DATABASE_URL})), storage.writeStock({kind: 'hold', …}), 2,000 at a time so
// the group commit gathers them), with T far enough ahead for the placing to end first. From 1 s before
// T, the same PATCHes again, while the bench polls the database every 50 ms for an active hold due by
// T + 1 s; once there is none (every unit back: a hold's units come back in the transaction that
// expires it), 250 ms more, then wrk is stopped. The time from T to that poll is the expiry's; the
// ledger's first and last `expiry` rows say when the sweep began and ended; the pets' entries must all
// hold 10^9 again. The server's CPU over the window, less the PATCHes' share (their count × the
// reference's CPU per PATCH), ÷ the holds is the CPU per hold expired. Then the reference again, after.
// Around each of these windows also the server's longest event-loop delay (its metrics listener, on in
// all three services alike) and the share of the window its main thread waited for a CPU (schedstat):
// on a shared machine, how much of a latency was the machine's.
//
// Goals (issue 47): per backend, the 100,000 holds all back within 30 s of T, with no PATCH during the
// sweep waiting more than 50 ms (judged on the maximum latency of any PATCH in the window); on SQLite
// ≥ 1,000 holds a second placed on one hot pet (median of the rounds). Reported for information: the
// CPU per PATCH with 10,000 active holds present ÷ without.
// Knobs: HOLDS_ROUNDS (3), HOLDS_REQUESTS (10000), HOLDS_ACTIVE (10000), HOLDS_EXPIRING (100000),
// HOLDS_PROBE_CONNECTIONS (8), HOLDS_PROBE_DELAY_MS (10), HOLDS_REFERENCE_SECONDS (8),
// HOLDS_EXPIRY_WAIT_SECONDS (120: how long after T the bench waits for the last unit).
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../src/config.js'
import { openStorage } from '../src/storage/open-storage.js'
import type { Storage } from '../src/storage/ports.js'
import type { Backend } from './backends.js'
import { CONNECTIONS, envNumber, LARGE_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { loopDelay } from './huge.js'
import { type Measured, spawnWrk } from './load.js'
import { freePort, HOST, mainThreadWaitNsOf } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, type WrkGroupRun, wrkGroupRun, writeSection } from './results-section.js'
import {
  authorized,
  backendsSpent,
  cpuOf,
  DONE,
  int,
  lastSeq,
  message,
  type PgSide,
  pgSide,
  post,
  SCRIPTS,
  settled,
  sleep,
} from './stock-moves.js'
import { checkPatch, makeDataset, type Running, serviceEnv, startService } from './targets.js'
import { median } from './stats.js'

/** `holds` in BENCH_SCENARIOS runs this group; a default run (no BENCH_SCENARIOS) leaves it out. */
export const HOLDS_GROUP = 'holds'

/** Only when BENCH_SCENARIOS names it: the group takes 2.5 to 5 minutes. */
export function selectHolds(ids: readonly string[] | undefined): boolean {
  return ids?.includes(HOLDS_GROUP) ?? false
}

/** True when BENCH_SCENARIOS names this group and nothing else: then run.ts runs it alone. */
export function holdsOnly(ids: readonly string[] | undefined): boolean {
  return ids !== undefined && ids.length > 0 && ids.every((id) => id === HOLDS_GROUP)
}

const ROUNDS = Math.floor(envNumber('HOLDS_ROUNDS', 3, 1))
/** Requests per run of patch-none, patch-held and hold-one. */
const REQUESTS = Math.floor(envNumber('HOLDS_REQUESTS', 10_000, 100))
/** Active holds, not due, on held during its PATCH runs. */
const ACTIVE = Math.floor(envNumber('HOLDS_ACTIVE', 10_000, 0))
/** Holds due in the same second, on held. */
const EXPIRING = Math.floor(envNumber('HOLDS_EXPIRING', 100_000, 1000))
const PROBE_CONNECTIONS = Math.floor(envNumber('HOLDS_PROBE_CONNECTIONS', 8, 1))
const PROBE_DELAY_MS = Math.floor(envNumber('HOLDS_PROBE_DELAY_MS', 10, 0))
const REFERENCE_SECONDS = Math.floor(envNumber('HOLDS_REFERENCE_SECONDS', 8, 1))
/** How long after T the bench waits for the last unit to come back before it gives up. */
const EXPIRY_WAIT_MS = 1000 * Math.floor(envNumber('HOLDS_EXPIRY_WAIT_SECONDS', 120, 1))

/** Issue 47's goals. */
export const EXPIRY_GOAL_MS = 30_000
export const PATCH_WAIT_GOAL_MS = 50
export const HOLD_RATE_GOALS: Readonly<Record<string, number>> = { sqlite: 1000 }

/** What every pet holds at the start: no hold of the bench runs a stock out. */
const STOCK = 1_000_000_000
/** The pet every PATCH names (bench/tail-latency.lua's too), the hot pet of hold-one, the pets of the holds. */
const PATCH_PET = 1
const HOT_PET = 2
const CHECK_PET = 3
const EXPIRING_FIRST_PET = 1001
const EXPIRING_PETS = 1000
const ACTIVE_FIRST_PET = 2001
const ACTIVE_PETS = LARGE_INVENTORY - ACTIVE_FIRST_PET + 1
/** Holds submitted to the storage at once: one SQLite commit (at most 2,000 changes), gathered by the group commit. */
const PLACE_CHUNK = 2000
/** The probe starts this long before T; the bench polls for due holds this often. */
const LEAD_IN_MS = 1000
const POLL_MS = 50
/** After the last unit is back, the probe goes on for this long. */
const TAIL_MS = 250
const ACTIVE_HOLD_MS = 4 * 3600 * 1000
const TAIL_SCRIPT = fileURLToPath(new URL('../../bench/tail-latency.lua', import.meta.url))
const ACTOR = { keyId: null, requestId: null }

type ScenarioId = 'patch-none' | 'patch-held' | 'hold-one'
const SCENARIO_IDS: readonly ScenarioId[] = ['patch-none', 'patch-held', 'hold-one']
type Service = 'none' | 'held' | 'hot'
const SCENARIOS: Readonly<Record<ScenarioId, { service: Service; kind: 'patch' | 'hold'; pet: number }>> = {
  'patch-none': { service: 'none', kind: 'patch', pet: PATCH_PET },
  'patch-held': { service: 'held', kind: 'patch', pet: PATCH_PET },
  'hold-one': { service: 'hot', kind: 'hold', pet: HOT_PET },
}

// ---------------------------------------------------------------- holds through the storage code

/**
 * Places `count` holds of 1 unit through the storage code, PLACE_CHUNK at a time, hold i on pet
 * `firstPet + i % pets`, expiring at `expiresAt(i)`. Resolves with the time it took (ms).
 */
async function placeHolds(
  storage: Storage,
  count: number,
  firstPet: number,
  pets: number,
  expiresAt: (i: number) => string,
): Promise<number> {
  const started = performance.now()
  for (let from = 0; from < count; from += PLACE_CHUNK) {
    const writes: Promise<unknown>[] = []
    for (let i = from; i < Math.min(count, from + PLACE_CHUNK); i++) {
      const lines = [{ petId: BigInt(firstPet + (i % pets)), quantity: 1 }]
      writes.push(
        storage.writeStock({ kind: 'hold', lines, expiresAt: expiresAt(i), reference: null, actor: ACTOR }).then((result) => {
          if (result === 'idempotency_key_reused' || result.outcome !== 'held')
            throw new Error(
              `hold ${i} (pet ${lines[0]!.petId}) was not placed: ${JSON.stringify(result, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
            )
        }),
      )
    }
    await Promise.all(writes)
  }
  return performance.now() - started
}

/** A hold of 2 units of CHECK_PET: 201 active, the entry down by 2; released: 200, the entry back. */
async function checkHold(running: Running): Promise<void> {
  const label = running.server.label
  const entry = async () => {
    const res = await fetch(`${running.server.baseUrl}/v1/inventory/${CHECK_PET}`, authorized(running))
    return ((await res.json()) as { quantity?: number }).quantity
  }
  const held = await post(running, '/v1/store/reservations', { lines: [{ petId: CHECK_PET, quantity: 2 }], expiresInSeconds: 60 })
  const hold = held.status === 201 ? (JSON.parse(held.text) as { id?: number; status?: string }) : undefined
  if (hold?.status !== 'active' || typeof hold.id !== 'number')
    throw new Error(
      `${label}: POST /v1/store/reservations (pet ${CHECK_PET}, 2 units) -> ${held.status} ${held.text.slice(0, 300)}, expected 201 active`,
    )
  if ((await entry()) !== STOCK - 2) throw new Error(`${label}: after a hold of 2 units, pet ${CHECK_PET} does not hold ${STOCK - 2}`)
  const released = await post(running, `/v1/store/reservations/${hold.id}/release`, {})
  if (released.status !== 200 || (JSON.parse(released.text) as { status?: string }).status !== 'released')
    throw new Error(
      `${label}: POST /v1/store/reservations/${hold.id}/release -> ${released.status} ${released.text.slice(0, 300)}, expected 200 released`,
    )
  if ((await entry()) !== STOCK) throw new Error(`${label}: after the release, pet ${CHECK_PET} does not hold ${STOCK}`)
}

// ---------------------------------------------------------------- PATCH and hold runs

export interface Sample {
  rps: number
  p50: number
  p99: number
  /** The server's CPU time over the run, per request, in µs (schedstat); user and system from /proc/<pid>/stat. */
  usPerRequest: number
  userUs: number
  sysUs: number
  /** PostgreSQL: its backends' CPU per request, µs. */
  pgUs?: number
}

interface Target {
  running: Running
  /** Its metrics listener's /metrics (the event loop's longest delay since the last read). */
  metricsUrl: string
  pgs?: PgSide | undefined
}

async function runOnce(id: ScenarioId, target: Target, requests: number): Promise<Sample> {
  const { running, pgs } = target
  const scenario = SCENARIOS[id]
  const label = `${running.server.label} ${id}`
  const seconds = Math.max(60, Math.ceil(requests / 100))
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '--timeout', `${WRK_TIMEOUT_SECONDS}s`, '-s', SCRIPTS.adjust]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory`)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BENCH_FIRST_PET: String(scenario.pet),
    BENCH_PET_COUNT: '1',
    STOCK_KIND: scenario.kind,
    STOCK_REQUESTS: String(requests),
  }
  const before = await lastSeq(running)
  const pgBefore = await pgs?.backendsCpu()
  const cpuBefore = await cpuOf(running.server)
  const run = await spawnWrk(args, env, seconds, { stopOn: DONE, label }).done
  if (run.non2xx > 0 || run.errors > 0) throw new Error(`${label}: ${run.non2xx} answers not 2xx and socket errors ${run.errorDetail}`)
  if (run.completed < requests) throw new Error(`${label}: only ${run.completed} of ${requests} requests answered within ${seconds} s`)
  const after = await settled(running)
  const cpuAfter = await cpuOf(running.server)
  const pgAfter = await pgs?.backendsCpu()
  const rows = Number(after - before)
  if (rows !== requests)
    throw new Error(`${label}: the ledger grew by ${rows} rows for ${requests} requests (wrk saw ${run.completed} answered)`)
  return {
    rps: run.rps,
    p50: run.p50,
    p99: run.p99,
    usPerRequest: (cpuAfter.us - cpuBefore.us) / requests,
    userUs: (cpuAfter.userUs - cpuBefore.userUs) / requests,
    sysUs: (cpuAfter.sysUs - cpuBefore.sysUs) / requests,
    ...(pgBefore === undefined || pgAfter === undefined ? {} : { pgUs: backendsSpent(pgBefore, pgAfter) / requests }),
  }
}

/** One round's run of a scenario, with its ratios to the same round's patch-none. */
interface HoldsRound {
  sample: Sample
  rpsRatio?: number
  cpuRatio?: number
}

/** A (backend, scenario): its rounds and medians, or why it failed. */
export interface HoldsRow {
  backend: string
  scenario: ScenarioId
  rounds: HoldsRound[]
  rps?: number
  cpuUs?: number
  userUs?: number
  sysUs?: number
  pgUs?: number
  p50?: number
  p99?: number
  rpsRatio?: number
  cpuRatio?: number
  failure?: string
}

function summarize(row: HoldsRow): void {
  const samples = row.rounds.map((r) => r.sample)
  if (samples.length === 0) return
  row.rps = median(samples.map((s) => s.rps))
  row.cpuUs = median(samples.map((s) => s.usPerRequest))
  row.userUs = median(samples.map((s) => s.userUs))
  row.sysUs = median(samples.map((s) => s.sysUs))
  row.p50 = median(samples.map((s) => s.p50))
  row.p99 = median(samples.map((s) => s.p99))
  const pgUs = samples.flatMap((s) => (s.pgUs === undefined ? [] : [s.pgUs]))
  if (pgUs.length > 0) row.pgUs = median(pgUs)
  const rpsRatios = row.rounds.flatMap((r) => (r.rpsRatio === undefined ? [] : [r.rpsRatio]))
  const cpuRatios = row.rounds.flatMap((r) => (r.cpuRatio === undefined ? [] : [r.cpuRatio]))
  if (rpsRatios.length > 0) row.rpsRatio = median(rpsRatios)
  if (cpuRatios.length > 0) row.cpuRatio = median(cpuRatios)
}

// ---------------------------------------------------------------- the expiry

/** PATCHes at the probe's rate over a window: wrk's count and the script's percentiles (ms). */
export interface Probe {
  requests: number
  seconds: number
  p50: number
  p99: number
  p999: number
  max: number
  /** The server's CPU per PATCH over the window (µs), and PostgreSQL's backends'. */
  cpuUs: number
  pgUs?: number
  /** The server's longest event-loop delay over the window (ms; a 10 ms timer's, so about 10 when idle). */
  loopMaxMs?: number
  /** The share of the window (%) the server's main thread was runnable but waited for a CPU: the machine's part. */
  waitPct?: number
}

export interface Expiry {
  backend: string
  /** Placing the holds through the storage code (ms), and the lead T was set ahead of its start. */
  placedMs?: number
  leadMs?: number
  /** From T until the poll found no hold due by T + 1 s active (ms); undefined when it waited EXPIRY_WAIT_MS in vain. */
  backMs?: number
  /** Holds still active when it gave up. */
  left?: number
  /** The ledger's first and last `expiry` rows, from T (ms). */
  firstMs?: number
  lastMs?: number
  /** The server's CPU per hold expired (the PATCHes' share taken out, µs), and PostgreSQL's backends'. */
  cpuUsPerHold?: number
  pgUsPerHold?: number
  /**
   * The bench's polls for a due hold (the sweep's own read, LIMIT 1, by the index on active holds'
   * expiry) from T until every unit was back: median and longest (ms), and before the holds were placed.
   */
  dueRead?: { medianMs: number; maxMs: number; polls: number; idleMs: number }
  before?: Probe
  during?: Probe
  after?: Probe
  failure?: string
}

function probeWrk(running: Running, seconds: number) {
  const args = ['-t1', `-c${PROBE_CONNECTIONS}`, `-d${seconds}s`, '--latency', '--timeout', `${WRK_TIMEOUT_SECONDS}s`, '-s', TAIL_SCRIPT]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory/${PATCH_PET}`)
  return spawnWrk(args, { ...process.env, TAIL_DELAY_MS: String(PROBE_DELAY_MS) }, seconds, {
    label: `${running.server.label} PATCH probe`,
  })
}

/** What is read around a probe's window: the server's CPU (µs), PostgreSQL's backends', the main thread's wait for a CPU (ns). */
interface Readings {
  cpuUs: number
  pg?: Map<number, number> | undefined
  waitNs?: number | undefined
}

async function readings(target: Target): Promise<Readings> {
  const pg = await target.pgs?.backendsCpu()
  const waitNs = await mainThreadWaitNsOf(target.running.server.pid)
  return { cpuUs: (await cpuOf(target.running.server)).us, pg, waitNs }
}

/** bench/tail-latency.lua's line (µs) and the readings around the window as a Probe (ms); throws on a non-2xx answer or a socket error. */
function probeOf(
  label: string,
  run: Measured,
  output: string,
  seconds: number,
  before: Readings,
  after: Readings,
  loopMaxMs?: number,
): Probe {
  if (run.non2xx > 0 || run.errors > 0) throw new Error(`${label}: ${run.non2xx} PATCHes not 2xx and socket errors ${run.errorDetail}`)
  const tail = /tail: requests (\d+) p50 (\d+) p99 (\d+) p99\.9 (\d+) max (\d+)/.exec(output)
  if (!tail) throw new Error(`${label}: no tail line in wrk's output:\n${output.slice(-1000)}`)
  const [requests, p50, p99, p999, max] = tail.slice(1).map(Number) as [number, number, number, number, number]
  const us = (n: number) => n / 1000
  const cpuUs = after.cpuUs - before.cpuUs
  const pgUs = before.pg === undefined || after.pg === undefined ? undefined : backendsSpent(before.pg, after.pg)
  const waitNs = before.waitNs === undefined || after.waitNs === undefined ? undefined : after.waitNs - before.waitNs
  return {
    requests,
    seconds,
    p50: us(p50),
    p99: us(p99),
    p999: us(p999),
    max: us(max),
    cpuUs: cpuUs / Math.max(1, requests),
    ...(pgUs === undefined ? {} : { pgUs: pgUs / Math.max(1, requests) }),
    ...(loopMaxMs === undefined ? {} : { loopMaxMs }),
    ...(waitNs === undefined ? {} : { waitPct: (100 * waitNs) / (seconds * 1e9) }),
  }
}

/** The probe alone for HOLDS_REFERENCE_SECONDS: PATCH latency and cost without a sweep. */
async function reference(target: Target): Promise<Probe> {
  await loopDelay(target.metricsUrl)
  const before = await readings(target)
  const started = performance.now()
  const wrk = probeWrk(target.running, REFERENCE_SECONDS)
  const run = await wrk.done
  const seconds = (performance.now() - started) / 1000
  const after = await readings(target)
  const loopMaxMs = await loopDelay(target.metricsUrl)
  return probeOf(`${target.running.server.label} reference`, run, wrk.output(), seconds, before, after, loopMaxMs)
}

async function measureExpiry(
  target: Target,
  storage: Storage,
  activeRate: number,
  expiry: Expiry,
  log: (l: string) => void,
): Promise<void> {
  const { running, pgs } = target
  const label = running.server.label
  expiry.before = await reference(target)
  log(`holds ${expiry.backend} expiry: reference ${probeText(expiry.before)}`)
  const seq = await storage.lastChangeSeq()
  const timedDue = async (dueBy: string) => {
    const started = performance.now()
    const due = await storage.dueReservations(dueBy, 1)
    return { due, ms: performance.now() - started }
  }
  const idle: number[] = []
  for (let i = 0; i < 20; i++) idle.push((await timedDue(new Date().toISOString())).ms)
  // T: a whole second far enough ahead for the placing (three times as long as at the rate the active holds were placed at, 2 s more).
  const lead = 2000 + (3 * EXPIRING) / activeRate
  const t = Math.ceil((Date.now() + lead) / 1000) * 1000
  expiry.leadMs = t - Date.now()
  expiry.placedMs = await placeHolds(storage, EXPIRING, EXPIRING_FIRST_PET, EXPIRING_PETS, (i) =>
    new Date(t + Math.floor((i * 1000) / EXPIRING)).toISOString(),
  )
  log(
    `holds ${expiry.backend} expiry: ${int(EXPIRING)} holds placed in ${int(expiry.placedMs)} ms, due over the second from ${new Date(t).toISOString()}`,
  )
  if (Date.now() > t - LEAD_IN_MS)
    throw new Error(`${label}: placing ${EXPIRING} holds took ${int(expiry.placedMs)} ms, past the lead of ${int(expiry.leadMs)} ms`)
  await sleep(t - LEAD_IN_MS - Date.now())

  await loopDelay(target.metricsUrl)
  const before = await readings(target)
  const started = performance.now()
  const wrk = probeWrk(running, Math.ceil((LEAD_IN_MS + EXPIRY_WAIT_MS) / 1000) + 5)
  const dueBy = new Date(t + 1000).toISOString()
  const polls: number[] = []
  let backAt: number | undefined
  try {
    for (;;) {
      await sleep(POLL_MS)
      if (Date.now() < t) continue
      const { due, ms } = await timedDue(dueBy)
      polls.push(ms)
      if (due.length === 0) {
        backAt = Date.now()
        break
      }
      if (Date.now() - t > EXPIRY_WAIT_MS) break
    }
    await sleep(TAIL_MS)
  } finally {
    wrk.stop()
  }
  const run = await wrk.done
  const seconds = (performance.now() - started) / 1000
  const after = await readings(target)
  const loopMaxMs = await loopDelay(target.metricsUrl)
  expiry.dueRead = { medianMs: median(polls), maxMs: Math.max(...polls), polls: polls.length, idleMs: median(idle) }
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${label} exited during the expiry: ${died}`)
  expiry.during = probeOf(`${label} PATCHes during the expiry`, run, wrk.output(), seconds, before, after, loopMaxMs)
  if (backAt === undefined) {
    // Not a failure but the goal missed by more than the bench waits; the holds left go on expiring, so no reference after.
    expiry.left = (await storage.dueReservations(dueBy, EXPIRING)).length
    log(`holds ${expiry.backend} expiry: ${int(expiry.left)} of ${int(EXPIRING)} holds still active ${EXPIRY_WAIT_MS / 1000} s after T`)
    return
  }
  expiry.backMs = backAt - t
  const stamp = async (newestFirst: boolean) => {
    const [row] = await storage.listChanges({ after: seq, reason: 'expiry', limit: 1, newestFirst })
    return row === undefined ? undefined : Date.parse(row.at) - t
  }
  expiry.firstMs = await stamp(false)
  expiry.lastMs = await stamp(true)
  // The PATCHes' share of the window's CPU, at the reference's cost a PATCH, taken out.
  const during = expiry.during
  expiry.cpuUsPerHold = (during.requests * (during.cpuUs - expiry.before.cpuUs)) / EXPIRING
  if (during.pgUs !== undefined && expiry.before.pgUs !== undefined)
    expiry.pgUsPerHold = (during.requests * (during.pgUs - expiry.before.pgUs)) / EXPIRING
  const entries = await storage.listInventory({ after: BigInt(EXPIRING_FIRST_PET - 1), limit: EXPIRING_PETS })
  const wrong = entries.filter((e) => e.quantity !== STOCK)
  if (entries.length !== EXPIRING_PETS || wrong.length > 0)
    throw new Error(
      `${label}: after the expiry, ${wrong.length} of pets ${EXPIRING_FIRST_PET}-${EXPIRING_FIRST_PET + EXPIRING_PETS - 1} do not hold ${STOCK} (${wrong
        .slice(0, 3)
        .map((e) => `pet ${e.petId}: ${e.quantity}`)
        .join(', ')})`,
    )
  log(
    `holds ${expiry.backend} expiry: every unit back ${int(expiry.backMs)} ms after T (ledger: first expiry at +${int(expiry.firstMs ?? Number.NaN)} ms, last at +${int(expiry.lastMs ?? Number.NaN)} ms); ` +
      `PATCHes meanwhile ${probeText(during)}; ${expiry.cpuUsPerHold.toFixed(0)} µs of server CPU a hold` +
      (expiry.pgUsPerHold === undefined ? '' : `, PostgreSQL ${expiry.pgUsPerHold.toFixed(0)} µs`),
  )
  await pgs?.vacuum()
  expiry.after = await reference(target)
  log(`holds ${expiry.backend} expiry: reference after ${probeText(expiry.after)}`)
}

const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2))
const probeText = (p: Probe) =>
  `${int(p.requests)} PATCHes in ${p.seconds.toFixed(1)} s (${int(p.requests / p.seconds)}/s), p50 ${ms(p.p50)} ms, p99 ${ms(p.p99)}, p99.9 ${ms(p.p999)}, max ${ms(p.max)}` +
  `; longest event-loop delay ${p.loopMaxMs === undefined ? '-' : ms(p.loopMaxMs)} ms` +
  `; main thread waiting for a CPU ${p.waitPct === undefined ? '-' : p.waitPct.toFixed(1)} % of the time`

// ---------------------------------------------------------------- a backend

async function runBackend(
  cli: string,
  backend: Backend,
  dir: string,
  log: (l: string) => void,
  notes: string[],
): Promise<{ rows: HoldsRow[]; expiry: Expiry }> {
  const rows = SCENARIO_IDS.map((id): HoldsRow => ({ backend: backend.name, scenario: id, rounds: [] }))
  const expiry: Expiry = { backend: backend.name }
  const dataset = await makeDataset(dir, LARGE_INVENTORY, false, STOCK)
  const targets = new Map<Service, Target & { url: string }>()
  let storage: Storage | undefined
  try {
    for (const service of ['none', 'held', 'hot'] as const) {
      let url = ''
      const metricsPort = await freePort()
      const running = await startService(cli, backend, dataset, `holds-${service}`, (u) => {
        url = u
        return { ...serviceEnv(u), METRICS_PORT: String(metricsPort), METRICS_HOST: HOST }
      })
      targets.set(service, { running, url, metricsUrl: `http://${HOST}:${metricsPort}/metrics` })
      await checkPatch(running, dataset)
      if (backend.name === 'postgres') targets.get(service)!.pgs = await pgSide(url)
    }
    await checkHold(targets.get('hot')!.running)
    if (targets.get('none')!.pgs?.autovacuum === false)
      notes.push(
        `${backend.name}: autovacuum is off on this server, so the bench ran VACUUM (ANALYZE) of the inventory between rounds and after the expiry, outside the measured runs.`,
      )
    const held = targets.get('held')!
    storage = await openStorage(loadConfig({ DATABASE_URL: held.url }))
    const until = new Date(Date.now() + ACTIVE_HOLD_MS).toISOString()
    const activeMs = ACTIVE > 0 ? await placeHolds(storage, ACTIVE, ACTIVE_FIRST_PET, ACTIVE_PETS, () => until) : 0
    log(`holds ${backend.name}: ${int(ACTIVE)} active holds placed on ${held.running.server.label} in ${int(activeMs)} ms`)

    for (let round = 0; round <= ROUNDS; round++) {
      const shift = round % SCENARIO_IDS.length
      const order = [...SCENARIO_IDS.slice(shift), ...SCENARIO_IDS.slice(0, shift)]
      const got = new Map<ScenarioId, Sample>()
      for (const id of order) {
        const row = rows.find((r) => r.scenario === id)!
        if (row.failure !== undefined) continue
        const target = targets.get(SCENARIOS[id].service)!
        try {
          got.set(id, await runOnce(id, target, round === 0 ? Math.ceil(REQUESTS / 5) : REQUESTS))
        } catch (err) {
          row.failure = message(err)
          log(`  FAILED holds ${backend.name}/${id}:\n${row.failure}`)
          const died = target.running.server.unexpectedExit()
          if (died !== undefined) throw new Error(`${target.running.server.label} exited: ${died}`)
        }
      }
      const patch = got.get('patch-none')
      const line: string[] = []
      for (const id of SCENARIO_IDS) {
        const sample = got.get(id)
        if (sample === undefined) continue
        const ratios =
          patch === undefined || id === 'patch-none'
            ? {}
            : { rpsRatio: sample.rps / patch.rps, cpuRatio: sample.usPerRequest / patch.usPerRequest }
        if (round > 0) rows.find((r) => r.scenario === id)!.rounds.push({ sample, ...ratios })
        line.push(
          `${id} ${int(sample.rps)}/s, ${sample.usPerRequest.toFixed(1)} µs/req` +
            (sample.pgUs === undefined ? '' : ` (PostgreSQL ${sample.pgUs.toFixed(1)})`) +
            (ratios.cpuRatio === undefined ? '' : `, CPU ÷ patch-none ${ratios.cpuRatio.toFixed(3)}`),
        )
      }
      log(`holds ${backend.name} ${round === 0 ? 'warm-up' : `round ${round}`}: ${line.join('; ')}`)
      for (const t of targets.values()) await t.pgs?.vacuum()
    }
    for (const row of rows) summarize(row)

    try {
      // Placed at the rate the active holds were (holds a ms); without them, assume 1 a ms.
      await measureExpiry(held, storage, ACTIVE >= 1000 && activeMs > 0 ? ACTIVE / activeMs : 1, expiry, log)
    } catch (err) {
      expiry.failure = message(err)
      log(`  FAILED holds ${backend.name}/expiry:\n${expiry.failure}`)
    }
  } finally {
    await storage?.close().catch((err: unknown) => log(`${backend.name}: closing the bench's storage: ${message(err)}`))
    for (const t of targets.values()) {
      await t.pgs?.end().catch((err: unknown) => log(`${backend.name}: closing the bench's connection: ${message(err)}`))
      await t.running.stop().catch((err: unknown) => log(`${backend.name}: stopping ${t.running.server.label}: ${message(err)}`))
    }
  }
  return { rows, expiry }
}

// ---------------------------------------------------------------- the group

export interface HoldsResult extends WrkGroupRun {
  settings: {
    rounds: number
    requests: number
    active: number
    expiring: number
    probeConnections: number
    probeDelayMs: number
    referenceSeconds: number
  }
  backends: string[]
  notes: string[]
  rows: HoldsRow[]
  expiry: Expiry[]
  seconds: number
}

/**
 * Upper bound on the group's run time, for run.ts's watchdog: per backend 3 minutes for the three
 * services' starts, checks and the active holds; per round (the warm-up one included) and scenario 2 ms
 * a request and 20 s of settling; for the expiry 2 minutes of placing, the wait, both references and a minute.
 */
export function holdsBudgetMs(backends: number): number {
  const rounds = (ROUNDS + 1) * SCENARIO_IDS.length * (REQUESTS * 2 + 20_000)
  const expiry = 120_000 + EXPIRY_WAIT_MS + 2 * REFERENCE_SECONDS * 1000 + 60_000
  return 30_000 + backends * (180_000 + rounds + expiry)
}

export async function runHolds(
  cli: string,
  backends: readonly Backend[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<HoldsResult> {
  const started = performance.now()
  const result: HoldsResult = {
    ...wrkGroupRun(loadAverage, 'HOLDS_'),
    settings: {
      rounds: ROUNDS,
      requests: REQUESTS,
      active: ACTIVE,
      expiring: EXPIRING,
      probeConnections: PROBE_CONNECTIONS,
      probeDelayMs: PROBE_DELAY_MS,
      referenceSeconds: REFERENCE_SECONDS,
    },
    backends: backends.map((b) => b.name),
    notes: [],
    rows: [],
    expiry: [],
    seconds: 0,
  }
  if (!result.backends.includes('postgres')) result.notes.push('PostgreSQL was not reachable, so its rows are missing.')
  log(
    `holds: ${SCENARIO_IDS.join(', ')} on ${result.backends.join(', ')}; ${ROUNDS} rounds (after a warm-up round at a fifth) of ${int(REQUESTS)} ` +
      `requests (-c${CONNECTIONS}), alternately; then ${int(EXPIRING)} holds due in the same second under PATCHes (-c${PROBE_CONNECTIONS}, ${PROBE_DELAY_MS} ms pauses)`,
  )
  for (const backend of backends) {
    try {
      const got = await runBackend(cli, backend, dir, log, result.notes)
      result.rows.push(...got.rows)
      result.expiry.push(got.expiry)
    } catch (err) {
      const failure = message(err)
      log(`  FAILED holds ${backend.name}:\n${failure}`)
      for (const id of SCENARIO_IDS)
        if (!result.rows.some((r) => r.backend === backend.name && r.scenario === id))
          result.rows.push({ backend: backend.name, scenario: id, rounds: [], failure })
      if (!result.expiry.some((e) => e.backend === backend.name)) result.expiry.push({ backend: backend.name, failure })
    }
  }
  result.seconds = (performance.now() - started) / 1000
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- holds: start -->', end: '<!-- holds: end -->' }
const range = (values: readonly number[], digits: number) =>
  values.length === 0 ? '-' : `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`
const rowOf = (r: HoldsResult, backend: string, id: ScenarioId) => r.rows.find((x) => x.backend === backend && x.scenario === id)
const usable = (row: HoldsRow | undefined): row is HoldsRow => row !== undefined && row.failure === undefined && row.rounds.length > 0
const secs = (msValue: number | undefined) => (msValue === undefined ? '-' : `${(msValue / 1000).toFixed(1)} s`)
const rate = (p: Probe) => p.requests / p.seconds
/** Holds the sweep expired a second, from its first ledger row to its last. */
const sweepRate = (r: HoldsResult, e: Expiry): string =>
  e.firstMs === undefined || e.lastMs === undefined || e.lastMs <= e.firstMs
    ? '-'
    : int(r.settings.expiring / ((e.lastMs - e.firstMs) / 1000))

/** Per backend: the expiry's time and the PATCHes' worst wait during it; on SQLite the hot pet's holds a second. */
export function holdsGoals(r: HoldsResult): Goal[] {
  return r.backends.flatMap((backend): Goal[] => {
    const e = r.expiry.find((x) => x.backend === backend)
    const goals: Goal[] = []
    const timed = e?.backMs !== undefined
    goals.push({
      goal: `${backend}: ${int(r.settings.expiring)} holds due in the same second all back within ${EXPIRY_GOAL_MS / 1000} s`,
      measured: timed
        ? `${secs(e.backMs)} after the second's start (the sweep's ledger rows from +${secs(e.firstMs)} to +${secs(e.lastMs)}, ` +
          `${sweepRate(r, e)} holds/s; ${e.cpuUsPerHold!.toFixed(0)} µs of server CPU a hold` +
          `${e.pgUsPerHold === undefined ? '' : `, PostgreSQL's ${e.pgUsPerHold.toFixed(0)} µs`})`
        : e?.left !== undefined
          ? `${int(e.left)} still active after ${EXPIRY_WAIT_MS / 1000} s`
          : e?.failure !== undefined
            ? 'failed'
            : 'not measured',
      met: timed ? e.backMs! <= EXPIRY_GOAL_MS : e?.left !== undefined ? false : undefined,
    })
    const during = e?.during
    goals.push({
      goal: `${backend}: PATCHes at a fixed rate during that expiry: none waits more than ${PATCH_WAIT_GOAL_MS} ms`,
      measured:
        during !== undefined
          ? `max ${ms(during.max)} ms, p99.9 ${ms(during.p999)} ms over ${int(during.requests)} PATCHes (${int(rate(during))}/s); ` +
            `without a sweep, same rate: max ${[e?.before, e?.after].map((p) => (p === undefined ? '-' : ms(p.max))).join(' and ')} ms, ` +
            `p99.9 ${[e?.before, e?.after].map((p) => (p === undefined ? '-' : ms(p.p999))).join(' and ')} ms (before and after)`
          : e?.failure !== undefined
            ? 'failed'
            : 'not measured',
      met: during !== undefined ? during.max <= PATCH_WAIT_GOAL_MS : undefined,
    })
    const target = HOLD_RATE_GOALS[backend]
    const hold = rowOf(r, backend, 'hold-one')
    const patch = rowOf(r, backend, 'patch-none')
    if (target !== undefined) {
      const holdFailed = hold?.failure !== undefined
      const ok = usable(hold)
      goals.push({
        goal: `${backend}: ≥ ${int(target)} holds a second placed on one hot pet (POST /v1/store/reservations, 1 unit, -c${CONNECTIONS})`,
        measured: ok
          ? `${int(hold.rps!)} holds/s (median of ${hold.rounds.length} rounds, ${range(
              hold.rounds.map((x) => x.sample.rps),
              0,
            )}); ${hold.cpuUs!.toFixed(1)} µs of server CPU a hold` +
            (usable(patch)
              ? ` against ${patch.cpuUs!.toFixed(1)} µs a PATCH of one hot pet at ${int(patch.rps!)} req/s (× ${hold.cpuRatio!.toFixed(2)})`
              : '')
          : holdFailed
            ? 'failed'
            : 'not measured',
        met: ok ? hold.rps! >= target : undefined,
      })
    }
    return goals
  })
}

function roundsTable(r: HoldsResult): string[][] {
  return [
    [
      'Backend',
      'Scenario',
      'req/s (rounds)',
      'CPU/req µs (user + sys)',
      'CPU/req ÷ patch-none (rounds)',
      'PostgreSQL CPU/req µs',
      'p50 ms',
      'p99 ms',
    ],
    ...r.rows.flatMap((row) => {
      if (!usable(row)) return []
      const goal = HOLD_RATE_GOALS[row.backend]
      return [
        [
          row.backend,
          row.scenario,
          `${int(row.rps!)} (${range(
            row.rounds.map((x) => x.sample.rps),
            0,
          )})${row.scenario === 'hold-one' && goal !== undefined ? `; goal ≥ ${int(goal)}: ${row.rps! >= goal ? 'met' : 'NOT met'}` : ''}`,
          `${row.cpuUs!.toFixed(1)} (${row.userUs!.toFixed(1)} + ${row.sysUs!.toFixed(1)})`,
          row.cpuRatio === undefined
            ? row.scenario === 'patch-none'
              ? '1'
              : '-'
            : `${row.cpuRatio.toFixed(3)} (${range(
                row.rounds.map((x) => x.cpuRatio!),
                3,
              )})`,
          row.pgUs === undefined ? '-' : row.pgUs.toFixed(1),
          row.p50!.toFixed(2),
          row.p99!.toFixed(2),
        ],
      ]
    }),
  ]
}

function expiryTable(r: HoldsResult): string[][] {
  const cols = r.expiry
  const line = (label: string, f: (e: Expiry) => string): string[] => [label, ...cols.map(f)]
  const probe = (p: Probe | undefined) =>
    p === undefined
      ? '-'
      : `${int(p.requests)} in ${p.seconds.toFixed(1)} s (${int(rate(p))}/s): ${ms(p.p50)} / ${ms(p.p99)} / ${ms(p.p999)} / ${ms(p.max)}`
  return [
    ['Measurement', ...cols.map((e) => e.backend)],
    line(`${int(r.settings.expiring)} holds placed through the storage code (the lead T was set ahead)`, (e) =>
      e.placedMs === undefined ? '-' : `${secs(e.placedMs)} (lead ${secs(e.leadMs)})`,
    ),
    line(`every unit back, from T (goal ≤ ${EXPIRY_GOAL_MS / 1000} s)`, (e) =>
      e.backMs !== undefined
        ? `${secs(e.backMs)}: ${e.backMs <= EXPIRY_GOAL_MS ? 'met' : 'NOT met'}`
        : e.left !== undefined
          ? `${int(e.left)} left after ${EXPIRY_WAIT_MS / 1000} s: NOT met`
          : '-',
    ),
    line("the sweep's first and last ledger rows, from T", (e) =>
      e.firstMs === undefined ? '-' : `+${secs(e.firstMs)} / +${secs(e.lastMs)}`,
    ),
    line('holds expired a second (first to last row)', (e) => sweepRate(r, e)),
    line("server CPU a hold expired (the PATCHes' share taken out), µs", (e) =>
      e.cpuUsPerHold === undefined ? '-' : e.cpuUsPerHold.toFixed(0),
    ),
    line("PostgreSQL's backends' CPU a hold expired, µs", (e) => (e.pgUsPerHold === undefined ? '-' : e.pgUsPerHold.toFixed(0))),
    line('PATCHes without a sweep, before: count, rate, p50 / p99 / p99.9 / max ms', (e) => probe(e.before)),
    line(`PATCHes during the expiry (from T - ${LEAD_IN_MS / 1000} s to ${TAIL_MS} ms after the last unit)`, (e) => probe(e.during)),
    line('PATCHes without a sweep, after', (e) => probe(e.after)),
    line(`PATCH max during the expiry (goal ≤ ${PATCH_WAIT_GOAL_MS} ms)`, (e) =>
      e.during === undefined ? '-' : `${ms(e.during.max)} ms: ${e.during.max <= PATCH_WAIT_GOAL_MS ? 'met' : 'NOT met'}`,
    ),
    line('server CPU a PATCH: before / during (sweep included) / after, µs', (e) =>
      [e.before, e.during, e.after].map((p) => (p === undefined ? '-' : p.cpuUs.toFixed(0))).join(' / '),
    ),
    line("the server's longest event-loop delay: before / during / after, ms", (e) =>
      [e.before, e.during, e.after].map((p) => (p?.loopMaxMs === undefined ? '-' : ms(p.loopMaxMs))).join(' / '),
    ),
    line("the server's main thread waiting for a CPU (run queue), share of the window: before / during / after", (e) =>
      [e.before, e.during, e.after].map((p) => (p?.waitPct === undefined ? '-' : `${p.waitPct.toFixed(1)} %`)).join(' / '),
    ),
    line("the bench's read of a due hold (the sweep's query, LIMIT 1) during the expiry: median / longest (polls); idle, before", (e) =>
      e.dueRead === undefined
        ? '-'
        : `${ms(e.dueRead.medianMs)} / ${ms(e.dueRead.maxMs)} ms (${int(e.dueRead.polls)}); ${ms(e.dueRead.idleMs)} ms`,
    ),
  ]
}

const settingsText = (r: HoldsResult): string =>
  `${r.settings.rounds} rounds (after a warm-up round at a fifth), each scenario once a round, the order rotated every round, ` +
  `${int(r.settings.requests)} requests a run (wrk -t1 -c${CONNECTIONS}); three services a backend on 10,000 entries of 10^9 units ` +
  `(none: no active hold; held: ${int(r.settings.active)} active holds due in 4 hours, then the expiry; hot: the hot pet's holds); ` +
  `expiry: ${int(r.settings.expiring)} holds of 1 unit over 1,000 pets due within one second T, PATCHes of one pet by ` +
  `${r.settings.probeConnections} connections each pausing ${r.settings.probeDelayMs} ms (bench/tail-latency.lua), ${r.settings.referenceSeconds} s without a sweep before and after`

const measured = (r: HoldsResult): boolean => r.rows.some(usable) || r.expiry.some((e) => e.during !== undefined)
const failed = (r: HoldsResult) => [
  ...r.rows.flatMap((x) => (x.failure === undefined ? [] : [{ what: `${x.backend}/${x.scenario}`, failure: x.failure }])),
  ...r.expiry.flatMap((e) => (e.failure === undefined ? [] : [{ what: `${e.backend}/expiry`, failure: e.failure }])),
]

/** The holds section of RESULTS.md (markdown, between its markers). */
export function renderHolds(r: HoldsResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Holds',
    run: r,
    source: 'bench/holds.ts',
    about:
      `Node ${r.node}; ${r.wrk}; backends ${r.backends.join(', ')}; ${settingsText(r)}; ${Math.round(r.seconds)} s.` +
      ' How each figure is measured: [README.md](README.md#holds).',
    body: measured(r)
      ? [
          `### ${int(r.settings.expiring)} holds due in the same second`,
          '',
          ...mdTable(expiryTable(r)),
          '',
          '### Holds on one hot pet, and a PATCH with active holds present (for information)',
          '',
          ...mdTable(roundsTable(r)),
          '',
        ]
      : ['Nothing was measured.', ''],
    notes: r.notes,
    failures: failed(r),
    goalsTitle: 'Hold goals',
    goals: holdsGoals(r),
  })
}

export function holdsConsole(r: HoldsResult): string {
  const blocks = [`${settingsText(r)}; ${Math.round(r.seconds)} s`]
  if (measured(r)) blocks.push(textTable(expiryTable(r)), textTable(roundsTable(r)))
  return sectionConsole({ blocks, notes: r.notes, failures: failed(r), goals: holdsGoals(r) })
}

/** RESULTS.md's holds section as it stands (markers included), or undefined. */
export const readHoldsSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its holds section, or after everything else. */
export const writeHoldsSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
