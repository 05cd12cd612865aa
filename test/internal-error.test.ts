import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { BACKENDS, createKey, seed, startServer, type TestDatabase, type TestServer } from './helpers.js'

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
    let database: TestDatabase
    let server: TestServer
    let token: string

    before(async () => {
      database = await backend.create()
      server = await startServer(database.url)
      token = await createKey(server, 'faults')
      await seed(server, [{ petId: 1, quantity: 1, status: 'available' }])
      await dropInventoryTable(database)
    })
    after(async () => {
      await server.stop()
      await database.drop()
    })

    test('When the database fails in an unexpected way, then 500 with an Error body that reveals nothing internal, logged with the request id', async () => {
      for (const [method, path, body] of [
        ['GET', '/v1/inventory', undefined],
        ['PATCH', '/v1/inventory/1', { quantity: 2 }],
      ] as const) {
        const res = await server.request(method, path, { token, body, headers: { 'x-request-id': `fault-${method}` } })
        assert.equal(res.status, 500, res.text)
        assert.deepEqual(res.body, { code: 'internal_error', message: 'Internal server error', status: 500 })
        assert.doesNotMatch(res.text, /inventory|table|relation|sqlite|postgres|at /i)
        await new Promise((r) => setTimeout(r, 100))
        const line = server.logs().find((l) => l.reqId === `fault-${method}` && l.msg === 'request failed')
        assert.ok(line, 'the failure is logged with its request id')
      }
      assert.equal(server.child.exitCode, null, 'the server keeps running')
      assert.equal((await server.request('GET', '/healthz')).status, 200)
    })
  })
}
