// SQLite's group commit carries small writes that are not stock writes (a webhook's cursor) in the
// next batch's transaction: they share its one fsync, a rider's error fails only its own caller;
// with no batch to join a rider commits alone at once, not counted as an inventory write.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, test } from 'node:test'
import { SqliteConnection } from '../../src/storage/sqlite/connection.js'
import { sqliteStock } from '../../src/storage/sqlite/stock.js'
import { sqliteDatabase, type TestDatabase } from '../support/databases.js'
import { actor, item } from './fixtures.js'

describe('SQLite group commit with riders', () => {
  let database: TestDatabase
  let conn: SqliteConnection
  let batches: number[]
  let stock: ReturnType<typeof sqliteStock>

  beforeEach(() => {
    database = sqliteDatabase()
    conn = new SqliteConnection(new URL(database.url).pathname)
    batches = []
    stock = sqliteStock(conn, { batchCommitted: (_backend, writes) => batches.push(writes), statementRan() {}, stockReplanned() {} })
    conn.db.exec(`INSERT INTO inventory (pet_id, quantity, status) VALUES (1, 1, 'available')`)
    conn.db.exec('CREATE TABLE notes (text TEXT NOT NULL)')
  })
  afterEach(async () => {
    await stock.drain()
    conn.close()
    await database.drop()
  })

  const note = (text: string | null) => () => conn.db.prepare('INSERT INTO notes (text) VALUES (?) RETURNING text').pluck().get(text)
  const notes = () => conn.db.prepare('SELECT text FROM notes ORDER BY rowid').pluck().all()

  test('When riders are submitted while a stock write waits for its batch, then all share one commit, and a rider that fails fails alone', async () => {
    const results = await Promise.allSettled([
      stock.writeStock({ kind: 'set', petId: 1n, quantity: 9, actor: actor() }),
      stock.alongside(note('a')),
      stock.alongside(note(null)), // NOT NULL: this statement fails, the transaction goes on
      stock.alongside(note('b')),
    ])
    assert.deepEqual(batches, [4], 'one commit for the four')
    assert.deepEqual(results[0], { status: 'fulfilled', value: item(1n, 9) })
    assert.deepEqual(results[1], { status: 'fulfilled', value: 'a' })
    assert.equal(results[2].status, 'rejected')
    assert.match(String((results[2] as PromiseRejectedResult).reason), /NOT NULL/)
    assert.deepEqual(results[3], { status: 'fulfilled', value: 'b' })
    assert.deepEqual(notes(), ['a', 'b'])
    assert.equal(conn.db.prepare('SELECT quantity FROM inventory WHERE pet_id = 1').pluck().get(), 9)
  })

  test('When a rider has no batch to join, then it commits alone at once, not counted as an inventory write; its error is its own', async () => {
    const before = conn.ownInventoryWrites
    assert.equal(await stock.alongside(note('c')), 'c')
    await assert.rejects(stock.alongside(note(null)), /NOT NULL/)
    assert.equal(await stock.alongside(note('d')), 'd')
    assert.deepEqual(batches, [], 'no group commit was waited for')
    assert.equal(conn.ownInventoryWrites, before, 'the caches of the inventory stay valid')
    assert.deepEqual(notes(), ['c', 'd'])
    await stock.writeStock({ kind: 'set', petId: 1n, quantity: 3, actor: actor() })
    assert.equal(conn.ownInventoryWrites, before + 1)
  })
})
