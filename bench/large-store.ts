// The operator's commands on a large store while a `petstore serve` process takes PATCHes at a fixed
// rate: `petstore backup` (SQLite) and `petstore check` (both backends), each as its own process under
// GNU time: how long it takes, its peak RSS, and the PATCHes' latency before, during and after it (the
// issue's bound: no PATCH waits more than 50 ms for either). A one-off, not part of `npm run bench`
// (the database alone takes a minute or more to build):
//
//   npm run build && node dist/bench/large-store.js
//
// LARGE_BACKEND (sqlite, or postgres: a database of its own on PGURL's server, postgres://postgres@
// 127.0.0.1:5432/postgres by default, dropped after), LARGE_ENTRIES (1000000), LARGE_LEDGER_ROWS
// (10000000), LARGE_PATCH_RATE (PATCHes a second, 200), LARGE_DIR (a temporary folder; the SQLite
// database and its copy need about 2.5 GB), LARGE_KEEP=1 keeps the folder. Prints one Markdown table
// row per command and the figures as JSON.
import Database from 'better-sqlite3'
import pg from 'pg'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { HOST, freePort, killAllChildren, startServer } from './procs.js'

const CLI = new URL('../src/cli.js', import.meta.url).pathname
const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback)
const BACKEND = process.env.LARGE_BACKEND ?? 'sqlite'
const ENTRIES = num('LARGE_ENTRIES', 1_000_000)
const LEDGER_ROWS = num('LARGE_LEDGER_ROWS', 10_000_000)
const RATE = num('LARGE_PATCH_RATE', 200)
const PG_ADMIN = process.env.PGURL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CHUNK = 1_000_000
/** Seconds of PATCHes before a command starts and after it ends. */
const SIDE_SECONDS = 5

function node(args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [CLI, ...args], { env, maxBuffer: 1 << 24 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve({ stdout, stderr }),
    ),
  )
}

/** The inventory and the ledger by SQL of their own, on the migrated file, before any server runs. */
function fillSqlite(path: string) {
  const db = new Database(path)
  db.pragma('cache_size = -262144')
  const keyId = BigInt(db.prepare('SELECT min(id) FROM api_keys').pluck().get() as number)
  db.transaction(() =>
    db
      .prepare(`INSERT INTO inventory (pet_id, quantity, status)
        WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?) SELECT n, 1000, 'available' FROM i`)
      .run(BigInt(ENTRIES)),
  )()
  const insert = db.prepare(`INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, key_id, at)
    WITH RECURSIVE i(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?)
    SELECT n + 1, n % ? + 1, 1000, 1000, 'adjustment', ?, '2026-01-01T00:00:00.000Z' FROM i`)
  for (let from = 0; from < LEDGER_ROWS; from += CHUNK)
    db.transaction(() => insert.run(BigInt(from), BigInt(Math.min(LEDGER_ROWS, from + CHUNK)), BigInt(ENTRIES), keyId))()
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** The same on PostgreSQL: the rows, the seq counter moved past them, and the statistics. */
async function fillPostgres(url: string) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const [key] = (await client.query('SELECT min(id) AS id FROM api_keys')).rows
    await client.query(
      `INSERT INTO inventory (pet_id, quantity, status) SELECT n, 1000, 'available' FROM generate_series(1, $1::bigint) AS n`,
      [ENTRIES],
    )
    for (let from = 0; from < LEDGER_ROWS; from += CHUNK)
      await client.query(
        `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, key_id, at)
         SELECT n, n % $3 + 1, 1000, 1000, 'adjustment', $4, '2026-01-01T00:00:00Z' FROM generate_series($1::bigint + 1, $2::bigint) AS n`,
        [from, Math.min(LEDGER_ROWS, from + CHUNK), ENTRIES, key.id],
      )
    await client.query('UPDATE inventory_version SET last_change = $1', [LEDGER_ROWS])
    await client.query('VACUUM ANALYZE')
  } finally {
    await client.end()
  }
}

/** A fresh database for the run: a SQLite file in `dir`, or a PostgreSQL database of its own. */
async function createDatabase(dir: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (BACKEND === 'sqlite') return { url: `sqlite:${join(dir, 'petstore.db')}`, drop: async () => {} }
  const name = `petstore_large_${process.pid}`
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: PG_ADMIN })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(PG_ADMIN)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

interface Sample {
  at: number
  ms: number
  status: number
}

/** PATCHes at a fixed rate (open loop: each on its schedule, whatever the ones before), until stop(). */
function drive(baseUrl: string, token: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const { port } = new URL(baseUrl)
  const samples: Sample[] = []
  const started = performance.now()
  let sent = 0
  let stopped = false
  let inFlight = 0
  const one = () => {
    const pet = 1 + Math.floor(Math.random() * ENTRIES)
    const body = JSON.stringify({ quantity: Math.floor(Math.random() * 1000) })
    const at = performance.now()
    inFlight++
    const req = request(
      {
        host: HOST,
        port,
        method: 'PATCH',
        path: `/v1/inventory/${pet}`,
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume()
        res.on('end', () => {
          inFlight--
          samples.push({ at, ms: performance.now() - at, status: res.statusCode ?? 0 })
        })
      },
    )
    req.on('error', () => {
      inFlight--
      samples.push({ at, ms: performance.now() - at, status: 0 })
    })
    req.end(body)
  }
  const tick = () => {
    if (stopped) return
    const due = Math.floor(((performance.now() - started) * RATE) / 1000)
    while (sent < due) {
      sent++
      one()
    }
    setTimeout(tick, 1)
  }
  tick()
  return {
    samples,
    async stop() {
      stopped = true
      while (inFlight > 0) await new Promise((r) => setTimeout(r, 10))
      agent.destroy()
    },
  }
}

function summary(samples: Sample[], from: number, to: number) {
  const ms = samples
    .filter((s) => s.at >= from && s.at < to)
    .map((s) => s.ms)
    .sort((a, b) => a - b)
  const at = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? Number.NaN
  const bad = samples.filter((s) => s.at >= from && s.at < to && s.status !== 200).length
  // When the five slowest were sent, in seconds from the window's start: which phase they fall in.
  const worstAt = samples
    .filter((s) => s.at >= from && s.at < to)
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map((s) => Number(((s.at - from) / 1000).toFixed(2)))
  return { patches: ms.length, notOk: bad, p50: at(0.5), p99: at(0.99), max: ms.at(-1) ?? Number.NaN, worstAt }
}

/** Runs one `petstore` command as operators do, a process of its own, under GNU time (%M: peak RSS, KiB). */
async function timed(args: string[], env: NodeJS.ProcessEnv, databasePath: string | undefined) {
  const started = performance.now()
  let walPeak = 0
  const walWatch = setInterval(() => {
    if (databasePath === undefined) return
    try {
      walPeak = Math.max(walPeak, statSync(`${databasePath}-wal`).size)
    } catch {}
  }, 100)
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('/usr/bin/time', ['-f', 'peak-rss-kib %M', process.execPath, CLI, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
  const ended = performance.now()
  clearInterval(walWatch)
  if (run.code !== 0) throw new Error(`petstore ${args.join(' ')} exited ${run.code}: ${run.stdout.slice(0, 2000)}${run.stderr}`)
  const peakKiB = Number(/peak-rss-kib (\d+)/.exec(run.stderr)?.[1])
  return {
    started,
    ended,
    seconds: Number(((ended - started) / 1000).toFixed(1)),
    peakRssMiB: Math.round(peakKiB / 1024),
    walPeakMiB: Number((walPeak / 2 ** 20).toFixed(1)),
    said: run.stderr.split('\n').find((l) => /^(Backed up|Checked)/.test(l)),
  }
}

async function main() {
  const dir = process.env.LARGE_DIR ?? mkdtempSync(join(tmpdir(), 'petstore-large-bench-'))
  const database = await createDatabase(dir)
  const sqlitePath = BACKEND === 'sqlite' ? database.url.slice('sqlite:'.length) : undefined
  const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' }
  try {
    const t = performance.now()
    await node(['migrate'], env)
    const token = (await node(['keys', 'create', '--name', 'bench'], env)).stdout.trim()
    if (sqlitePath) fillSqlite(sqlitePath)
    else await fillPostgres(database.url)
    const fillS = (performance.now() - t) / 1000
    const dbBytes = sqlitePath ? statSync(sqlitePath).size : undefined
    console.error(`${BACKEND}: filled ${ENTRIES} entries and ${LEDGER_ROWS} ledger rows in ${fillS.toFixed(1)} s`)
    const port = await freePort()
    const server = await startServer('serve', CLI, ['serve'], { ...env, PORT: String(port), HOST }, port, '/readyz')
    const driver = drive(server.baseUrl, token)
    // Not measured: the server's first seconds (compilation, caches).
    await new Promise((r) => setTimeout(r, 3000))
    const measureFrom = performance.now()
    await new Promise((r) => setTimeout(r, SIDE_SECONDS * 1000))
    const commands = sqlitePath ? [['backup', join(dir, 'backup.db')], ['check']] : [['check']]
    const runs: ({ command: string } & Awaited<ReturnType<typeof timed>>)[] = []
    for (const args of commands) {
      const run = await timed(args, env, sqlitePath)
      await new Promise((r) => setTimeout(r, SIDE_SECONDS * 1000))
      runs.push({ command: args[0]!, ...run })
    }
    await driver.stop()
    await server.stop()
    const f = (n: number) => n.toFixed(1)
    const results = runs.map((run, i) => ({
      backend: BACKEND,
      command: run.command,
      entries: ENTRIES,
      ledgerRows: LEDGER_ROWS,
      patchRate: RATE,
      databaseBytes: dbBytes,
      seconds: run.seconds,
      peakRssMiB: run.peakRssMiB,
      walPeakMiB: run.walPeakMiB,
      before: summary(driver.samples, i === 0 ? measureFrom : runs[i - 1]!.ended, run.started),
      during: summary(driver.samples, run.started, run.ended),
      after: summary(driver.samples, run.ended, runs[i + 1]?.started ?? Number.POSITIVE_INFINITY),
      said: run.said,
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    }))
    for (const r of results)
      console.log(
        `| ${r.backend} | petstore ${r.command} | ${ENTRIES.toLocaleString('en')} | ${LEDGER_ROWS.toLocaleString('en')} | ` +
          `${r.seconds} s | ${r.peakRssMiB} MiB | ${RATE}/s | ${f(r.before.p99)} / ${f(r.before.max)} | ` +
          `${f(r.during.p99)} / ${f(r.during.max)} (${r.during.patches}, ${r.during.notOk} not 200) | ` +
          `${f(r.after.p99)} / ${f(r.after.max)} | ${sqlitePath ? `${r.walPeakMiB} MiB` : '-'} |`,
      )
    console.log(JSON.stringify(results, (_, v) => (typeof v === 'bigint' ? String(v) : v), 2))
  } finally {
    killAllChildren()
    await database.drop()
    if (!process.env.LARGE_KEEP && !process.env.LARGE_DIR) rmSync(dir, { recursive: true, force: true })
  }
}

await main()
