import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadMigrations } from '../../src/storage/migrations.js'
import { openSqliteDatabase } from '../../src/storage/sqlite/sqlite.storage.js'
import { migrateSqlite } from '../../src/storage/sqlite/migrate.js'

const all = loadMigrations(new URL('../../src/storage/sqlite/migrations/', import.meta.url))
const TABLES = ['inventory_changes', 'orders', 'idempotency_keys']

// Migration 004 rebuilds three tables to drop IN-list CHECKs (each INSERT built a temporary table).
test('When a database made before migration 004 is migrated, then its rows and indexes are kept and the same values are refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-migration-'))
  try {
    const db = openSqliteDatabase(join(dir, 'petstore.db'))
    migrateSqlite(
      db,
      all.filter((m) => m.version < 4),
    )
    db.exec(`INSERT INTO inventory_changes VALUES (1, 9007199254740993, NULL, 3, 'import', NULL, NULL, NULL, '2026-11-01T00:00:00.000Z');
      INSERT INTO inventory_changes VALUES (2, 9007199254740993, 3, 2, 'order', 7, 1, 'req-1', '2026-11-02T00:00:00.000Z');
      INSERT INTO orders VALUES (7, 9007199254740993, 1, 'approved', '2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z');
      INSERT INTO idempotency_keys VALUES (1, 'k', 'f', 'placed', 7, NULL, '2026-11-02T00:00:00.000Z');`)
    const dump = () => TABLES.map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY 1`).raw().safeIntegers().all())
    const before = dump()

    assert.deepEqual(
      migrateSqlite(
        db,
        all.filter((m) => m.version <= 4),
      ),
      ['004_checks_without_in_lists'],
    )

    assert.deepEqual(dump(), before)
    const indexes = db
      .prepare(
        `SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${TABLES.map(() => '?').join(', ')}) ORDER BY name`,
      )
      .pluck()
      .all(...TABLES)
    assert.deepEqual(indexes, ['idempotency_keys_created', 'orders_status'])
    for (const [sql, value] of [
      ["INSERT INTO inventory_changes VALUES (3, 1, 0, 1, 'gift', NULL, NULL, NULL, 'x')", 'reason'],
      ["INSERT INTO orders VALUES (8, 1, 1, 'shipped', 'x', 'x')", 'status'],
      ["INSERT INTO idempotency_keys VALUES (1, 'k2', 'f', 'lost', NULL, NULL, 'x')", 'outcome'],
    ] as const) {
      assert.throws(() => db.exec(sql), /CHECK constraint failed/, value)
    }
    for (const [table, value] of [
      ['inventory_changes', "(3, 1, 0, 1, 'cancellation', 7, NULL, NULL, 'x')"],
      ['orders', "(8, 1, 1, 'delivered', 'x', 'x')"],
      ['idempotency_keys', "(1, 'k2', 'f', 'insufficient_stock', NULL, 0, 'x')"],
    ]) {
      db.exec(`INSERT INTO ${table} VALUES ${value}`)
    }
    // No IN list left in a CHECK of these tables: SQLite would build it as a table on every INSERT.
    const plan = db
      .prepare("EXPLAIN INSERT INTO inventory_changes VALUES (4, 1, 0, 1, 'adjustment', NULL, NULL, NULL, 'x')")
      .raw()
      .all() as unknown[][]
    assert.ok(!plan.some((row) => row[1] === 'OpenEphemeral'))
    db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
