// A webhook subscription whose cursor falls before rows that retention removed (issue 25): sending on
// would skip those rows silently, so the subscription is disabled, saying cursor_expired; enabling it
// resumes from the ledger's end, and only rows written after that are sent. The rows are removed here
// through a second storage on the same database (pruneLedger, as the pruning loop will call it).
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { openStorage } from '../../src/storage/open-storage.js'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { getChanges } from '../support/ledger-client.js'
import { Receiver, waitFor } from './receiver.js'

const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  // Retried every 300 ms for 3 s: the rows are removed while it keeps failing.
  WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms',
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_LEASE_MS: '1000',
}
const WAIT_MS = 10_000

for (const backend of BACKENDS) {
  describe(`webhooks and retention (${backend.name})`, () => {
    const suite = useAppSuite(backend, { env: ENV, seed: [{ petId: 1, quantity: 10, status: 'available' }] })
    const receivers: Receiver[] = []
    after(async () => {
      for (const r of receivers) await r.close()
    })
    const request = (method: string, path: string, body?: unknown) =>
      suite.server.request(method, path, { token: suite.token, ...(body === undefined ? {} : { body }) })
    const end = async () =>
      BigInt(((await getChanges(suite.server, suite.token, 'after=0&limit=1000')).body as { seq: number }[]).at(-1)!.seq)

    test('When rows after a failing subscription’s cursor are removed, then it is disabled as cursor_expired, and enabling it resumes from the ledger’s end', async () => {
      const r = await Receiver.start()
      receivers.push(r)
      r.answer = () => 500
      // A new subscription starts at the ledger's end.
      const cursor = await end()
      const created = await request('POST', '/v1/webhooks', { url: r.url })
      assert.equal(created.status, 201, created.text)
      const id = created.body.id as number
      for (const quantity of [11, 12, 13]) assert.equal((await request('PATCH', '/v1/inventory/1', { quantity })).status, 200)
      await waitFor(() => r.requests.length >= 1, WAIT_MS, 'a first attempt')

      let last: bigint
      const other = await openStorage({
        databaseUrl: suite.server.env.DATABASE_URL!,
        dbPoolSize: 2,
        dbTimeoutMs: 20_000,
        dbMigrationTimeoutMs: 60_000,
      })
      try {
        assert.ok((await other.pruneLedger(new Date(Date.now() + 60_000).toISOString(), 100_000)) > 0)
        assert.ok((await other.prunedThrough()) > cursor)
        last = await other.lastChangeSeq()
      } finally {
        await other.close()
      }
      const disabled = await waitFor(
        async () => {
          const s = (await request('GET', `/v1/webhooks/${id}`)).body
          return s.state === 'disabled' && s
        },
        WAIT_MS,
        'disabled',
      )
      assert.match(disabled.disabledReason, new RegExp(`^cursor_expired: the ledger no longer holds the changes after ${cursor} `))
      assert.equal(BigInt(disabled.deliveredThrough), cursor, 'the cursor stays while disabled')
      const attempts = r.requests.length
      assert.ok(
        r.seqs().every((seq) => BigInt(seq) === cursor + 1n),
        'only the first row was ever tried',
      )

      r.answer = () => 204
      const enabled = await request('POST', `/v1/webhooks/${id}/enable`)
      assert.equal(enabled.status, 200, enabled.text)
      assert.deepEqual([enabled.body.state, BigInt(enabled.body.deliveredThrough)], ['active', last])
      assert.equal((await request('PATCH', '/v1/inventory/1', { quantity: 14 })).status, 200)
      await waitFor(() => r.requests.length > attempts, WAIT_MS, 'a message after enabling')
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.deepEqual(
        r
          .seqs()
          .slice(attempts)
          .map((seq) => BigInt(seq)),
        [last + 1n],
        'only the row written after enabling',
      )
    })
  })
}
