// One pet's pages of the ledger, on every backend, against the rows themselves: whatever the cursor,
// the bound, the limit, the reason and the direction, listChanges with a pet answers exactly the
// pet's rows in that range, in order, up to the limit. The rows' seqs leap across SQLite's spans of
// the index by pet (16,384 seqs, migration 017) and land on their edges, so a page that has to
// gather rows from several spans, or from none, is asked for too. And the same on a ledger whose oldest
// row is far from seq 0, as retention leaves one: a cursor before it must not walk the empty spans.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import pg from 'pg'
import { CHANGE_REASONS, type ChangeReason } from '../../src/domain.js'
import type { ChangeQuery } from '../../src/storage/ports.js'
import { PET_INDEX_SPAN_BITS } from '../../src/storage/sqlite/ledger.js'
import { BACKENDS, useStorage } from './backends.js'
import { INT64_MAX } from './fixtures.js'

const SPAN = 1n << PET_INDEX_SPAN_BITS
const PETS = [1n, 2n, 3n, 4n, 5n]
const REASONS: ChangeReason[] = ['adjustment', 'count', 'order']

interface Row {
  seq: bigint
  petId: bigint
  reason: ChangeReason
}

/**
 * 600 rows from just after `start`: mostly close together, now and then a leap over one to four spans,
 * and some seqs on a span's edges; pet 5 writes only in the first and the last span, so its pages
 * cross empty spans.
 */
function ledgerRows(start: bigint): Row[] {
  const rows: Row[] = []
  let seq = start
  let state = 7
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    return state
  }
  for (let i = 0; i < 600; i++) {
    const leap = next() % 40 === 0
    const edge = (seq / SPAN + BigInt(1 + (next() % 4))) * SPAN - BigInt(next() % 3)
    seq = leap && edge > seq ? edge : seq + BigInt(1 + (next() % 5))
    const petId = i < 20 || i >= 580 ? 5n : PETS[next() % 4]!
    rows.push({ seq, petId, reason: REASONS[next() % REASONS.length]! })
  }
  return rows
}

/** Writes the rows with their own seqs, straight into the ledger (no stock write makes such leaps). */
async function insertRows(url: string, rows: Row[]) {
  const values = (r: Row) => [r.seq, r.petId, null, 1, r.reason, null, null, null, null, '2026-01-01T00:00:00.000Z']
  const columns = 'seq, pet_id, previous_quantity, quantity, reason, note, order_id, key_id, request_id, at'
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    try {
      const insert = db.prepare(`INSERT INTO inventory_changes (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      db.transaction(() => {
        for (const r of rows) insert.run(...values(r))
      })()
    } finally {
      db.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('BEGIN')
    for (const r of rows) {
      await client.query(
        `INSERT INTO inventory_changes (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        values(r).map((v) => (typeof v === 'bigint' ? String(v) : v)),
      )
    }
    await client.query('COMMIT')
  } finally {
    await client.end()
  }
}

/** What a page must hold: the pet's rows after `after`, through `through`, of the reason, in order, up to `limit`. */
function expected(rows: Row[], q: ChangeQuery): bigint[] {
  const matching = rows.filter(
    (r) =>
      r.petId === q.petId &&
      r.seq > q.after &&
      (q.through === undefined || r.seq <= q.through) &&
      (q.reason === undefined || r.reason === q.reason),
  )
  const ordered = q.newestFirst ? matching.reverse() : matching
  return ordered.slice(0, q.limit).map((r) => r.seq)
}

// From seq 0, and from 2^32 + 5 (32,768 spans that retention emptied, a start off a span's edge).
const LEDGERS = [
  { name: 'from seq 1', start: 0n },
  { name: 'its oldest row past seq 2^32', start: 2n ** 32n + 5n },
]

for (const backend of BACKENDS) {
  for (const ledger of LEDGERS)
    describe(`Storage contract: one pet's pages across the ledger, ${ledger.name} (${backend.name})`, () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      const rows = ledgerRows(ledger.start)
      const first = rows[0]!.seq
      const last = rows.at(-1)!.seq
      // Cursors anywhere: on a row, beside one, on a span's edge, before the first and past the last.
      const cursor = fc.oneof(
        fc.constantFrom(0n, last, last + 1n, INT64_MAX - 1n),
        fc.constantFrom(...rows.map((r) => r.seq)).chain((s) => fc.constantFrom(s - 1n, s, s + 1n)),
        fc.integer({ min: 0, max: Number(last / SPAN) + 1 }).chain((k) => fc.constantFrom(BigInt(k) * SPAN - 1n, BigInt(k) * SPAN)),
      )

      test('When a pet is asked for with any cursor, bound, limit, reason and direction, then the page is its rows in that range, in order, up to the limit', async () => {
        await insertRows(fixture.database.url, rows)
        assert.ok(last - first > 4n * SPAN, `the rows span ${last / SPAN - first / SPAN + 1n} spans`)
        const { storage } = fixture
        await fc.assert(
          fc.asyncProperty(
            fc.record({
              after: cursor,
              through: fc.option(cursor, { nil: undefined }),
              limit: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 700 })),
              petId: fc.constantFrom(...PETS, 6n),
              reason: fc.option(fc.constantFrom(...CHANGE_REASONS), { nil: undefined, freq: 3 }),
              newestFirst: fc.boolean(),
            }),
            async (q) => {
              const page = await storage.listChanges(q)
              assert.deepEqual(
                page.map((c) => c.seq),
                expected(rows, q),
              )
              assert.ok(page.every((c) => c.petId === q.petId))
            },
          ),
          { numRuns: 300 },
        )
        // Pet 5's whole history in one page each way: from the first span to the last, across the empty ones.
        const five = rows.filter((r) => r.petId === 5n).map((r) => r.seq)
        assert.deepEqual(
          (await storage.listChanges({ after: 0n, limit: 1000, petId: 5n })).map((c) => c.seq),
          five,
        )
        assert.deepEqual(
          (await storage.listChanges({ after: 0n, limit: 1000, petId: 5n, newestFirst: true })).map((c) => c.seq),
          [...five].reverse(),
        )
      })
    })
}
