// `petstore backup` of a large SQLite database while a `petstore serve` process takes PATCHes at a
// fixed rate: how long the backup takes, the backup process's peak RSS, and the PATCHes' latency
// before, during and after it (the bound: no PATCH waits more than 50 ms for the backup).
// A one-off, not part of `npm run bench` (the database alone takes about a minute to build):
//
//   npm run build && node dist/bench/backup.js
//
// BACKUP_ENTRIES (1000000), BACKUP_LEDGER_ROWS (10000000), BACKUP_PATCH_RATE (PATCHes a second,
// 200), BACKUP_DIR (a temporary folder; the database and its copy need about 2.5 GB), BACKUP_KEEP=1
// keeps the folder. Prints one Markdown table row and the figures as JSON.
import Database from 'better-sqlite3'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { HOST, freePort, killAllChildren, startServer } from './procs.js'

const CLI = new URL('../src/cli.js', import.meta.url).pathname
const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback)
const ENTRIES = num('BACKUP_ENTRIES', 1_000_000)
const LEDGER_ROWS = num('BACKUP_LEDGER_ROWS', 10_000_000)
const RATE = num('BACKUP_PATCH_RATE', 200)
const CHUNK = 1_000_000
/** Seconds of PATCHes before the backup starts and after it ends. */
const SIDE_SECONDS = 5

function node(args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [CLI, ...args], { env, maxBuffer: 1 << 24 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve({ stdout, stderr }),
    ),
  )
}

/** The inventory and the ledger by SQL of their own, on the migrated file, before any server runs. */
function fill(path: string) {
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

async function main() {
  const dir = process.env.BACKUP_DIR ?? mkdtempSync(join(tmpdir(), 'petstore-backup-bench-'))
  const path = join(dir, 'petstore.db')
  const copy = join(dir, 'backup.db')
  const env = { ...process.env, DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' }
  try {
    let t = performance.now()
    await node(['migrate'], env)
    const token = (await node(['keys', 'create', '--name', 'bench'], env)).stdout.trim()
    fill(path)
    const fillS = (performance.now() - t) / 1000
    const dbBytes = statSync(path).size
    console.error(`filled ${ENTRIES} entries and ${LEDGER_ROWS} ledger rows in ${fillS.toFixed(1)} s: ${dbBytes} bytes`)
    const port = await freePort()
    const server = await startServer('serve', CLI, ['serve'], { ...env, PORT: String(port), HOST }, port, '/readyz')
    const driver = drive(server.baseUrl, token)
    // Not measured: the server's first seconds (compilation, caches).
    await new Promise((r) => setTimeout(r, 3000))
    const measureFrom = performance.now()
    await new Promise((r) => setTimeout(r, SIDE_SECONDS * 1000))
    // Peak RSS by GNU time (%M, KiB): the backup as operators run it, a process of its own.
    const backupStart = performance.now()
    let walPeak = 0
    const walWatch = setInterval(() => {
      try {
        walPeak = Math.max(walPeak, statSync(`${path}-wal`).size)
      } catch {}
    }, 100)
    const backup = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn('/usr/bin/time', ['-f', 'peak-rss-kib %M', process.execPath, CLI, 'backup', copy], {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (d) => (stderr += d))
      child.on('close', (code) => resolve({ code, stderr }))
    })
    const backupEnd = performance.now()
    clearInterval(walWatch)
    await new Promise((r) => setTimeout(r, SIDE_SECONDS * 1000))
    await driver.stop()
    await server.stop()
    t = performance.now()
    if (backup.code !== 0) throw new Error(`backup exited ${backup.code}: ${backup.stderr}`)
    const peakKiB = Number(/peak-rss-kib (\d+)/.exec(backup.stderr)?.[1])
    const result = {
      entries: ENTRIES,
      ledgerRows: LEDGER_ROWS,
      patchRate: RATE,
      databaseBytes: dbBytes,
      backupBytes: statSync(copy).size,
      backupSeconds: Number(((backupEnd - backupStart) / 1000).toFixed(1)),
      backupPeakRssMiB: Math.round(peakKiB / 1024),
      walPeakMiB: Number((walPeak / 2 ** 20).toFixed(1)),
      before: summary(driver.samples, measureFrom, backupStart),
      during: summary(driver.samples, backupStart, backupEnd),
      after: summary(driver.samples, backupEnd, Number.POSITIVE_INFINITY),
      said: backup.stderr.split('\n').find((l) => l.startsWith('Backed up')),
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    }
    const f = (n: number) => n.toFixed(1)
    console.log(
      `| ${ENTRIES.toLocaleString('en')} | ${LEDGER_ROWS.toLocaleString('en')} | ${(dbBytes / 2 ** 30).toFixed(2)} GiB | ` +
        `${result.backupSeconds} s | ${result.backupPeakRssMiB} MiB | ${RATE}/s | ${f(result.before.p99)} / ${f(result.before.max)} | ` +
        `${f(result.during.p99)} / ${f(result.during.max)} (${result.during.patches}, ${result.during.notOk} not 200) | ` +
        `${f(result.after.p99)} / ${f(result.after.max)} | ${result.walPeakMiB} MiB |`,
    )
    console.log(JSON.stringify(result, (_, v) => (typeof v === 'bigint' ? String(v) : v), 2))
  } finally {
    killAllChildren()
    if (!process.env.BACKUP_KEEP && !process.env.BACKUP_DIR) rmSync(dir, { recursive: true, force: true })
  }
}

await main()
