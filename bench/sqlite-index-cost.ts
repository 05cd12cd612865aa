// Where SQLite's writes go at 10,000,000 ledger rows (issue 25): the batch the service commits for
// a PATCH (read the entry, update it, append its ledger row), on a bare schema of the same shape,
// timed with better-sqlite3 alone (no HTTP, no service), at each ledger size, without an index by
// pet, with migration 009's (on pet_id) and with migration 012's (by span of seqs, then pet_id). Run: `npm run build && node dist/bench/sqlite-index-cost.js [sizes]`.
// It prints a table; nothing is written to RESULTS.md (its figures are quoted there by hand).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'

const PETS = 10_000
const BATCH = 36 // the service's mean group-commit batch under the bench's 64 connections
const WARMUP_BATCHES = 200
const BATCHES = 1_500
const FILL_CHUNK = 500_000

/** The index by pet each run has: none, migration 009's, or migration 012's (the service's). */
const INDEXES = {
  none: '',
  pet_id: 'CREATE INDEX changes_pet ON changes (pet_id);',
  'span, pet_id': 'CREATE INDEX changes_pet ON changes (seq >> 17, pet_id);',
} as const
type IndexKind = keyof typeof INDEXES

interface Result {
  size: number
  index: IndexKind
  wallUs: number
  cpuUs: number
  sysUs: number
}

function measure(dir: string, size: number, index: IndexKind): Result {
  const file = join(dir, `ledger-${size}-${Object.keys(INDEXES).indexOf(index)}.db`)
  const fill = new Database(file)
  fill.pragma('journal_mode = WAL')
  fill.pragma('cache_size = -262144')
  fill.exec(`CREATE TABLE entries (pet_id INTEGER PRIMARY KEY, quantity INTEGER NOT NULL, updated_at TEXT NOT NULL) STRICT;
    CREATE TABLE changes (seq INTEGER PRIMARY KEY, pet_id INTEGER NOT NULL, previous_quantity INTEGER,
      quantity INTEGER NOT NULL, reason TEXT NOT NULL, order_id INTEGER, key_id INTEGER, request_id TEXT, at TEXT NOT NULL) STRICT;
    ${INDEXES[index]}`)
  fill
    .prepare(
      `INSERT INTO entries WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ${PETS}) SELECT n, 5, '2026-01-01' FROM i`,
    )
    .run()
  // Row n is pet n mod 10,000, as bench/ledger-size.ts fills it: each pet's rows spread through the ledger.
  const insert = fill.prepare(
    `INSERT INTO changes WITH RECURSIVE i(n) AS (SELECT @from UNION ALL SELECT n + 1 FROM i WHERE n + 1 < @to)
     SELECT n + 1, 1 + (n % ${PETS}), 3, 4, 'adjustment', NULL, 1, 'req-0123456789', '2026-01-01T00:00:00.000Z' FROM i`,
  )
  for (let from = 0; from < size; from += FILL_CHUNK) {
    fill.transaction(() => insert.run({ from: BigInt(from), to: BigInt(Math.min(size, from + FILL_CHUNK)) }))()
  }
  fill.pragma('wal_checkpoint(TRUNCATE)')
  fill.close()

  // The service's connection settings (src/storage/sqlite/connection.ts).
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  const read = db.prepare('SELECT quantity FROM entries WHERE pet_id = ?').pluck()
  const update = db.prepare('UPDATE entries SET quantity = ?, updated_at = ? WHERE pet_id = ?')
  const append = db.prepare(
    `INSERT INTO changes (pet_id, previous_quantity, quantity, reason, key_id, request_id, at) VALUES (?, ?, ?, 'adjustment', 1, 'req-0123456789', ?)`,
  )
  let pet = 0
  // The patch scenario's pets: rotating over the 10,000.
  const batch = db.transaction(() => {
    for (let i = 0; i < BATCH; i++) {
      pet = (pet % PETS) + 1
      const quantity = Number(read.get(pet))
      update.run(quantity + 1, '2026-11-26T00:00:00.000Z', pet)
      append.run(pet, quantity, quantity + 1, '2026-11-26T00:00:00.000Z')
    }
  })
  for (let i = 0; i < WARMUP_BATCHES; i++) batch()
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let i = 0; i < BATCHES; i++) batch()
  const wallMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  db.close()
  rmSync(file, { force: true })
  rmSync(`${file}-wal`, { force: true })
  rmSync(`${file}-shm`, { force: true })
  const writes = BATCHES * BATCH
  return {
    size,
    index,
    wallUs: (wallMs * 1000) / writes,
    cpuUs: (used.user + used.system) / writes,
    sysUs: used.system / writes,
  }
}

const sizes = (process.argv[2] ?? '10000,1000000,10000000').split(',').map(Number)
const dir = mkdtempSync(join(tmpdir(), 'petstore-index-cost-'))
try {
  console.log('| ledger rows | index by pet | µs a write (wall) | CPU µs a write (of it system) |')
  console.log('|---|---|---|---|')
  for (const size of sizes) {
    for (const index of Object.keys(INDEXES) as IndexKind[]) {
      const r = measure(dir, size, index)
      console.log(`| ${size.toLocaleString('en-US')} | ${index} | ${r.wallUs.toFixed(1)} | ${r.cpuUs.toFixed(1)} (${r.sysUs.toFixed(1)}) |`)
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
