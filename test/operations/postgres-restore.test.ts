// Issue 37: docs/operations.md's PostgreSQL recipe, with the server's own tools, as real processes:
// pg_dump -Fc while the service writes, more writes that a consumer follows, the database dropped and
// made again, pg_restore, `petstore ledger bump-seq`, `petstore check`. The consumer's cursor from the
// lost history gets 410 cursor_expired; the next write takes a seq past the jump.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import pg from 'pg'
import { assertInvariants, BACKENDS, createKey, POSTGRES_ADMIN_URL, runCli, seed, useResources } from '../support/helpers.js'
import { assertError, getChanges } from '../support/ledger-client.js'

const run = promisify(execFile)
const postgres = BACKENDS.find((b) => b.name === 'postgres')

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

describe('PostgreSQL restored with pg_restore, then ledger bump-seq (real processes)', { skip: postgres === undefined }, () => {
  const resources = useResources()

  test('When a pg_dump is restored and the seqs bumped, then check passes, a cursor past the dump gets 410, and the next write takes a seq past the jump', async () => {
    const database = await resources.database(postgres!)
    const env = { DATABASE_URL: database.url }
    const token = await createKey(database.url, 'ops')
    await seed(
      database.url,
      [1, 2, 3].map((petId) => ({ petId, quantity: 10, status: 'available' })),
    )
    const server = await resources.server(database.url)
    const patch = async (petId: number, quantity: number) => {
      const res = await server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity } })
      assert.equal(res.status, 200)
    }
    for (const q of [11, 12, 13]) await patch(1, q)
    const dump = join(mkdtempSync(join(tmpdir(), 'petstore-pgdump-')), 'petstore.dump')
    await run('pg_dump', ['-Fc', '-d', database.url, '-f', dump])
    const dumpLast = BigInt((await getChanges(server, token, 'limit=1000')).body.at(-1).seq)
    // Written after the dump, and seen by a consumer: the history the restore loses.
    for (const q of [21, 22]) await patch(2, q)
    const consumerAt = dumpLast + 2n
    assert.equal(BigInt((await getChanges(server, token, `after=${dumpLast}`)).body.at(-1).seq), consumerAt)
    await server.stop()

    const name = new URL(database.url).pathname.slice(1)
    await admin(`DROP DATABASE ${name} WITH (FORCE)`)
    await admin(`CREATE DATABASE ${name}`)
    await run('pg_restore', ['-d', database.url, dump])
    const bumped = await runCli(['ledger', 'bump-seq', '1000000000'], env)
    assert.equal(bumped.code, 0, bumped.stderr)
    const through = dumpLast + 1_000_000_000n
    assert.match(bumped.stderr, new RegExp(`next seq is ${through + 1n} or later .*from ${dumpLast + 1n} to ${through} now gets 410`))
    await assertInvariants(database.url, 'after pg_restore and bump-seq')

    const after = await resources.server(database.url)
    assertError(await getChanges(after, token, `after=${consumerAt}`), 410, 'cursor_expired')
    const res = await after.request('PATCH', '/v1/inventory/2', { token, body: { quantity: 30 } })
    assert.equal(res.status, 200)
    const rows = (await getChanges(after, token, `after=${dumpLast}`)).body
    assert.deepEqual(
      rows.map((r: { seq: bigint; petId: bigint; quantity: number }) => [BigInt(r.seq), r.petId, r.quantity]),
      [[through + 1n, 2n, 30]],
      'the first write after the restore is the only row past the dump, numbered after the jump',
    )
    await assertInvariants(database.url, 'after a write past the jump')
  })
})
