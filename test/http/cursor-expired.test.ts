// A cursor before rows that retention removed (issue 25): the feed and the stream answer 410
// cursor_expired, saying how far rows are gone and where the ledger is now, instead of a silent gap;
// a cursor at or after the removed rows reads on as before. The rows are removed here through a second
// storage on the same database (pruneLedger, as the pruning loop will call it).
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage } from '../../src/storage/ports.js'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { getChanges, importInventory } from '../support/ledger-client.js'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of BACKENDS) {
  describe(`cursors before pruned rows (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let other: Storage
    let first: bigint
    before(async () => {
      other = await openStorage({
        databaseUrl: suite.server.env.DATABASE_URL!,
        dbPoolSize: 2,
        dbTimeoutMs: 20_000,
        dbMigrationTimeoutMs: 60_000,
      })
      first = (await other.lastChangeSeq()) + 1n
      await importInventory(
        suite.server,
        [1, 2, 3, 4, 5].map((petId) => ({ petId, quantity: 10 })),
      )
      await pause(5)
      const cut = new Date().toISOString()
      await pause(5)
      for (const quantity of [11, 12]) {
        const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity } })
        assert.equal(res.status, 200)
      }
      assert.equal(await other.pruneLedger(cut, 1000), 5)
    })
    after(async () => {
      await other?.close()
    })

    test('When the feed is read after a cursor whose next rows were removed, then 410 cursor_expired names how far and where the ledger is now; from the removed end on it reads as before', async () => {
      const gone = first + 4n // the last import row: everything up to it was removed
      const last = gone + 2n
      assert.equal(await other.prunedThrough(), gone)
      for (const query of ['after=0', `after=${gone - 1n}`, `after=0&petId=1`, `after=${first}&limit=1`]) {
        const res = await getChanges(suite.server, suite.token, query)
        assert.equal(res.status, 410, query)
        assert.deepEqual(res.body, { code: 'cursor_expired', message: res.body?.message, status: 410 })
        assert.match(String(res.body?.message), new RegExp(`up to ${gone}\\b.*current seq, ${last}$`))
      }
      const res = await getChanges(suite.server, suite.token, `after=${gone}`)
      assert.equal(res.status, 200)
      assert.deepEqual(
        (res.body as { seq: bigint | number; quantity: number }[]).map((c) => [BigInt(c.seq), c.quantity]),
        [
          [gone + 1n, 11],
          [gone + 2n, 12],
        ],
      )
    })

    test('When a stream starts from a cursor whose next rows were removed, by after or by Last-Event-ID, then 410 cursor_expired before any event, and nothing changed', async () => {
      const gone = first + 4n
      for (const [query, headers] of [
        ['?after=0', {}],
        [`?after=${gone - 2n}`, {}],
        ['', { 'last-event-id': String(gone - 1n) }],
        ['?petId=1', { 'last-event-id': '0' }],
      ] as const) {
        const res = await suite.server.request('GET', `/v1/inventory/changes/stream${query}`, { token: suite.token, headers })
        assert.equal(res.status, 410, `${query} ${JSON.stringify(headers)}`)
        assert.equal(res.headers.get('content-type')?.startsWith('application/json'), true)
        assert.deepEqual(res.body, { code: 'cursor_expired', message: res.body?.message, status: 410 })
      }
      assert.deepEqual(
        (await other.listChanges({ after: 0n, limit: 10 })).map((c) => c.seq),
        [gone + 1n, gone + 2n],
      )
    })
  })
}
