import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { openSqliteDatabase } from '../../src/storage/sqlite/sqlite.storage.js'

test('When the service opens its SQLite file, then it is in WAL mode with synchronous=FULL (a 200 means on disk)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-durability-'))
  try {
    const db = openSqliteDatabase(join(dir, 'petstore.db'))
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
    // 2 = FULL: the WAL is fsynced at every commit (better-sqlite3's build default for WAL is NORMAL, 1).
    assert.equal(db.pragma('synchronous', { simple: true }), 2)
    db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
