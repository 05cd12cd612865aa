import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import pg from 'pg'
import { BACKENDS, useSuite, type TestDatabase } from '../support/helpers.js'

/** Breaks the schema under a running server, through a connection of the test's own. */
async function dropInventoryTable(database: TestDatabase) {
  if (database.url.startsWith('sqlite:')) {
    const db = new Database(database.url.slice('sqlite:'.length))
    db.exec('DROP TABLE inventory')
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  await client.query('DROP TABLE inventory CASCADE')
  await client.end()
}

for (const backend of BACKENDS) {
  describe(`unexpected failures (${backend.name})`, () => {
    const suite = useSuite(backend, { seed: [{ petId: 1, quantity: 1, status: 'available' }] })
    before(() => dropInventoryTable(suite.database))

    test('When the database fails in an unexpected way, then 500 with an Error body that reveals nothing internal, logged with the request id', async () => {
      for (const [method, path, body] of [
        ['GET', '/v1/inventory', undefined],
        ['PATCH', '/v1/inventory/1', { quantity: 2 }],
      ] as const) {
        const res = await suite.server.request(method, path, {
          token: suite.token,
          body,
          headers: { 'x-request-id': `fault-${method}` },
        })
        assert.equal(res.status, 500, res.text)
        assert.deepEqual(res.body, { code: 'internal_error', message: 'Internal server error', status: 500 })
        assert.doesNotMatch(res.text, /inventory|table|relation|sqlite|postgres|at /i)
        // The failure is logged with its request id.
        await suite.server.waitForLog((l) => l.reqId === `fault-${method}` && l.msg === 'request failed')
      }
      assert.equal(suite.server.child.exitCode, null, 'the server keeps running')
      assert.equal((await suite.server.request('GET', '/healthz')).status, 200)
    })
  })
}
