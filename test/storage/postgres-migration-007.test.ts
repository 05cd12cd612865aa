// Migration 007 (issue 23) on a PostgreSQL database at the schema before it: the ledger's rows and
// reasons kept with note null, the new reasons allowed, and set_inventory_quantities with reasons and notes beside the old one.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { loadMigrations } from '../../src/storage/migrations.js'
import { migratePostgres } from '../../src/storage/postgres/migrate.js'
import type { Storage } from '../../src/storage/ports.js'
import { postgresDatabase, postgresUnavailable, type TestDatabase } from '../support/databases.js'
import { openOn } from './backends.js'
import { actor, changesAfter } from './fixtures.js'

const all = loadMigrations(new URL('../../src/storage/postgres/migrations/', import.meta.url))
const unavailable = await postgresUnavailable()
// Under CI a missing PostgreSQL fails, as in the contract suites; elsewhere it is skipped with the reason.
const skip = unavailable !== undefined && !process.env.CI ? unavailable : false

describe('PostgreSQL migration 007: reasons and notes', { skip }, () => {
  let database: TestDatabase
  let client: pg.Client
  let storage: Storage | undefined
  before(async () => {
    database = await postgresDatabase()
    client = new pg.Client({ connectionString: database.url })
    await client.connect()
  })
  after(async () => {
    await storage?.close()
    await client?.end()
    await database?.drop()
  })

  test('When a database at the schema before 007 holds ledger rows and is migrated, then rows and reasons are kept, each note null', async () => {
    // The schema as migratePostgres left it before 007: the same table of applied migrations.
    await client.query(`CREATE TABLE schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    for (const m of all.filter((m) => m.version < 7)) {
      await client.query(m.sql)
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name])
    }
    await client.query(`INSERT INTO inventory VALUES (9007199254740993, 3, 'available'), (-9223372036854775808, 5, 'sold')`)
    await client.query(`INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at) VALUES
      (1, 9007199254740993, NULL, 3, 'import', NULL, NULL, NULL, '2026-11-01T00:00:00Z'),
      (2, 9007199254740993, 3, 2, 'order', 7, 1, 'req-1', '2026-11-02T00:00:00Z'),
      (3, 9007199254740993, 2, 3, 'cancellation', 7, 1, 'req-2', '2026-11-03T00:00:00Z'),
      (4, -9223372036854775808, NULL, 5, 'adjustment', NULL, 2, 'req-3', '2026-11-04T00:00:00Z')`)
    await client.query('UPDATE inventory_version SET last_change = 4, last_order = 7')
    const COLUMNS = 'seq::text, pet_id::text, previous_quantity, quantity, reason, order_id::text, key_id, request_id, at'
    const dump = async (columns: string) =>
      (await client.query({ text: `SELECT ${columns} FROM inventory_changes ORDER BY seq`, rowMode: 'array' })).rows
    const rowsBefore = await dump(COLUMNS)

    // 007 and whatever came after it.
    assert.deepEqual(
      await migratePostgres(database.url, { connectTimeoutMs: 5000, timeoutMs: 30_000 }),
      all.filter((m) => m.version >= 7).map((m) => m.name),
    )

    assert.deepEqual(await dump(COLUMNS), rowsBefore)
    assert.deepEqual(await dump('note'), [[null], [null], [null], [null]])
    const functions = await client.query<{ args: string }>(
      "SELECT pg_get_function_identity_arguments(oid) AS args FROM pg_proc WHERE proname = 'set_inventory_quantities'",
    )
    // Earlier releases' functions stay beside the new one, for their instances during a rolling upgrade:
    // 004's, 007's, and 017's (with the rows' trace contexts).
    assert.equal(functions.rows.length, 3, functions.rows.map((f) => f.args).join('\n'))
    assert.ok(
      functions.rows.some((f) => /p_reasons text\[\], p_notes text\[\], p_at timestamp with time zone$/.test(f.args)),
      '007’s signature',
    )
    assert.ok(
      functions.rows.some((f) => /p_notes text\[\], p_trace_contexts text\[\], p_at timestamp with time zone$/.test(f.args)),
      '017’s signature',
    )
    await assert.rejects(
      client.query(`INSERT INTO inventory_changes (seq, pet_id, quantity, reason, at) VALUES (100, 1, 1, 'gift', now())`),
      /inventory_changes_reason_check/,
    )

    // The upgraded database takes a PATCH's reason and note on both paths: the SQL function and the planner.
    storage = await openOn(database)
    assert.deepEqual(
      await storage.writeStock({ kind: 'set', petId: 9007199254740993n, quantity: 9, reason: 'count', note: 'shelf', actor: actor() }),
      {
        petId: 9007199254740993n,
        quantity: 9,
        status: 'available',
      },
    )
    await storage.writeStock({
      kind: 'set',
      petId: 9007199254740993n,
      quantity: 8,
      reason: 'arrival',
      note: null,
      actor: actor(),
      precondition: () => true,
    })
    const added = await changesAfter(storage, 4n)
    assert.deepEqual(
      added.map((c) => [c.seq, c.previousQuantity, c.quantity, c.reason, c.note]),
      [
        [5n, 3, 9, 'count', 'shelf'],
        [6n, 9, 8, 'arrival', null],
      ],
    )
    const old = await storage.listChanges({ after: 0n, through: 4n, limit: 10 })
    assert.deepEqual(
      old.map((c) => [c.reason, c.note]),
      [
        ['import', null],
        ['order', null],
        ['cancellation', null],
        ['adjustment', null],
      ],
    )
  })
})
