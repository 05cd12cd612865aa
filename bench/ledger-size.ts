// The ledger-size section (issue 25): for each backend and each size of BENCH_LEDGER_SIZES, a fresh
// database with the 10,000-pet inventory whose ledger is filled to that many rows by a fast path of
// its own (one SQL statement per chunk, not requests), then the service on it: PATCH and order
// throughput (wrk), one pet's first and last feed page timed one request at a time, and
// `petstore history` timed as a process. Results go into bench/RESULTS.md's ledger-size section
// (renderLedger, writeLedgerSection); run.ts runs it when BENCH_SCENARIOS names `ledger`.
import { Agent, request } from 'node:http'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { Backend } from './backends.js'
import { CLI_TIMEOUT_MS, DURATION_SECONDS, FIRST_PET_ID, LARGE_INVENTORY, LOAD_GRACE_MS, ORDER_STOCK, WARMUP_SECONDS } from './config.js'
import { benchCommand } from './live.js'
import { cpuPerRequest, runLoad, type LoadSpec, type Measured } from './load.js'
import { cpuTimeOf, runNode, type ServerHandle } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, writeSection } from './results-section.js'
import { checkOrder, checkPatch, createKey, makeDataset, serve, serviceEnv, type Dataset, type Running } from './targets.js'

/** `ledger` in BENCH_SCENARIOS runs this section; it is not part of a default run (minutes more, and gigabytes of disk at 10,000,000 rows). */
export const LEDGER_GROUP = 'ledger'

export function selectLedger(ids: readonly string[] | undefined): boolean {
  return ids?.includes(LEDGER_GROUP) ?? false
}

/** Ledger sizes in rows (env BENCH_LEDGER_SIZES, comma-separated), each at least the import's own rows. */
export const LEDGER_SIZES = parseSizes(process.env.BENCH_LEDGER_SIZES ?? '10000,1000000,10000000')

function parseSizes(raw: string): number[] {
  const sizes = raw
    .split(',')
    .map((s) => s.trim().replace(/_/g, ''))
    .filter((s) => s !== '')
    .map(Number)
  if (sizes.length === 0 || sizes.some((n) => !Number.isSafeInteger(n) || n < LARGE_INVENTORY)) {
    throw new Error(
      `BENCH_LEDGER_SIZES must be comma-separated integers >= ${LARGE_INVENTORY} (the import's own rows), got ${JSON.stringify(raw)}`,
    )
  }
  return sizes
}

/** Rows a fill statement writes (one statement, one transaction each). */
const FILL_CHUNK = 1_000_000
/** Every filled row's time: a fixed one, so runs are alike. */
const FILL_AT = new Date('2026-01-01T00:00:00.000Z')
/** Pets whose pages are timed: one first-page and one last-page request each, alternating. */
const PAGE_SAMPLES = 100
const PAGE_LIMIT = 100
/** Untimed page requests first (the connection, the JIT, the statements). */
const PAGE_WARMUP = 10
/** Timed `petstore history` processes (after one untimed run). */
const HISTORY_RUNS = 15
const REQUEST_TIMEOUT_MS = 30_000
/** The goal's page time and the size it is stated at. */
export const PAGE_GOAL_MS = 10
export const PAGE_GOAL_ROWS = 10_000_000
/** Flat, judged from the smallest size to the largest: req/s at least this share of the smallest size's. */
export const FLAT_THROUGHPUT = 0.8
/** ... a page's median at most this many ms above the smallest size's, or this many times it (whichever is looser). */
export const FLAT_PAGE_MS = 2
export const FLAT_PAGE_FACTOR = 2
/** ... history (a whole process, mostly Node's start-up) at most this many times the smallest size's, or FLAT_PAGE_MS above it. */
export const FLAT_HISTORY_FACTOR = 1.2

export interface Timings {
  median: number
  p99: number
  count: number
}

export interface LedgerRow {
  backend: string
  /** Rows asked for (BENCH_LEDGER_SIZES). */
  size: number
  /** Rows the ledger held when the service started (the import's included). */
  rows?: number
  /** The fast path: the chunks' INSERTs, the counter, ANALYZE (PostgreSQL), in ms. */
  fillMs?: number
  /** Pet rows per page-sampled pet, the median. */
  petRows?: number
  firstPage?: Timings
  lastPage?: Timings
  history?: Timings
  order?: Measured
  patch?: Measured
  /** The whole (backend, size) step: database, import, fill, measurements, stop and drop, in ms. */
  totalMs?: number
  failure?: string
}

export interface LedgerResult {
  date: string
  command: string
  loadAverage: number
  backends: string[]
  sizes: number[]
  rows: LedgerRow[]
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

// ---------------------------------------------------------------- the fill

/**
 * The fill's rows, numbered n = 0 .. fill - 1 after the ledger's `base` rows: seq base + n + 1, pet
 * FIRST_PET_ID + n mod pets (so every pet gets its share, spread through the whole ledger), reason
 * adjustment by the bench key at FILL_AT. The k-th filled row of a pet (k = n div pets) sets it to a
 * quantity from 0 to 99,999 from the one before it (the first from the imported stock), and each
 * pet's last row sets it back to the imported stock, so the ledger ends where the inventory stands.
 * Its parameters, numbered from 1 (SQLite @p1…, PostgreSQL $1…): base, first pet, pets, stock, fill, key id, at.
 */
const FILL_COLUMNS = 'seq, pet_id, previous_quantity, quantity, reason, key_id, at'
const fillSelect = (n: string, p: (i: number) => string): string => {
  const pet = `(${n} % ${p(3)})`
  const k = `(${n} / ${p(3)})`
  return `SELECT ${p(1)} + ${n} + 1, ${p(2)} + ${pet},
      CASE WHEN ${k} = 0 THEN ${p(4)} ELSE (${pet} * 7919 + (${k} - 1) * 104729) % 100000 END,
      CASE WHEN ${n} + ${p(3)} >= ${p(5)} THEN ${p(4)} ELSE (${pet} * 7919 + ${k} * 104729) % 100000 END,
      'adjustment', ${p(6)}, ${p(7)}`
}

interface Filled {
  rows: number
  fillMs: number
  /** Per sampled pet: the seq its last page starts after (0 when it has no more than a page), and its row count. */
  lastAfter: number[]
  petRows: number[]
}

/** SQLite: the file opened with better-sqlite3 while no service runs; one INSERT … WITH RECURSIVE per chunk, in its own transaction. */
function fillSqlite(url: string, size: number, pets: readonly number[]): Filled {
  const db = new Database(url.slice('sqlite:'.length))
  try {
    db.pragma('busy_timeout = 10000')
    db.pragma('cache_size = -262144') // 256 MiB: the fill writes the ledger and its three indexes
    const started = performance.now()
    const base = Number(db.prepare('SELECT coalesce(max(seq), 0) FROM inventory_changes').pluck().get())
    const keyId = Number(db.prepare('SELECT min(id) FROM api_keys').pluck().get())
    const fill = Math.max(0, size - base)
    const insert = db.prepare(
      `INSERT INTO inventory_changes (${FILL_COLUMNS})
       WITH RECURSIVE i(n) AS (SELECT @p8 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < @p9)
       ${fillSelect('n', (i) => `@p${i}`)} FROM i`,
    )
    for (let from = 0; from < fill; from += FILL_CHUNK) {
      const to = Math.min(fill, from + FILL_CHUNK)
      // BigInts bind as INTEGER (a JS number would bind as REAL, and n / pets would not be a whole number).
      const values = [base, FIRST_PET_ID, LARGE_INVENTORY, ORDER_STOCK, fill, keyId, FILL_AT.toISOString(), from, to]
      const named = Object.fromEntries(values.map((v, i) => [`p${i + 1}`, typeof v === 'number' ? BigInt(v) : v]))
      db.transaction(() => insert.run(named))()
    }
    db.pragma('wal_checkpoint(TRUNCATE)')
    const fillMs = performance.now() - started
    const rows = Number(db.prepare('SELECT count(*) FROM inventory_changes').pluck().get())
    // One pass over the ledger for every sampled pet (SQLite's index by pet is by span first, so a
    // query per pet by pet_id alone would scan the ledger each time); not the service's own query.
    const sampled = db
      .prepare(
        `SELECT pet_id, max(CASE WHEN rn = ${PAGE_LIMIT + 1} THEN seq END) AS after, max(rn) AS n
         FROM (SELECT pet_id, seq, row_number() OVER (PARTITION BY pet_id ORDER BY seq DESC) AS rn
               FROM inventory_changes WHERE pet_id IN (${pets.map(Number).join(', ')}))
         GROUP BY pet_id`,
      )
      .all() as { pet_id: number; after: number | null; n: number }[]
    const byPet = new Map(sampled.map((r) => [Number(r.pet_id), r]))
    return {
      rows,
      fillMs,
      lastAfter: pets.map((p) => Number(byPet.get(p)?.after ?? 0)),
      petRows: pets.map((p) => Number(byPet.get(p)?.n ?? 0)),
    }
  } finally {
    db.close()
  }
}

/**
 * PostgreSQL: one INSERT … SELECT FROM generate_series per chunk (each its own transaction), then
 * inventory_version.last_change moved to the last seq (seqs stay contiguous), then VACUUM, ANALYZE
 * and a CHECKPOINT.
 */
async function fillPostgres(url: string, size: number, pets: readonly number[]): Promise<Filled> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`SET statement_timeout = '20min'`)
    const started = performance.now()
    const [version] = (await client.query<{ last: string }>('SELECT last_change::text AS last FROM inventory_version')).rows
    const [key] = (await client.query<{ id: number }>('SELECT min(id) AS id FROM api_keys')).rows
    const base = Number(version?.last ?? 0)
    const fill = Math.max(0, size - base)
    const types = ['bigint', 'bigint', 'bigint', 'integer', 'bigint', 'integer', 'timestamptz']
    const sql = `INSERT INTO inventory_changes (${FILL_COLUMNS})
       ${fillSelect('n', (i) => `$${i}::${types[i - 1]}`)} FROM generate_series($8::bigint, $9::bigint - 1) AS n`
    for (let from = 0; from < fill; from += FILL_CHUNK) {
      const to = Math.min(fill, from + FILL_CHUNK)
      await client.query(sql, [base, FIRST_PET_ID, LARGE_INVENTORY, ORDER_STOCK, fill, key?.id ?? null, FILL_AT, from, to])
    }
    await client.query('UPDATE inventory_version SET last_change = $1::bigint', [base + fill])
    // The fill's own debt paid before the service is measured, as SQLite's checkpoint is: without it,
    // autovacuum (10,000,000 rows inserted) and the first readers setting each page's hint bits, and
    // the checkpoint of the fill's WAL, ran during the measured runs (an order p99 of 926 ms once).
    await client.query('VACUUM (ANALYZE) inventory_changes')
    await client.query('ANALYZE')
    await client.query('CHECKPOINT')
    const fillMs = performance.now() - started
    const [check] = (
      await client.query<{ rows: string; last: string; max: string }>(
        'SELECT count(*)::text AS rows, (SELECT last_change::text FROM inventory_version) AS last, coalesce(max(seq), 0)::text AS max FROM inventory_changes',
      )
    ).rows
    if (check === undefined || check.rows !== check.last || check.max !== check.last) {
      throw new Error(
        `after the fill: ${check?.rows} rows, max(seq) ${check?.max}, last_change ${check?.last}: seqs not contiguous up to the counter`,
      )
    }
    const lastAfter: number[] = []
    const petRows: number[] = []
    for (const p of pets) {
      // By the column, not the text alias: ORDER BY seq would sort the text ('9080018' after '10000018').
      const after = await client.query<{ seq: string }>(
        `SELECT seq::text AS seq FROM inventory_changes WHERE pet_id = $1 ORDER BY inventory_changes.seq DESC LIMIT 1 OFFSET ${PAGE_LIMIT}`,
        [p],
      )
      lastAfter.push(Number(after.rows[0]?.seq ?? 0))
      const count = await client.query<{ n: string }>('SELECT count(*)::text AS n FROM inventory_changes WHERE pet_id = $1', [p])
      petRows.push(Number(count.rows[0]?.n ?? 0))
    }
    return { rows: Number(check.rows), fillMs, lastAfter, petRows }
  } finally {
    await client.end()
  }
}

// ---------------------------------------------------------------- the measurements

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN
}

function timings(values: readonly number[]): Timings {
  const sorted = [...values].sort((a, b) => a - b)
  return { median: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), count: sorted.length }
}

/** One GET on `agent` (keep-alive), timed from sending it to the end of its body. */
function timedGet(
  agent: Agent,
  url: string,
  token: string,
): Promise<{ status: number; ms: number; body: string; link: string | undefined }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` }, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.once('error', reject)
      res.once('end', () => {
        const ms = performance.now() - started
        const link = res.headers.link
        resolve({
          status: res.statusCode ?? 0,
          ms,
          body: Buffer.concat(chunks).toString('utf8'),
          link: Array.isArray(link) ? link[0] : link,
        })
      })
    })
    req.once('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${REQUEST_TIMEOUT_MS} ms`)))
    req.once('error', reject)
    req.end()
  })
}

/**
 * Each sampled pet's first page (after=0) and last page (after = its seq PAGE_LIMIT rows from the end),
 * one request at a time on one keep-alive connection, alternating; each answer checked (200, that
 * pet's rows, a full page unless it is the pet's only one, a Link on the first page when more follow
 * and none on the last).
 */
async function timePages(running: Running, pets: readonly number[], filled: Filled): Promise<{ first: Timings; last: Timings }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const url = (pet: number, after: number): string =>
    `${running.server.baseUrl}/v1/inventory/changes?petId=${pet}&after=${after}&limit=${PAGE_LIMIT}`
  const check = (pet: number, after: number, got: { status: number; body: string; link: string | undefined }, last: boolean): void => {
    const what = `GET ${url(pet, after).replace(running.server.baseUrl, '')}`
    if (got.status !== 200) throw new Error(`${what} -> ${got.status}: ${got.body.slice(0, 300)}`)
    const list = JSON.parse(got.body) as { petId: number }[]
    const rows = filled.petRows[pets.indexOf(pet)] ?? 0
    const expected = Math.min(PAGE_LIMIT, rows)
    if (list.length !== expected || list.some((c) => Number(c.petId) !== pet)) {
      throw new Error(`${what}: ${list.length} rows (pet ${pet} has ${rows}), expected ${expected} of that pet`)
    }
    const more = !last && rows > PAGE_LIMIT
    if (more !== (got.link !== undefined)) throw new Error(`${what}: Link ${got.link ?? 'absent'}, expected ${more ? 'one' : 'none'}`)
  }
  try {
    for (let i = 0; i < PAGE_WARMUP; i++) {
      const pet = pets[(pets.length - 1 - i + pets.length) % pets.length]!
      await timedGet(agent, url(pet, 0), running.token)
    }
    const first: number[] = []
    const last: number[] = []
    for (const [i, pet] of pets.entries()) {
      const a = await timedGet(agent, url(pet, 0), running.token)
      check(pet, 0, a, false)
      first.push(a.ms)
      const after = filled.lastAfter[i] ?? 0
      const b = await timedGet(agent, url(pet, after), running.token)
      check(pet, after, b, true)
      last.push(b.ms)
    }
    return { first: timings(first), last: timings(last) }
  } finally {
    agent.destroy()
  }
}

/** `node dist/src/cli.js history P`, one untimed run, then HISTORY_RUNS timed, P varying. */
async function timeHistory(cli: string, env: NodeJS.ProcessEnv, pets: readonly number[]): Promise<Timings> {
  const run = async (pet: number): Promise<number> => {
    const started = performance.now()
    const out = await runNode(cli, ['history', String(pet)], env, CLI_TIMEOUT_MS)
    const ms = performance.now() - started
    const lines = out.trim().split('\n')
    if (lines.length < 2 || !lines[0]?.includes('SEQ')) throw new Error(`history ${pet} printed ${JSON.stringify(out.slice(0, 300))}`)
    return ms
  }
  await run(pets[0]!)
  const times: number[] = []
  for (let i = 0; i < HISTORY_RUNS; i++) times.push(await run(pets[(i * 7 + 1) % pets.length]!))
  return timings(times)
}

/** The patch or order scenario's load once: a warm-up, then the measured run, with the server's CPU per request. */
async function throughput(kind: 'patch' | 'order', running: Running): Promise<Measured> {
  const spec: LoadSpec = {
    url: `${running.server.baseUrl}${kind === 'order' ? '/v1/store/orders' : '/v1/inventory'}`,
    token: running.token,
    rotation: { script: kind, firstPetId: FIRST_PET_ID, petCount: LARGE_INVENTORY },
  }
  if (WARMUP_SECONDS > 0) await runLoad(spec, WARMUP_SECONDS)
  const cpuBefore = await cpuTimeOf(running.server.pid)
  const measured = await runLoad(spec, DURATION_SECONDS)
  const cpuAfter = await cpuTimeOf(running.server.pid)
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${running.server.label} exited during the ${kind} run: ${died}`)
  if (measured.errors > 0 || measured.non2xx > 0) {
    throw new Error(`${kind}: ${measured.non2xx} non-2xx/3xx, socket errors ${measured.errorDetail}`)
  }
  return { ...measured, ...cpuPerRequest(cpuBefore, cpuAfter, measured.completed) }
}

/** The pets whose pages and history are timed: PAGE_SAMPLES of them spread over the 10,000, a different one each time. */
function samplePets(): number[] {
  return Array.from({ length: PAGE_SAMPLES }, (_, i) => FIRST_PET_ID + ((i * 3571 + 17) % LARGE_INVENTORY))
}

/** One backend at one size: database, key, import, fill, serve, measure; stops and drops everything, whatever fails. */
async function ledgerRun(cli: string, backend: Backend, size: number, dataset: Dataset, log: (l: string) => void): Promise<LedgerRow> {
  const row: LedgerRow = { backend: backend.name, size }
  const started = performance.now()
  const label = `ledger ${size.toLocaleString('en-US')} / ${backend.name}`
  let server: ServerHandle | undefined
  const db = await backend.createDatabase(`ledger-${size}`)
  try {
    const env = serviceEnv(db.url)
    const token = await createKey(cli, env)
    await runNode(cli, ['import', 'inventory', dataset.file], env, CLI_TIMEOUT_MS)
    log(`${label}: filling the ledger`)
    const pets = samplePets()
    const filled = backend.name === 'sqlite' ? fillSqlite(db.url, size, pets) : await fillPostgres(db.url, size, pets)
    row.rows = filled.rows
    row.fillMs = filled.fillMs
    row.petRows = timings(filled.petRows).median
    log(`  ${filled.rows} rows in ${(filled.fillMs / 1000).toFixed(1)} s (${row.petRows} rows a sampled pet, the median)`)
    server = await serve(cli, backend, env)
    const running: Running = { server, token, stop: async () => {} }

    const pages = await timePages(running, pets, filled)
    row.firstPage = pages.first
    row.lastPage = pages.last
    log(
      `  pages (${pages.first.count} pets): first ${pages.first.median.toFixed(2)} / ${pages.first.p99.toFixed(2)} ms, ` +
        `last ${pages.last.median.toFixed(2)} / ${pages.last.p99.toFixed(2)} ms (median / p99)`,
    )
    row.history = await timeHistory(cli, env, pets)
    log(
      `  petstore history: ${row.history.median.toFixed(0)} ms median of ${row.history.count} runs (p99 ${row.history.p99.toFixed(0)} ms)`,
    )

    // Orders first: PATCHes set quantities at will, and orders need the imported stock.
    await checkOrder(running, dataset, false)
    row.order = await throughput('order', running)
    log(`  order: ${row.order.rps.toFixed(0)} req/s, p50 ${row.order.p50.toFixed(2)} ms, p99 ${row.order.p99.toFixed(2)} ms`)
    await checkPatch(running, dataset)
    row.patch = await throughput('patch', running)
    log(`  PATCH: ${row.patch.rps.toFixed(0)} req/s, p50 ${row.patch.p50.toFixed(2)} ms, p99 ${row.patch.p99.toFixed(2)} ms`)
  } catch (err) {
    row.failure = message(err)
    log(`  FAILED ${label}:\n${row.failure}`)
  } finally {
    try {
      await server?.stop()
    } catch (err) {
      row.failure ??= message(err)
    }
    await db.dispose()
  }
  row.totalMs = performance.now() - started
  log(`  ${label}: ${(row.totalMs / 1000).toFixed(0)} s in all`)
  return row
}

/**
 * Upper bound on the section's run time, for run.ts's watchdog: per backend and size, 3 minutes for
 * the database, import, pages, history and stop, the two loads, and the fill at a minute a million
 * rows (it took 1.3 s a million on SQLite and 3.0 s on PostgreSQL at 1,000,000 rows on 2 cores).
 */
export function ledgerBudgetMs(backends: number, sizes: readonly number[] = LEDGER_SIZES): number {
  const loads = 2 * ((WARMUP_SECONDS + DURATION_SECONDS) * 1000 + 2 * LOAD_GRACE_MS)
  return backends * sizes.reduce((ms, size) => ms + 180_000 + loads + (size / 1e6) * 60_000, 0)
}

export async function runLedger(
  cli: string,
  backends: readonly Backend[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<LedgerResult> {
  const result: LedgerResult = {
    date: new Date().toISOString(),
    command: benchCommand(),
    loadAverage,
    backends: backends.map((b) => b.name),
    sizes: LEDGER_SIZES,
    rows: [],
  }
  const dataset = await makeDataset(dir, LARGE_INVENTORY, false, ORDER_STOCK)
  log(`ledger size: ${LEDGER_SIZES.join(', ')} rows on ${result.backends.join(', ')}`)
  for (const backend of backends) {
    for (const size of LEDGER_SIZES) result.rows.push(await ledgerRun(cli, backend, size, dataset, log))
  }
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- ledger-size: start -->', end: '<!-- ledger-size: end -->' }
const num = (v: number | undefined, digits = 0): string => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits))
const msText = (v: number | undefined): string => (v === undefined ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1))
const sizeText = (n: number): string => n.toLocaleString('en-US')

const complete = (
  r: LedgerRow | undefined,
): r is LedgerRow & Required<Pick<LedgerRow, 'firstPage' | 'lastPage' | 'history' | 'order' | 'patch'>> =>
  r !== undefined && r.failure === undefined && !!r.firstPage && !!r.lastPage && !!r.history && !!r.order && !!r.patch

/** How a figure at the largest size compares with the smallest's, and whether that is flat by the rules above. */
function flat(what: string, small: number, large: number, kind: 'rps' | 'page' | 'history'): { what: string; text: string; ok: boolean } {
  if (kind === 'rps') {
    const ratio = large / small
    return { what, text: `${what} ${num(large)} vs ${num(small)} req/s (${num(ratio, 2)}×)`, ok: ratio >= FLAT_THROUGHPUT }
  }
  const factor = kind === 'page' ? FLAT_PAGE_FACTOR : FLAT_HISTORY_FACTOR
  const ok = large <= small + FLAT_PAGE_MS || large <= small * factor
  return { what, text: `${what} ${msText(large)} vs ${msText(small)} ms`, ok }
}

export function ledgerGoals(r: LedgerResult): Goal[] {
  const goals: Goal[] = []
  for (const backend of r.backends) {
    const mine = r.rows.filter((x) => x.backend === backend).sort((a, b) => a.size - b.size)
    const at = mine.find((x) => x.size >= PAGE_GOAL_ROWS)
    const largest = mine.at(-1)
    const shown = at ?? largest
    const pages = shown?.firstPage && shown.lastPage ? shown : undefined
    goals.push({
      goal: `${backend}: one pet's first page and its last page each under ${PAGE_GOAL_MS} ms at the median at ${sizeText(PAGE_GOAL_ROWS)} rows`,
      measured:
        pages === undefined
          ? '-'
          : `first ${msText(pages.firstPage?.median)} ms, last ${msText(pages.lastPage?.median)} ms at ${sizeText(pages.size)} rows` +
            (at === undefined ? ` (${sizeText(PAGE_GOAL_ROWS)} not run)` : ''),
      met: at?.firstPage && at.lastPage ? at.firstPage.median < PAGE_GOAL_MS && at.lastPage.median < PAGE_GOAL_MS : undefined,
    })
    const small = mine[0]
    const large = mine.length > 1 ? largest : undefined
    let measured = '-'
    let met: boolean | undefined
    if (complete(small) && complete(large)) {
      const checks = [
        flat('PATCH', small.patch.rps, large.patch.rps, 'rps'),
        flat('order', small.order.rps, large.order.rps, 'rps'),
        flat('first page', small.firstPage.median, large.firstPage.median, 'page'),
        flat('last page', small.lastPage.median, large.lastPage.median, 'page'),
        flat('history', small.history.median, large.history.median, 'history'),
      ]
      met = checks.every((c) => c.ok)
      const off = checks.filter((c) => !c.ok).map((c) => c.what)
      measured =
        `${sizeText(large.size)} vs ${sizeText(small.size)} rows: ${checks.map((c) => c.text).join('; ')}` +
        (off.length > 0 ? `; not flat: ${off.join(', ')}` : '')
    }
    goals.push({
      goal: `${backend}: PATCH and order req/s, feed page time and history time flat (within noise) as the ledger grows`,
      measured,
      met,
    })
  }
  return goals
}

function backendTable(r: LedgerResult, backend: string): string[][] {
  return [
    [
      'Ledger rows',
      'rows a pet',
      'fill',
      'PATCH req/s (p99 ms)',
      'order req/s (p99 ms)',
      'first page median / p99 ms',
      'last page median / p99 ms',
      'history median ms',
    ],
    ...r.rows
      .filter((x) => x.backend === backend)
      .map((x) => [
        sizeText(x.rows ?? x.size),
        num(x.petRows),
        x.fillMs === undefined ? '-' : `${(x.fillMs / 1000).toFixed(1)} s`,
        x.patch ? `${num(x.patch.rps)} (${msText(x.patch.p99)})` : '-',
        x.order ? `${num(x.order.rps)} (${msText(x.order.p99)})` : '-',
        x.firstPage ? `${msText(x.firstPage.median)} / ${msText(x.firstPage.p99)}` : '-',
        x.lastPage ? `${msText(x.lastPage.median)} / ${msText(x.lastPage.p99)}` : '-',
        x.history ? msText(x.history.median) : '-',
      ]),
  ]
}

/** The ledger-size section of RESULTS.md (markdown, between its markers). */
export function renderLedger(r: LedgerResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Ledger size',
    run: r,
    source: 'bench/ledger-size.ts',
    about:
      `backends ${r.backends.join(', ')}. How each figure is measured: [README.md](README.md#ledger-size). The ledger is filled by SQL of its` +
      ` own (not by requests), its rows spread over the 10,000 pets; then the service runs on it. Pages: ${PAGE_SAMPLES} pets, one request at` +
      ` a time, limit ${PAGE_LIMIT}; history: \`petstore history P\` timed as a whole process, ${HISTORY_RUNS} runs; PATCH and order: wrk as` +
      ` the patch and order scenarios, once per size (${WARMUP_SECONDS} s warm-up + ${DURATION_SECONDS} s), orders first.`,
    body: r.backends.flatMap((backend) => [`### ${backend}`, '', ...mdTable(backendTable(r, backend)), '']),
    failures: r.rows.flatMap((x) =>
      x.failure === undefined ? [] : [{ what: `${x.backend}, ${sizeText(x.size)} rows`, failure: x.failure }],
    ),
    goalsTitle: 'Ledger-size goals',
    goals: ledgerGoals(r),
    afterGoals: [
      `Flat is judged from the smallest size run to the largest: PATCH and order req/s at the largest at least ${FLAT_THROUGHPUT} × the smallest's` +
        ` (within ${Math.round((1 - FLAT_THROUGHPUT) * 100)} %); a page's median at most ${FLAT_PAGE_MS} ms above the smallest's or ${FLAT_PAGE_FACTOR} × it` +
        ` (whichever is looser); history's median (a whole process, mostly Node's start-up) at most ${FLAT_HISTORY_FACTOR} × the smallest's or` +
        ` ${FLAT_PAGE_MS} ms above it. Each throughput is one run, so a fifth either way is this shared machine's noise.`,
      '',
    ],
  })
}

export function ledgerConsole(r: LedgerResult): string {
  return sectionConsole({
    blocks: r.backends.map((backend) => `${backend}:\n${textTable(backendTable(r, backend))}`),
    goals: ledgerGoals(r),
  })
}

/** RESULTS.md's ledger-size section as it stands (markers included), or undefined. */
export const readLedgerSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its ledger-size section, or after everything else. */
export const writeLedgerSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
