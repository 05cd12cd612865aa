// Stock moves (issue 46): an adjustment of one hot pet against a PATCH of one hot pet, and batches of
// 1,000 changes, on each backend (SQLite; PostgreSQL when it answers). Part of `npm run bench` (run.ts
// runs it after the tracing group; `BENCH_SCENARIOS=stock` alone runs only it, replacing only its
// section of bench/RESULTS.md; `stock-adjust`, `stock-batch` or `stock-stream` run a part of it).
//
// Per backend one service (`petstore serve` as the bench's wrk scenarios run it: LOG_LEVEL warn, no
// rate limits) on a fresh database of 10,000 entries that each hold 10^9 units, so that no delta runs
// a stock out or past the bound. It answers a PATCH, an adjustment and a batch correctly first (the
// batch's ledger rows carrying its batchId). Then, in the same rounds, alternately (the order rotated
// every round, after one unmeasured warm-up round at a fifth of the load), each scenario once a round:
//   patch-one     PATCH /v1/inventory/1 {"quantity": n}, STOCK_REQUESTS requests: the reference every
//                 ratio is taken against, from the same round;
//   adjust-one    POST /v1/inventory/2/adjustments {"delta": 1} and {"delta": -1} in turn,
//                 STOCK_REQUESTS requests (both by bench/adjust.lua);
//   batch-spread  POST /v1/inventory/batch of 1,000 deltas over 1,000 distinct pets (bench/batch.lua,
//                 the batches walking over pets 1,001-10,000 a block of 1,000 at a time),
//                 STOCK_BATCHES batches;
//   batch-one     the same, every change on pet 3 (+1 and -1 in turn): one hot pet;
//   batch-stream  batch-spread with one change stream open (GET /v1/inventory/changes/stream after
//                 the ledger's last seq before the run, read by bench/live-clients.js, a process of
//                 its own, which counts the `event: change` blocks it receives).
// Each run is wrk -t1 (STOCK_CONNECTIONS connections for single requests, 64 as every other
// scenario; STOCK_BATCH_CONNECTIONS, 16, for batches), sending exactly its requests and SIGINTed once
// they are all answered (nothing is left in flight), bounded in time. Around it: the ledger's last
// seq (GET /v1/inventory/changes newest first, limit 1) and the server process's CPU time (the
// scheduler's, /proc/<pid>/task/*/schedstat; user and system apart from /proc/<pid>/stat) before wrk
// starts, and after it, once the server was idle for a poll and, with the stream, once the stream has
// received every row up to the last seq (waited for at most 15 s). The run must have added exactly
// its requests' changes to the ledger. CPU per change = that CPU time ÷ those rows (a PATCH or an
// adjustment writes one, a batch 1,000); CPU per request = CPU per change × the changes a request
// makes. req/s is wrk's; changes/s = req/s × changes per request. Reported per backend and scenario:
// medians over the rounds, and the median of the rounds' ratios to that round's patch-one.
// Goals (issue 46), per backend: adjust-one's req/s ≥ 0.9 × patch-one's; in batches of 1,000 (spread
// and one hot pet alike) the server's CPU per change ≤ 0.1 × its CPU per PATCH; batch-stream ≥
// 100,000 changes/s on SQLite and 50,000 on PostgreSQL with the open stream receiving every row
// committed, in every round.
// Knobs: STOCK_ROUNDS (5), STOCK_REQUESTS (20000), STOCK_BATCHES (200), STOCK_CONNECTIONS (64),
// STOCK_BATCH_CONNECTIONS (16).
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import type { Backend } from './backends.js'
import { CONNECTIONS, envNumber, LARGE_INVENTORY, WRK_TIMEOUT_SECONDS } from './config.js'
import { startClients, type Clients } from './live-children.js'
import { type Measured, spawnWrk } from './load.js'
import { cpuNsOf, cpuTimeOf, type ServerHandle } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, type WrkGroupRun, wrkGroupRun, writeSection } from './results-section.js'
import { checkPatch, makeDataset, type Running, serviceEnv, startService } from './targets.js'
import { median } from './stats.js'

/** `stock` in BENCH_SCENARIOS runs this group; a default run (no BENCH_SCENARIOS) includes it. */
export const STOCK_GROUP = 'stock'
/** Parts of the group BENCH_SCENARIOS may name instead: each with patch-one, the reference, unless only the stream. */
export const STOCK_PART_IDS = ['stock-adjust', 'stock-batch', 'stock-stream'] as const

type ScenarioId = 'patch-one' | 'adjust-one' | 'batch-spread' | 'batch-one' | 'batch-stream'

interface StockScenario {
  id: ScenarioId
  kind: 'patch' | 'adjust' | 'batch'
  /** The pet every request names (batch-spread: the first of the pets its batches walk over). */
  pet: number
  /** batch-spread and batch-stream: the pets the batches walk over, from `pet`. */
  pets?: number
  stream: boolean
}

/** Changes in each batch (the issue's size, and the largest the service takes). */
export const BATCH_SIZE = 1000
/** What every pet holds at the start: deltas of ±1 never take it below 0 or past 2^31 - 1. */
const STOCK = 1_000_000_000
const SPREAD_FIRST_PET = 1001
const SPREAD_PETS = 9000

const ALL_SCENARIOS: readonly StockScenario[] = [
  { id: 'patch-one', kind: 'patch', pet: 1, stream: false },
  { id: 'adjust-one', kind: 'adjust', pet: 2, stream: false },
  { id: 'batch-spread', kind: 'batch', pet: SPREAD_FIRST_PET, pets: SPREAD_PETS, stream: false },
  { id: 'batch-one', kind: 'batch', pet: 3, stream: false },
  { id: 'batch-stream', kind: 'batch', pet: SPREAD_FIRST_PET, pets: SPREAD_PETS, stream: true },
]
const PARTS: Readonly<Record<(typeof STOCK_PART_IDS)[number], readonly ScenarioId[]>> = {
  'stock-adjust': ['patch-one', 'adjust-one'],
  'stock-batch': ['patch-one', 'batch-spread', 'batch-one'],
  'stock-stream': ['batch-stream'],
}

/** The scenarios BENCH_SCENARIOS asks for: all of them by default or with `stock`, else those of the parts it names. */
export function selectStock(ids: readonly string[] | undefined): ScenarioId[] {
  if (ids === undefined || ids.includes(STOCK_GROUP)) return ALL_SCENARIOS.map((s) => s.id)
  const wanted = new Set(STOCK_PART_IDS.filter((part) => ids.includes(part)).flatMap((part) => PARTS[part]))
  return ALL_SCENARIOS.filter((s) => wanted.has(s.id)).map((s) => s.id)
}

/** True when BENCH_SCENARIOS names this group (or its parts) and nothing else: then run.ts runs it alone. */
export function stockOnly(ids: readonly string[] | undefined): boolean {
  return ids !== undefined && ids.length > 0 && ids.every((id) => id === STOCK_GROUP || (STOCK_PART_IDS as readonly string[]).includes(id))
}

const ROUNDS = Math.floor(envNumber('STOCK_ROUNDS', 5, 1))
/** Requests per run of patch-one and adjust-one. */
const REQUESTS = Math.floor(envNumber('STOCK_REQUESTS', 20_000, 100))
/** Batches per run of the batch scenarios. */
const BATCHES = Math.floor(envNumber('STOCK_BATCHES', 200, 10))
const SINGLE_CONNECTIONS = Math.floor(envNumber('STOCK_CONNECTIONS', CONNECTIONS, 1))
/**
 * Connections for batches. Not the 64 of every other scenario: with 64 batches of 1,000 in flight,
 * SQLite's group commit applies tens of thousands of changes in one synchronous transaction, the
 * event loop stalls for hundreds of milliseconds at a time, and the service's load shedding
 * (LOAD_SHED_EVENT_LOOP_DELAY_MS, 500 ms) answered the bench's own reads with 503 (README.md#stock-moves).
 */
const BATCH_CONNECTIONS = Math.floor(envNumber('STOCK_BATCH_CONNECTIONS', 16, 1))

/** Issue 46's goals. */
export const ADJUST_RATIO_GOAL = 0.9
export const BATCH_CPU_RATIO_GOAL = 0.1
export const STREAM_RATE_GOALS: Readonly<Record<string, number>> = { sqlite: 100_000, postgres: 50_000 }

/** bench/adjust.lua sends the PATCHes too (STOCK_KIND=patch), so that the reference ends its runs the same way. */
export const SCRIPTS = {
  patch: fileURLToPath(new URL('../../bench/adjust.lua', import.meta.url)),
  adjust: fileURLToPath(new URL('../../bench/adjust.lua', import.meta.url)),
  batch: fileURLToPath(new URL('../../bench/batch.lua', import.meta.url)),
} as const
/** What the scripts print once their requests are all answered. */
export const DONE = 'stock: requests done'
/** Bound of one wrk run: it ends once its requests are answered, long before, at 200 a second (batches: 2) or more. */
const SINGLE_WRK_SECONDS = Math.max(60, Math.ceil(REQUESTS / 200))
const BATCH_WRK_SECONDS = Math.max(60, Math.ceil(BATCHES / 2))
/** After wrk: the last seq and the server's CPU time polled this often until neither moves, for at most SETTLE_MAX_MS. */
const SETTLE_POLL_MS = 100
/** Idle: at most 5 ms of CPU time over a poll (the poll's own two requests cost a fraction of one). */
const SETTLE_IDLE_US = 5_000
const SETTLE_MAX_MS = 10_000
/** After the last seq stopped moving: the stream's count polled until it holds every row, for at most this long. */
const STREAM_WAIT_MAX_MS = 15_000
const INT64_MAX = '9223372036854775807'
/** How long the bench's own reads of the last seq retry a 503 (load shed). */
const SHED_WAIT_MS = 10_000

export const int = (n: number) => Math.round(n).toLocaleString('en-US')
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
export const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))
const changesPerRequest = (s: StockScenario): number => (s.kind === 'batch' ? BATCH_SIZE : 1)

// ---------------------------------------------------------------- the service

export const authorized = (running: Running, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  signal: AbortSignal.timeout(10_000),
})

/**
 * The ledger's last seq: its newest row's (GET /v1/inventory/changes newest first, limit 1), read
 * exactly. A 503 (the service sheds load for a second after its event loop was saturated) is asked
 * again a quarter of a second later, for up to SHED_WAIT_MS.
 */
export async function lastSeq(running: Running): Promise<bigint> {
  const url = `${running.server.baseUrl}/v1/inventory/changes?before=${INT64_MAX}&limit=1`
  const deadline = performance.now() + SHED_WAIT_MS
  let res = await fetch(url, authorized(running))
  while (res.status === 503 && performance.now() < deadline) {
    await res.arrayBuffer()
    await sleep(250)
    res = await fetch(url, authorized(running))
  }
  const text = await res.text()
  if (res.status !== 200)
    throw new Error(`${running.server.label}: GET /v1/inventory/changes?before=… -> ${res.status}: ${text.slice(0, 300)}`)
  const seq = /"seq":"?(\d+)/.exec(text)?.[1]
  if (seq === undefined) throw new Error(`${running.server.label}: the ledger is empty: ${text.slice(0, 300)}`)
  return BigInt(seq)
}

export async function post(running: Running, path: string, body: object): Promise<{ status: number; text: string }> {
  const res = await fetch(`${running.server.baseUrl}${path}`, authorized(running, { method: 'POST', body: JSON.stringify(body) }))
  return { status: res.status, text: await res.text() }
}

/**
 * An adjustment of pet 2 by +1 and -1 (200 with the entry holding STOCK + 1, then STOCK), and a batch
 * of two deltas (+1 on pets 4 and 5, then -1 each): 200 with a batchId and the two entries, and the
 * ledger's two newest rows that batch's, carrying its batchId.
 */
async function checkStockMoves(running: Running): Promise<void> {
  const label = running.server.label
  for (const [delta, quantity] of [
    [1, STOCK + 1],
    [-1, STOCK],
  ] as const) {
    const got = await post(running, '/v1/inventory/2/adjustments', { delta })
    const entry = got.status === 200 ? (JSON.parse(got.text) as { petId?: number; quantity?: number }) : undefined
    if (entry?.petId !== 2 || entry.quantity !== quantity)
      throw new Error(
        `${label}: POST /v1/inventory/2/adjustments {"delta":${delta}} -> ${got.status} ${got.text.slice(0, 300)}, expected 200 with quantity ${quantity}`,
      )
  }
  for (const delta of [1, -1]) {
    const got = await post(running, '/v1/inventory/batch', { changes: [4, 5].map((petId) => ({ petId, delta })) })
    const answer =
      got.status === 200 ? (JSON.parse(got.text) as { batchId?: string; entries?: { petId: number; quantity: number }[] }) : undefined
    const expected = STOCK + (delta === 1 ? 1 : 0)
    if (
      typeof answer?.batchId !== 'string' ||
      !/^[0-9a-f-]{36}$/.test(answer.batchId) ||
      answer.entries?.length !== 2 ||
      answer.entries.some((e, i) => e.petId !== 4 + i || e.quantity !== expected)
    )
      throw new Error(
        `${label}: POST /v1/inventory/batch (pets 4, 5, delta ${delta}) -> ${got.status} ${got.text.slice(0, 300)}, expected 200 with a batchId and both at ${expected}`,
      )
    const res = await fetch(`${running.server.baseUrl}/v1/inventory/changes?before=${INT64_MAX}&limit=2`, authorized(running))
    const rows = (await res.json()) as { batchId?: string | null; petId?: number }[]
    if (rows.length !== 2 || rows.some((r) => r.batchId !== answer.batchId))
      throw new Error(
        `${label}: the ledger's newest rows after batch ${answer.batchId} are ${JSON.stringify(rows).slice(0, 300)}, expected its two rows`,
      )
  }
}

// ---------------------------------------------------------------- PostgreSQL's side

/**
 * The bench's own connection to the service's PostgreSQL database: the CPU time of the server
 * processes (backends) serving the service's connections, and VACUUM between rounds.
 */
export interface PgSide {
  /** CPU time (utime + stime, µs) of every backend connected to the database but this one, by pid. */
  backendsCpu(): Promise<Map<number, number>>
  /** The server's autovacuum setting: with it off, vacuum() stands in for it between rounds. */
  autovacuum: boolean
  vacuum(): Promise<void>
  end(): Promise<void>
}

export async function pgSide(url: string): Promise<PgSide> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const autovacuum = (await client.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]?.autovacuum === 'on'
  return {
    autovacuum,
    async backendsCpu() {
      const { rows } = await client.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      )
      const cpu = new Map<number, number>()
      for (const { pid } of rows) {
        const time = await cpuTimeOf(pid)
        if (time !== undefined) cpu.set(pid, time.userUs + time.sysUs)
      }
      return cpu
    },
    async vacuum() {
      if (!autovacuum) await client.query('VACUUM (ANALYZE) inventory, inventory_version, idempotency_keys')
    },
    end: () => client.end(),
  }
}

/** CPU the backends spent between two readings; one that connected in between counts from 0, one gone is left out. */
export function backendsSpent(before: Map<number, number>, after: Map<number, number>): number {
  let us = 0
  for (const [pid, cpu] of after) us += cpu - (before.get(pid) ?? 0)
  return us
}

// ---------------------------------------------------------------- one run

export interface Sample {
  /** wrk's. */
  rps: number
  p50: number
  p99: number
  /** Requests wrk saw answered. */
  completed: number
  /** Ledger rows the run added (requests in flight at the SIGINT included). */
  rows: number
  /** The server's CPU time over the run, per ledger row (a change), in µs: user, system. */
  usPerChange: number
  /** The same from /proc/<pid>/stat's utime and stime (in ticks of 10 ms, so coarser): how it splits. */
  userUsPerChange: number
  sysUsPerChange: number
  /** PostgreSQL: its backends' CPU time over the run, per change, in µs. */
  pgUsPerChange?: number
  /** batch-stream: the change events the stream received, and from the load's end until it had them all (ms). */
  stream?: { received: number; drainMs: number }
}

const cpuPerChange = (s: Sample): number => s.usPerChange

/** The process's CPU time: in ns from the scheduler (all threads), and user and system from /proc/<pid>/stat. */
export async function cpuOf(server: ServerHandle) {
  const [ns, split] = await Promise.all([cpuNsOf(server.pid), cpuTimeOf(server.pid)])
  if (ns === undefined || split === undefined)
    throw new Error(`cannot read /proc/${server.pid}/task/*/schedstat or /proc/${server.pid}/stat`)
  return { us: ns / 1000, ...split }
}

function runWrk(scenario: StockScenario, running: Running, requests: number): Promise<Measured> {
  const batch = scenario.kind === 'batch'
  const seconds = batch ? BATCH_WRK_SECONDS : SINGLE_WRK_SECONDS
  const args = [
    '-t1',
    `-c${batch ? BATCH_CONNECTIONS : SINGLE_CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    '--timeout',
    `${WRK_TIMEOUT_SECONDS}s`,
    '-s',
    SCRIPTS[scenario.kind],
  ]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory`)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BENCH_FIRST_PET: String(scenario.pet),
    BENCH_PET_COUNT: String(scenario.pets ?? 1),
    STOCK_KIND: scenario.kind,
    STOCK_REQUESTS: String(requests),
  }
  if (batch) Object.assign(env, { BATCH_SIZE: String(BATCH_SIZE), BATCH_PETS: String(scenario.pets === undefined ? 1 : BATCH_SIZE) })
  const label = `${running.server.label} ${scenario.id}`
  return spawnWrk(args, env, seconds, { stopOn: DONE, label }).done.then((run) => {
    if (run.non2xx > 0 || run.errors > 0) throw new Error(`${label}: ${run.non2xx} answers not 2xx and socket errors ${run.errorDetail}`)
    if (run.completed < requests) throw new Error(`${label}: only ${run.completed} of ${requests} requests answered within ${seconds} s`)
    return run
  })
}

/**
 * Polls the last seq until it stopped moving and the server was idle over one poll (at most a tick of
 * CPU time in SETTLE_POLL_MS; after SETTLE_MAX_MS, the seq alone): the requests in flight at wrk's
 * SIGINT committed (and, with a stream, most of its sending done). Returns it.
 */
export async function settled(running: Running): Promise<bigint> {
  const deadline = performance.now() + SETTLE_MAX_MS
  let seq = await lastSeq(running)
  let cpu = await cpuOf(running.server)
  for (;;) {
    await sleep(SETTLE_POLL_MS)
    const next = await lastSeq(running)
    const nextCpu = await cpuOf(running.server)
    const idle = nextCpu.us - cpu.us <= SETTLE_IDLE_US
    if (next === seq && (idle || performance.now() > deadline)) return seq
    if (performance.now() > deadline) throw new Error(`${running.server.label}: the ledger still grew ${SETTLE_MAX_MS} ms after the load`)
    seq = next
    cpu = nextCpu
  }
}

async function runOnce(
  scenario: StockScenario,
  running: Running,
  clients: Clients,
  requests: number,
  pgs: PgSide | undefined,
): Promise<Sample> {
  const before = await lastSeq(running)
  if (scenario.stream) {
    const { port } = new URL(running.server.baseUrl)
    const opened = await clients.open({
      port: Number(port),
      token: running.token,
      path: `/v1/inventory/changes/stream?after=${before}`,
      count: 1,
      record: false,
    })
    if (opened.opened !== 1) throw new Error(`${running.server.label}: the change stream did not open: ${opened.firstError ?? ''}`)
  }
  try {
    const pgBefore = await pgs?.backendsCpu()
    const cpuBefore = await cpuOf(running.server)
    const run = await runWrk(scenario, running, requests)
    const loadEnd = performance.now()
    const after = await settled(running)
    const rows = Number(after - before)
    let stream: Sample['stream']
    if (scenario.stream) {
      let received = 0
      for (;;) {
        received = (await clients.collect()).events
        if (received >= rows || performance.now() - loadEnd > STREAM_WAIT_MAX_MS) break
        await sleep(20)
      }
      stream = { received, drainMs: performance.now() - loadEnd }
    }
    const cpuAfter = await cpuOf(running.server)
    const pgAfter = await pgs?.backendsCpu()
    const died = running.server.unexpectedExit()
    if (died !== undefined) throw new Error(`${running.server.label} exited during the run: ${died}`)
    if (rows !== requests * changesPerRequest(scenario))
      throw new Error(
        `${running.server.label} ${scenario.id}: the ledger grew by ${rows} rows for ${requests} requests of ${changesPerRequest(scenario)} changes (wrk saw ${run.completed} answered)`,
      )
    return {
      rps: run.rps,
      p50: run.p50,
      p99: run.p99,
      completed: run.completed,
      rows,
      usPerChange: (cpuAfter.us - cpuBefore.us) / rows,
      userUsPerChange: (cpuAfter.userUs - cpuBefore.userUs) / rows,
      sysUsPerChange: (cpuAfter.sysUs - cpuBefore.sysUs) / rows,
      ...(pgBefore === undefined || pgAfter === undefined ? {} : { pgUsPerChange: backendsSpent(pgBefore, pgAfter) / rows }),
      ...(stream === undefined ? {} : { stream }),
    }
  } finally {
    if (scenario.stream) await clients.closeAll()
  }
}

// ---------------------------------------------------------------- a backend

/** One round's run of a scenario, with its ratios to the same round's patch-one. */
export interface StockRound {
  sample: Sample
  /** req/s ÷ patch-one's req/s. */
  rpsRatio?: number
  /** CPU per change ÷ patch-one's CPU per request (a PATCH is one change). */
  cpuRatio?: number
}

/** A (backend, scenario): its rounds and medians, or why it failed. */
export interface StockRow {
  backend: string
  scenario: ScenarioId
  rounds: StockRound[]
  rps?: number
  /** changes/s: req/s × changes per request. */
  changesPerSecond?: number
  cpuUsPerRequest?: number
  cpuUsPerChange?: number
  /** PostgreSQL's backends' CPU per change (median), µs. */
  pgUsPerChange?: number
  userUs?: number
  sysUs?: number
  p50?: number
  p99?: number
  /** Medians of the rounds' ratios to patch-one. */
  rpsRatio?: number
  cpuRatio?: number
  /** batch-stream: rows received and committed over all rounds, the lowest round's share, the slowest drain. */
  stream?: { received: number; committed: number; lowest: number; everyRow: boolean; slowestDrainMs: number }
  failure?: string
}

function summarize(row: StockRow, scenario: StockScenario): void {
  const samples = row.rounds.map((r) => r.sample)
  if (samples.length === 0) return
  const per = changesPerRequest(scenario)
  row.rps = median(samples.map((s) => s.rps))
  row.changesPerSecond = median(samples.map((s) => s.rps * per))
  row.cpuUsPerChange = median(samples.map(cpuPerChange))
  row.cpuUsPerRequest = median(samples.map((s) => cpuPerChange(s) * per))
  row.userUs = median(samples.map((s) => s.userUsPerChange * per))
  row.sysUs = median(samples.map((s) => s.sysUsPerChange * per))
  row.p50 = median(samples.map((s) => s.p50))
  row.p99 = median(samples.map((s) => s.p99))
  const pgUs = samples.flatMap((s) => (s.pgUsPerChange === undefined ? [] : [s.pgUsPerChange]))
  if (pgUs.length > 0) row.pgUsPerChange = median(pgUs)
  const rpsRatios = row.rounds.flatMap((r) => (r.rpsRatio === undefined ? [] : [r.rpsRatio]))
  const cpuRatios = row.rounds.flatMap((r) => (r.cpuRatio === undefined ? [] : [r.cpuRatio]))
  if (rpsRatios.length > 0) row.rpsRatio = median(rpsRatios)
  if (cpuRatios.length > 0) row.cpuRatio = median(cpuRatios)
  if (scenario.stream) {
    const streams = samples.map((s) => ({ received: s.stream!.received, committed: s.rows, drainMs: s.stream!.drainMs }))
    row.stream = {
      received: streams.reduce((n, s) => n + s.received, 0),
      committed: streams.reduce((n, s) => n + s.committed, 0),
      lowest: Math.min(...streams.map((s) => s.received / s.committed)),
      everyRow: streams.every((s) => s.received === s.committed),
      slowestDrainMs: Math.max(...streams.map((s) => s.drainMs)),
    }
  }
}

async function runBackend(
  cli: string,
  backend: Backend,
  scenarios: readonly StockScenario[],
  dir: string,
  log: (l: string) => void,
  notes: string[],
): Promise<StockRow[]> {
  const rows = scenarios.map((s): StockRow => ({ backend: backend.name, scenario: s.id, rounds: [] }))
  const dataset = await makeDataset(dir, LARGE_INVENTORY, false, STOCK)
  let url = ''
  const running = await startService(cli, backend, dataset, 'stock-moves', (u) => {
    url = u
    return serviceEnv(u)
  })
  const clients = startClients()
  let pgs: PgSide | undefined
  try {
    if (backend.name === 'postgres') {
      pgs = await pgSide(url)
      if (!pgs.autovacuum)
        notes.push(
          `${backend.name}: autovacuum is off on this server, so the bench ran VACUUM (ANALYZE) of the inventory between rounds, outside the measured runs.`,
        )
    }
    await checkPatch(running, dataset)
    await checkStockMoves(running)
    for (let round = 0; round <= ROUNDS; round++) {
      const shift = round % scenarios.length
      const order = [...scenarios.slice(shift), ...scenarios.slice(0, shift)]
      const got = new Map<ScenarioId, Sample>()
      for (const scenario of order) {
        const row = rows.find((r) => r.scenario === scenario.id)!
        if (row.failure !== undefined) continue
        const full = scenario.kind === 'batch' ? BATCHES : REQUESTS
        try {
          got.set(scenario.id, await runOnce(scenario, running, clients, round === 0 ? Math.ceil(full / 5) : full, pgs))
        } catch (err) {
          row.failure = message(err)
          log(`  FAILED stock ${backend.name}/${scenario.id}:\n${row.failure}`)
          const died = running.server.unexpectedExit()
          if (died !== undefined) throw new Error(`${running.server.label} exited: ${died}`)
        }
      }
      const patch = got.get('patch-one')
      const line: string[] = []
      for (const scenario of scenarios) {
        const sample = got.get(scenario.id)
        if (sample === undefined) continue
        const per = changesPerRequest(scenario)
        const ratios =
          patch === undefined || scenario.id === 'patch-one'
            ? {}
            : { rpsRatio: sample.rps / patch.rps, cpuRatio: cpuPerChange(sample) / cpuPerChange(patch) }
        if (round > 0) rows.find((r) => r.scenario === scenario.id)!.rounds.push({ sample, ...ratios })
        line.push(
          `${scenario.id} ${int(sample.rps)}/s${per > 1 ? ` (${int(sample.rps * per)} changes/s)` : ''}, ${(cpuPerChange(sample) * per).toFixed(per > 1 ? 0 : 1)} µs/req` +
            (per > 1 ? ` (${cpuPerChange(sample).toFixed(2)} µs/change)` : '') +
            (ratios.rpsRatio === undefined
              ? ''
              : per > 1
                ? `, CPU/change ÷ PATCH ${ratios.cpuRatio!.toFixed(3)}`
                : `, × PATCH req/s ${ratios.rpsRatio.toFixed(3)}`) +
            (sample.pgUsPerChange === undefined ? '' : `, PostgreSQL ${sample.pgUsPerChange.toFixed(per > 1 ? 2 : 1)} µs/change`) +
            (sample.stream === undefined
              ? ''
              : `, stream ${int(sample.stream.received)} of ${int(sample.rows)} rows in ${int(sample.stream.drainMs)} ms after wrk`),
        )
      }
      log(`stock ${backend.name} ${round === 0 ? 'warm-up' : `round ${round}`}: ${line.join('; ')}`)
      // With autovacuum off (this machine's PostgreSQL), the inventory would only bloat: a million
      // dead rows for 10,000 live ones by the last round. With it on, a table this busy is vacuumed about once a minute.
      await pgs?.vacuum()
    }
  } finally {
    await pgs?.end().catch((err: unknown) => log(`${backend.name}: closing the bench's connection: ${message(err)}`))
    await clients.stop().catch((err: unknown) => log(`${backend.name}: stopping the stream clients: ${message(err)}`))
    await running.stop().catch((err: unknown) => log(`${backend.name}: stopping the service: ${message(err)}`))
  }
  for (const [i, row] of rows.entries()) summarize(row, scenarios[i]!)
  return rows
}

// ---------------------------------------------------------------- the group

export interface StockResult extends WrkGroupRun {
  settings: {
    rounds: number
    requests: number
    batches: number
    batchSize: number
    connections: number
    batchConnections: number
    scenarios: ScenarioId[]
  }
  backends: string[]
  notes: string[]
  rows: StockRow[]
  seconds: number
}

/**
 * Upper bound on the group's run time, for run.ts's watchdog: per backend 2 minutes for the service's
 * start and checks; per round (the warm-up one included) and scenario 1 ms a single request (at no
 * less than 1,000 a second), 100 ms a batch (10 a second), 20 s of settling and draining.
 */
export function stockBudgetMs(scenarios: readonly string[], backends: number): number {
  const run = (id: string) => (ALL_SCENARIOS.find((s) => s.id === id)?.kind === 'batch' ? BATCHES * 100 : REQUESTS) + 20_000
  return 30_000 + backends * (120_000 + (ROUNDS + 1) * scenarios.reduce((ms, id) => ms + run(id), 0))
}

export async function runStock(
  cli: string,
  backends: readonly Backend[],
  ids: readonly string[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<StockResult> {
  const started = performance.now()
  const scenarios = ALL_SCENARIOS.filter((s) => ids.includes(s.id))
  const result: StockResult = {
    ...wrkGroupRun(loadAverage, 'STOCK_'),
    settings: {
      rounds: ROUNDS,
      requests: REQUESTS,
      batches: BATCHES,
      batchSize: BATCH_SIZE,
      connections: SINGLE_CONNECTIONS,
      batchConnections: BATCH_CONNECTIONS,
      scenarios: scenarios.map((s) => s.id),
    },
    backends: backends.map((b) => b.name),
    notes: [],
    rows: [],
    seconds: 0,
  }
  if (!result.backends.includes('postgres')) result.notes.push('PostgreSQL was not reachable, so its rows are missing.')
  if (!scenarios.some((s) => s.id === 'patch-one') && scenarios.length > 0)
    result.notes.push('patch-one did not run, so no ratio to a PATCH was measured.')
  log(
    `stock: ${result.settings.scenarios.join(', ')} on ${result.backends.join(', ')}; ${ROUNDS} rounds (after a warm-up round at a fifth) ` +
      `of ${REQUESTS} requests (-c${SINGLE_CONNECTIONS}) or ${BATCHES} batches of ${BATCH_SIZE} (-c${BATCH_CONNECTIONS}) each, alternately`,
  )
  for (const backend of backends) {
    try {
      result.rows.push(...(await runBackend(cli, backend, scenarios, dir, log, result.notes)))
    } catch (err) {
      const failure = message(err)
      log(`  FAILED stock ${backend.name}:\n${failure}`)
      for (const scenario of scenarios)
        if (!result.rows.some((r) => r.backend === backend.name && r.scenario === scenario.id))
          result.rows.push({ backend: backend.name, scenario: scenario.id, rounds: [], failure })
    }
  }
  result.seconds = (performance.now() - started) / 1000
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- stock-moves: start -->', end: '<!-- stock-moves: end -->' }
const range = (values: readonly number[], digits: number) =>
  values.length === 0 ? '-' : `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`
const rowOf = (r: StockResult, backend: string, id: ScenarioId) => r.rows.find((x) => x.backend === backend && x.scenario === id)
const usable = (row: StockRow | undefined): row is StockRow => row !== undefined && row.failure === undefined && row.rounds.length > 0
const notMeasured = (r: StockResult, row: StockRow | undefined, needsPatch: boolean): string =>
  row === undefined
    ? 'not run (BENCH_SCENARIOS left it out)'
    : row.failure !== undefined
      ? 'failed'
      : needsPatch && row.cpuRatio === undefined
        ? `no ratio: patch-one ${r.rows.some((x) => x.scenario === 'patch-one') ? 'failed' : 'did not run'}`
        : 'not measured'

/** Per backend: the adjustment's req/s ratio, the batches' CPU per change (spread, one pet), the rate with a stream open. */
export function stockGoals(r: StockResult): Goal[] {
  return r.backends.flatMap((backend): Goal[] => {
    const adjust = rowOf(r, backend, 'adjust-one')
    const goals: Goal[] = []
    if (adjust !== undefined)
      goals.push({
        goal: `${backend}: an adjustment of one hot pet answers ≥ ${ADJUST_RATIO_GOAL} × the requests a second of a PATCH of one hot pet`,
        measured:
          usable(adjust) && adjust.rpsRatio !== undefined
            ? `${adjust.rpsRatio.toFixed(3)} × (${int(adjust.rps!)} vs ${int(rowOf(r, backend, 'patch-one')!.rps!)} req/s, median of ${adjust.rounds.length} rounds' ratios ` +
              `${range(
                adjust.rounds.map((x) => x.rpsRatio!),
                2,
              )}; CPU per request ${(adjust.cpuRatio ?? Number.NaN).toFixed(3)} ×)`
            : notMeasured(r, adjust, true),
        met: usable(adjust) && adjust.rpsRatio !== undefined ? adjust.rpsRatio >= ADJUST_RATIO_GOAL : undefined,
      })
    for (const [id, what] of [
      ['batch-spread', 'over 1,000 pets'],
      ['batch-one', 'all on one hot pet'],
    ] as const) {
      const row = rowOf(r, backend, id)
      if (row === undefined) continue
      const ok = usable(row) && row.cpuRatio !== undefined
      goals.push({
        goal: `${backend}: in batches of ${int(BATCH_SIZE)} changes ${what}, the server's CPU per change ≤ ${BATCH_CPU_RATIO_GOAL} × its CPU per PATCH`,
        measured: ok
          ? `${row.cpuRatio!.toFixed(3)} × (${row.cpuUsPerChange!.toFixed(2)} µs a change vs ${rowOf(r, backend, 'patch-one')!.cpuUsPerRequest!.toFixed(1)} µs a PATCH, ` +
            `median of ${row.rounds.length} rounds' ratios ${range(
              row.rounds.map((x) => x.cpuRatio!),
              3,
            )})`
          : notMeasured(r, row, true),
        met: ok ? row.cpuRatio! <= BATCH_CPU_RATIO_GOAL : undefined,
      })
    }
    const stream = rowOf(r, backend, 'batch-stream')
    const target = STREAM_RATE_GOALS[backend]
    if (stream !== undefined && target !== undefined) {
      const ok = usable(stream) && stream.stream !== undefined
      goals.push({
        goal: `${backend}: ≥ ${int(target)} changes a second applied in batches of ${int(BATCH_SIZE)} while an open change stream receives every row`,
        measured: ok
          ? `${int(stream.changesPerSecond!)} changes/s (median of ${stream.rounds.length} rounds, ${range(
              stream.rounds.map((x) => x.sample.rps * BATCH_SIZE),
              0,
            )}); the stream received ${int(stream.stream!.received)} of ${int(stream.stream!.committed)} rows committed` +
            `${stream.stream!.everyRow ? ' (every row, every round)' : ` (lowest round ${(100 * stream.stream!.lowest).toFixed(2)} %)`}`
          : notMeasured(r, stream, false),
        met: ok ? stream.changesPerSecond! >= target && stream.stream!.everyRow : undefined,
      })
    }
    return goals
  })
}

function table(r: StockResult): string[][] {
  return [
    [
      'Backend',
      'Scenario',
      'req/s',
      'req/s ÷ patch-one',
      'changes/s',
      'CPU/req µs (user + sys)',
      'CPU/change µs',
      'CPU/change ÷ PATCH CPU',
      'PostgreSQL CPU/change µs',
      'p50 ms',
      'p99 ms',
      'Stream: rows received ÷ committed',
    ],
    ...r.rows.flatMap((row) => {
      if (!usable(row)) return []
      const goal =
        row.scenario === 'adjust-one' && row.rpsRatio !== undefined
          ? `; goal ≥ ${ADJUST_RATIO_GOAL}: ${row.rpsRatio >= ADJUST_RATIO_GOAL ? 'met' : 'NOT met'}`
          : ''
      const cpuGoal =
        row.scenario.startsWith('batch-') && row.scenario !== 'batch-stream' && row.cpuRatio !== undefined
          ? `; goal ≤ ${BATCH_CPU_RATIO_GOAL}: ${row.cpuRatio <= BATCH_CPU_RATIO_GOAL ? 'met' : 'NOT met'}`
          : ''
      const target = STREAM_RATE_GOALS[row.backend]
      const rateGoal =
        row.scenario === 'batch-stream' && target !== undefined
          ? ` (goal ≥ ${int(target)}: ${row.changesPerSecond! >= target ? 'met' : 'NOT met'})`
          : ''
      const s = row.stream
      return [
        [
          row.backend,
          row.scenario,
          int(row.rps!),
          row.rpsRatio === undefined
            ? '1'
            : `${row.rpsRatio.toFixed(3)} (rounds ${range(
                row.rounds.map((x) => x.rpsRatio!),
                2,
              )}${goal})`,
          `${int(row.changesPerSecond!)}${rateGoal}`,
          `${row.cpuUsPerRequest!.toFixed(1)} (${row.userUs!.toFixed(1)} + ${row.sysUs!.toFixed(1)})`,
          row.cpuUsPerChange!.toFixed(2),
          row.cpuRatio === undefined
            ? row.scenario === 'patch-one'
              ? '1'
              : '-'
            : `${row.cpuRatio.toFixed(3)} (rounds ${range(
                row.rounds.map((x) => x.cpuRatio!),
                3,
              )}${cpuGoal})`,
          row.pgUsPerChange === undefined ? '-' : row.pgUsPerChange.toFixed(2),
          row.p50!.toFixed(2),
          row.p99!.toFixed(2),
          s === undefined
            ? ''
            : `${int(s.received)} ÷ ${int(s.committed)}${s.everyRow ? ' (every row, every round)' : ` (lowest round ${(100 * s.lowest).toFixed(2)} %)`}; last row ≤ ${int(s.slowestDrainMs)} ms after wrk`,
        ],
      ]
    }),
  ]
}

const settingsText = (r: StockResult): string =>
  `${r.settings.rounds} rounds (after a warm-up round at a fifth), each scenario once a round, the order rotated every round: ` +
  `${int(r.settings.requests)} requests a run of patch-one and adjust-one (wrk -t1 -c${r.settings.connections}), ${int(r.settings.batches)} batches of ` +
  `${int(r.settings.batchSize)} changes a run of the batch scenarios (-c${r.settings.batchConnections}); one service per backend on 10,000 entries of 10^9 units; ` +
  "CPU = the server process's time on a CPU (schedstat; user + sys from /proc/<pid>/stat) from before wrk until it was idle (and the stream had every row) ÷ the rows the run added to the ledger, exactly its requests' changes; " +
  "PostgreSQL's = utime + stime of the backends connected to the service's database over the same window"

const measured = (r: StockResult): boolean => r.rows.some(usable)
const failed = (r: StockResult) =>
  r.rows.flatMap((x) => (x.failure === undefined ? [] : [{ what: `${x.backend}/${x.scenario}`, failure: x.failure }]))

/** The stock-moves section of RESULTS.md (markdown, between its markers). */
export function renderStock(r: StockResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Stock moves',
    run: r,
    source: 'bench/stock-moves.ts',
    about:
      `Node ${r.node}; ${r.wrk}; backends ${r.backends.join(', ')}; ${settingsText(r)}; ${Math.round(r.seconds)} s.` +
      ' How each figure is measured: [README.md](README.md#stock-moves).',
    body: measured(r) ? [...mdTable(table(r)), ''] : ['Nothing was measured.', ''],
    notes: r.notes,
    failures: failed(r),
    goalsTitle: 'Stock-move goals',
    goals: stockGoals(r),
  })
}

export function stockConsole(r: StockResult): string {
  const blocks = [`${settingsText(r)}; ${Math.round(r.seconds)} s`]
  if (measured(r)) blocks.push(textTable(table(r)))
  return sectionConsole({ blocks, notes: r.notes, failures: failed(r), goals: stockGoals(r) })
}

/** RESULTS.md's stock-moves section as it stands (markers included), or undefined. */
export const readStockSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its stock-moves section, or after everything else. */
export const writeStockSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
