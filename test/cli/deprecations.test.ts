import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, runCliInProcess, useResources, type TestServer } from '../support/helpers.js'

interface Row {
  keyId: number
  name: string
  calls: number
  firstCall: string
  lastCall: string
}

/** `petstore deprecations --json`, run beside the servers. */
async function deprecations(env: Record<string, string>): Promise<Row[]> {
  const result = await runCliInProcess(['deprecations', '--json'], env)
  assert.equal(result.code, 0, result.stderr)
  return JSON.parse(result.stdout) as Row[]
}

/**
 * Calls the deprecated lookup `times` times through `server` with `token`, and checks each answer: no
 * pet is ever imported here, so a well-formed id is 404 and a malformed one (`01`) 400; both count.
 */
async function lookUp(server: TestServer, token: string, times: number, path = '/v1/pets/1') {
  const expected = path === '/v1/pets/01' ? { status: 400, code: 'invalid_request' } : { status: 404, code: 'not_found' }
  for (let i = 0; i < times; i++) {
    const res = await server.request('GET', path, { token })
    assert.deepEqual({ status: res.status, code: res.body?.code }, expected, res.text)
    assert.ok(res.headers.get('deprecation'), 'the answer carries the deprecation header')
  }
}

const RFC_3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

for (const backend of BACKENDS) {
  describe(`calls of the deprecated pet lookup, counted per key (${backend.name})`, () => {
    const resources = useResources()

    test("When two instances serve calls and shut down, then the CLI shows each key's exact sum, with its first and last call", async () => {
      const database = await resources.database(backend)
      const alice = await createKey(database.url, 'alice')
      const bob = await createKey(database.url, 'bob')
      // A flush interval longer than the test: only the flush at shutdown writes.
      const env = { DEPRECATED_CALLS_FLUSH_MS: '3600000' }
      const [a, b] = await Promise.all([resources.server(database.url, env), resources.server(database.url, env)])
      const started = new Date().toISOString()
      // Found, not found and malformed ids alike are calls; a call without a valid key is not.
      await lookUp(a, alice, 3)
      await lookUp(b, alice, 4, '/v1/pets/01')
      await lookUp(a, bob, 2, '/v1/pets/404')
      await lookUp(b, bob, 1)
      assert.equal((await a.request('GET', '/v1/pets/1')).status, 401)
      assert.deepEqual(await deprecations(a.env), [], 'nothing is written on the request path')

      assert.deepEqual(await Promise.all([a.stop(), b.stop()]), [0, 0])
      const ended = new Date().toISOString()
      const rows = await deprecations(a.env)
      assert.deepEqual(
        rows.map(({ name, calls }) => ({ name, calls })),
        [
          { name: 'alice', calls: 7 },
          { name: 'bob', calls: 3 },
        ],
      )
      for (const row of rows) {
        assert.deepEqual(Object.keys(row), ['keyId', 'name', 'calls', 'firstCall', 'lastCall'])
        assert.match(row.firstCall, RFC_3339_MS)
        assert.match(row.lastCall, RFC_3339_MS)
        assert.ok(started <= row.firstCall && row.firstCall <= row.lastCall && row.lastCall <= ended, JSON.stringify(row))
      }

      const table = await runCliInProcess(['deprecations'], a.env)
      assert.equal(table.code, 0, table.stderr)
      assert.equal(
        table.stdout,
        `${['KEY\tNAME\tCALLS\tFIRST CALL\tLAST CALL', ...rows.map((r) => [r.keyId, r.name, r.calls, r.firstCall, r.lastCall].join('\t'))].join('\n')}\n`,
      )
      const ids = (await runCliInProcess(['keys', 'list'], a.env)).stdout
      for (const row of rows) assert.match(ids, new RegExp(`^${row.keyId}\t${row.name}\t`, 'm'), 'KEY is the id keys list shows')
    })

    test('When the instances flush on a short interval, then successive flushes add up while they run', async () => {
      const database = await resources.database(backend)
      const carol = await createKey(database.url, 'carol')
      const env = { DEPRECATED_CALLS_FLUSH_MS: '100' }
      const [a, b] = await Promise.all([resources.server(database.url, env), resources.server(database.url, env)])
      /** Polls the CLI until carol's count is `calls` (each flush follows within 100 ms). */
      const settle = async (calls: number) => {
        const deadline = Date.now() + 10_000
        for (;;) {
          const rows = await deprecations(a.env)
          if (rows[0]?.calls === calls || Date.now() > deadline) return rows
        }
      }
      await Promise.all([lookUp(a, carol, 5), lookUp(b, carol, 6)])
      const first = await settle(11)
      assert.deepEqual(
        first.map((r) => [r.name, r.calls]),
        [['carol', 11]],
      )
      await Promise.all([lookUp(a, carol, 2), lookUp(b, carol, 3)])
      const second = await settle(16)
      assert.deepEqual(
        second.map((r) => [r.name, r.calls]),
        [['carol', 16]],
      )
      assert.equal(second[0]!.firstCall, first[0]!.firstCall, 'the first call stays the first')
      assert.ok(second[0]!.lastCall > first[0]!.lastCall, 'the last call moves on')
      assert.deepEqual(await Promise.all([a.stop(), b.stop()]), [0, 0])
      assert.equal((await deprecations(a.env))[0]!.calls, 16, 'nothing is counted twice at shutdown')
    })

    test('When no deprecated call was made, then the CLI prints the header only, or []', async () => {
      const database = await resources.database(backend)
      const env = { DATABASE_URL: database.url }
      assert.deepEqual(await deprecations(env), [])
      const table = await runCliInProcess(['deprecations'], env)
      assert.equal(table.stdout, 'KEY\tNAME\tCALLS\tFIRST CALL\tLAST CALL\n')
    })
  })
}
