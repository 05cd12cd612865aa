// LEDGER_RETENTION in the running service (issue 25): rows older than the retention are removed in the
// background (every half retention here, at most every 10 s), oldest first, the newest kept; the feed
// then answers 410 cursor_expired to a cursor before them and reads on from after them; rows younger
// than the retention stay. One second of retention, so the test sees it pass.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { getChanges, importInventory } from '../support/ledger-client.js'
import { waitFor } from '../webhooks/receiver.js'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of BACKENDS) {
  describe(`LEDGER_RETENTION (${backend.name})`, () => {
    const suite = useAppSuite(backend, { env: { LEDGER_RETENTION: '1s' } })

    test('When rows pass the retention, then they are removed and a cursor before them gets 410, while younger rows stay readable', async () => {
      await importInventory(
        suite.server,
        [1, 2, 3].map((petId) => ({ petId, quantity: 10 })),
      )
      const first = await getChanges(suite.server, suite.token, 'after=0')
      assert.equal(first.status, 200, first.text)
      const imported = (first.body as { seq: number }[]).map((c) => BigInt(c.seq))
      assert.equal(imported.length, 3)
      // Older than the retention, by the time the next pass runs; then three younger rows.
      await waitFor(async () => (await getChanges(suite.server, suite.token, 'after=0')).status === 410, 10_000, 'the old rows removed')
      const cursor = imported.at(-1)!
      const gone = await getChanges(suite.server, suite.token, 'after=0')
      assert.equal(gone.body.code, 'cursor_expired')
      // The newest row is always kept, so the last import row stays until a younger one comes.
      const kept = await getChanges(suite.server, suite.token, `after=${cursor - 1n}`)
      assert.equal(kept.status, 200, kept.text)
      assert.deepEqual(
        (kept.body as { seq: number }[]).map((c) => BigInt(c.seq)),
        [cursor],
      )
      for (const quantity of [11, 12, 13]) {
        assert.equal((await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity } })).status, 200)
      }
      await pause(200)
      const young = await getChanges(suite.server, suite.token, `after=${cursor}`)
      assert.equal(young.status, 200, young.text)
      assert.deepEqual(
        (young.body as { quantity: number }[]).map((c) => c.quantity),
        [11, 12, 13],
      )
      // Then they too pass the retention and go, all but the newest.
      await waitFor(
        async () => (await getChanges(suite.server, suite.token, `after=${cursor}`)).status === 410,
        10_000,
        'the younger rows removed in turn',
      )
      const last = await getChanges(suite.server, suite.token, `after=${cursor + 2n}`)
      assert.equal(last.status, 200, last.text)
      assert.deepEqual(
        (last.body as { quantity: number }[]).map((c) => c.quantity),
        [13],
      )
    })
  })
}
