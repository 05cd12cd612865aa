// A PostgreSQL connection that dies while a request holds it must fail that request (503), never end
// the process: pg emits the connection's error on the client, and the pool listens only while the
// client is idle. node:test reports an error thrown outside the test (uncaught) as its failure.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { PostgresConnection } from '../../src/storage/postgres/connection.js'
import { postgresDatabase, postgresUnavailable, type TestDatabase } from '../support/databases.js'

const unavailable = await postgresUnavailable()

describe('a PostgreSQL connection killed while lent', { skip: unavailable !== undefined && !process.env.CI && unavailable }, () => {
  let database: TestDatabase
  let db: PostgresConnection
  before(async () => {
    database = await postgresDatabase()
    db = await PostgresConnection.open(database.url, { poolSize: 2, timeoutMs: 5000, migrationTimeoutMs: 30_000 })
  })
  after(async () => {
    await db?.close()
    await database?.drop()
  })

  /** Ends, from another session, the backend whose statement contains `marker`, once it is in `state`. */
  async function terminate(marker: string, state: 'active' | 'idle') {
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      for (let tries = 0; tries < 100; tries++) {
        const { rows } = await admin.query(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE $1 AND state = $2 AND pid <> pg_backend_pid()`,
          [`%${marker}%`, state],
        )
        if (rows.length > 0) return
        await new Promise((r) => setTimeout(r, 20))
      }
      throw new Error(`no backend ran ${marker}`)
    } finally {
      await admin.end()
    }
  }

  for (const between of [false, true]) {
    test(`When the backend is terminated ${between ? 'between two statements' : 'during a statement'}, then the request fails as unavailable, the process goes on, and the next request is served`, async () => {
      const marker = `lent_${between ? 'between' : 'during'}`
      const request = db.withConnection(Date.now() + 5000, async (run) => {
        if (between) {
          await run(`SELECT '${marker}' AS m, pg_sleep(0.3)`)
          // The connection is killed while this request still holds it, with no statement in flight.
          await new Promise((r) => setTimeout(r, 600))
          return run('SELECT 1 AS one')
        }
        return run(`SELECT '${marker}' AS m, pg_sleep(3)`)
      })
      // Listened to from the start: the request may fail while the backend is being ended.
      const refused = assert.rejects(request, { code: 'service_unavailable' })
      await terminate(marker, between ? 'idle' : 'active')
      await refused
      assert.deepEqual(await db.query('SELECT 2 AS two'), [{ two: 2 }])
    })
  }
})
