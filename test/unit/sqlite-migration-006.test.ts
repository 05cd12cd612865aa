import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadMigrations } from '../../src/storage/migrations.js'
import { openSqliteDatabase } from '../../src/storage/sqlite/sqlite.storage.js'
import { migrateSqlite } from '../../src/storage/sqlite/migrate.js'

const all = loadMigrations(new URL('../../src/storage/sqlite/migrations/', import.meta.url))
const before006 = all.filter((m) => m.version < 6)

function withDatabase(body: (db: ReturnType<typeof openSqliteDatabase>) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-migration-'))
  const db = openSqliteDatabase(join(dir, 'petstore.db'))
  try {
    body(db)
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

// Migration 006 (issue 23) rebuilds inventory_changes with the PATCH reasons and a note column.
test('When a database made before migration 006 is migrated, then its ledger rows and reasons are kept, each note null', () => {
  withDatabase((db) => {
    migrateSqlite(db, before006)
    db.exec(`INSERT INTO inventory_changes VALUES (1, 9007199254740993, NULL, 3, 'import', NULL, NULL, NULL, '2026-11-01T00:00:00.000Z');
      INSERT INTO inventory_changes VALUES (2, 9007199254740993, 3, 2, 'order', 7, 1, 'req-1', '2026-11-02T00:00:00.000Z');
      INSERT INTO inventory_changes VALUES (3, 9007199254740993, 2, 3, 'cancellation', 7, 1, 'req-2', '2026-11-03T00:00:00.000Z');
      INSERT INTO inventory_changes VALUES (4, -9223372036854775808, NULL, 5, 'adjustment', NULL, 2, 'req-3', '2026-11-04T00:00:00.000Z');`)
    const dump = (columns: string) => db.prepare(`SELECT ${columns} FROM inventory_changes ORDER BY seq`).raw().safeIntegers().all()
    const COLUMNS = 'seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at'
    const before = dump(COLUMNS)

    assert.deepEqual(
      migrateSqlite(
        db,
        all.filter((m) => m.version <= 6),
      ),
      ['006_change_notes'],
    )

    assert.deepEqual(dump(COLUMNS), before)
    assert.deepEqual(dump('note'), [[null], [null], [null], [null]])
    for (const reason of ['arrival', 'return', 'count', 'adjustment', 'import', 'order', 'cancellation']) {
      db.prepare(`INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, note, at) VALUES (1, 0, 1, ?, 'n', 'x')`).run(
        reason,
      )
    }
    for (const reason of ['gift', 'Arrival', '']) {
      assert.throws(
        () => db.prepare(`INSERT INTO inventory_changes (pet_id, quantity, reason, at) VALUES (1, 1, ?, 'x')`).run(reason),
        /CHECK constraint failed/,
        reason,
      )
    }
    // STRICT kept: a note is text or nothing.
    assert.throws(() => db.exec(`INSERT INTO inventory_changes (pet_id, quantity, reason, note, at) VALUES (1, 1, 'count', x'00', 'x')`))
    // Still no IN list in the CHECK: SQLite would build it as a table on every INSERT (see 004).
    const plan = db
      .prepare("EXPLAIN INSERT INTO inventory_changes VALUES (100, 1, 0, 1, 'count', NULL, NULL, NULL, 'x', 'n')")
      .raw()
      .all() as unknown[][]
    assert.ok(!plan.some((row) => row[1] === 'OpenEphemeral'))
    const indexes = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'inventory_changes' AND sql IS NOT NULL")
      .all()
    assert.deepEqual(indexes, [], 'no index by pet, as before (see 002)')
  })
})

// 005 (the keys' scopes) and 006 were written side by side: the runner applies every migration not
// yet recorded, in number order, so a gap is harmless, and a 005 that arrives after 006 is applied then.
test('When the migrations have a gap, then those present apply, and a missing one that arrives later is applied then', () => {
  withDatabase((db) => {
    // As a release without 005 (the keys' scopes) left it: 006 applied over the gap.
    const withoutFive = all.filter((m) => m.version !== 5)
    assert.ok(all.some((m) => m.version === 5) && withoutFive.some((m) => m.version === 6))
    assert.deepEqual(
      migrateSqlite(db, withoutFive),
      withoutFive.map((m) => m.name),
    )
    assert.deepEqual(migrateSqlite(db, all), ['005_key_scopes'])
    assert.deepEqual(migrateSqlite(db, all), [])
    assert.deepEqual(
      db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(),
      all.map((m) => m.version),
    )
  })
})
