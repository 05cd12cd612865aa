// What SQLite's WAL checkpoint costs the commit that crosses its threshold (issue 49): the service's
// connection settings (WAL, synchronous=FULL) and a PATCH batch's writes on a bare schema of the
// ledger's shape (30 PATCHes of one pet a commit: the entry's update and its ledger row, two
// indexes), committed back to back for SECONDS, each commit timed; with SQLite's threshold (1,000
// pages: the commit that crosses it checkpoints, as the service's does) and with checkpoints off
// (the WAL only grows), alternating, ROUNDS each, each on a fresh file. Run: `npm run build && node
// dist/bench/sqlite-checkpoint-cost.js`. It prints a line a run; the figures are quoted in
// bench/README.md by hand.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'

const SECONDS = 10
const ROUNDS = 3
const PER_COMMIT = 30

function run(dir: string, mode: 'checkpoints' | 'none', round: number): string {
  const db = new Database(join(dir, `${mode}-${round}.db`))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma(`wal_autocheckpoint = ${mode === 'checkpoints' ? 1000 : 0}`)
  db.exec(`CREATE TABLE entries (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL) STRICT;
    CREATE TABLE changes (seq INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL, quantity INTEGER NOT NULL, at TEXT NOT NULL, note TEXT) STRICT;
    CREATE INDEX changes_pet ON changes (seq >> 17, pet_id); CREATE INDEX changes_at ON changes (at);
    INSERT INTO entries VALUES (1, 0);`)
  const update = db.prepare('UPDATE entries SET quantity = ? WHERE pet_id = 1')
  const append = db.prepare('INSERT INTO changes (pet_id, quantity, at, note) VALUES (1, ?, ?, ?)')
  const commit = db.transaction((n: number) => {
    for (let i = 0; i < PER_COMMIT; i++) {
      update.run(n + i)
      append.run(n + i, new Date().toISOString(), 'restock from the supplier')
    }
  })
  const ms: number[] = []
  const end = Date.now() + SECONDS * 1000
  for (let n = 0; Date.now() < end; n += PER_COMMIT) {
    const started = process.hrtime.bigint()
    commit(n)
    ms.push(Number(process.hrtime.bigint() - started) / 1e6)
  }
  db.close()
  ms.sort((a, b) => a - b)
  const at = (q: number): string => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(2)
  const over = (limit: number): number => ms.filter((t) => t > limit).length
  return (
    `${mode === 'checkpoints' ? 'checkpoints at 1,000 pages' : 'no checkpoints          '}: ${ms.length} commits; ` +
    `p50 ${at(0.5)} ms, p99 ${at(0.99)}, p99.9 ${at(0.999)}, max ${ms.at(-1)!.toFixed(2)}; over 5 ms ${over(5)}, over 20 ms ${over(20)}`
  )
}

const dir = mkdtempSync(join(tmpdir(), 'petstore-checkpoint-cost-'))
try {
  for (let round = 0; round < ROUNDS; round++) {
    const modes = round % 2 === 0 ? (['checkpoints', 'none'] as const) : (['none', 'checkpoints'] as const)
    for (const mode of modes) console.log(run(dir, mode, round))
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
