// Issue 37: `petstore ledger bump-seq N` (what a restore does to its copy, and what PostgreSQL needs
// after a point-in-time recovery) moves the next seq past a jump; a cursor in the seqs it skipped is
// from a history the database no longer holds, so the feed and the stream answer it 410
// cursor_expired, and every writer (PATCHes, orders, imports) numbers its rows after the jump.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { assertError, getChanges, importInventory, placeOrder, readAllChanges } from '../support/ledger-client.js'

for (const backend of BACKENDS) {
  describe(`ledger bump-seq (${backend.name})`, () => {
    const suite = useAppSuite(backend, { seed: [1, 2, 3].map((petId) => ({ petId, quantity: 10, status: 'available' })) })
    const patch = (petId: number, quantity: number) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })

    test('When the seqs are bumped by N, then a cursor from last + 1 to last + N gets 410 cursor_expired on the feed and the stream, the last row and the end stay valid, and every writer numbers after the jump', async () => {
      assert.equal((await patch(1, 11)).status, 200)
      const last = BigInt((await readAllChanges(suite.server, suite.token)).at(-1)!.seq)
      const bumped = await suite.server.cli(['ledger', 'bump-seq', '1000'])
      assert.equal(bumped.code, 0, bumped.stderr)
      assert.match(bumped.stderr, new RegExp(`next seq is ${last + 1001n} or later .*from ${last + 1n} to ${last + 1000n} now gets 410`))

      for (const cursor of [last + 1n, last + 500n, last + 1000n]) {
        const feed = await getChanges(suite.server, suite.token, `after=${cursor}`)
        assertError(feed, 410, 'cursor_expired', `after=${cursor}`)
        assert.match(feed.body.message, new RegExp(`restored from a backup.*seqs ${last + 1n} to ${last + 1000n}.*current seq, ${last}$`))
        assertError(await getChanges(suite.server, suite.token, `after=${cursor}&petId=1`), 410, 'cursor_expired')
        for (const [query, headers] of [
          [`?after=${cursor}`, {}],
          ['', { 'last-event-id': String(cursor) }],
        ] as const) {
          const stream = await suite.server.request('GET', `/v1/inventory/changes/stream${query}`, { token: suite.token, headers })
          assertError(stream, 410, 'cursor_expired', `stream ${query} ${JSON.stringify(headers)}`)
        }
      }
      const atEnd = await getChanges(suite.server, suite.token, `after=${last}`)
      assert.equal(atEnd.status, 200)
      assert.deepEqual(atEnd.body, [])
      // Past the jump: not a seq of any history yet (as before the bump, 400 on the stream).
      const future = await suite.server.request('GET', '/v1/inventory/changes/stream', {
        token: suite.token,
        headers: { 'last-event-id': String(last + 1001n) },
      })
      assertError(future, 400, 'invalid_request')

      // A PATCH, an order and an import, each after the jump and after each other.
      assert.equal((await patch(2, 12)).status, 200)
      assert.equal((await placeOrder(suite.server, suite.token, { petId: 3, quantity: 1 })).status, 201)
      await importInventory(suite.server, [
        { petId: 4, quantity: 4 },
        { petId: 5, quantity: 5 },
      ])
      const rows = await readAllChanges(suite.server, suite.token, { after: Number(last) })
      assert.deepEqual(
        rows.map((r) => [BigInt(r.seq), Number(r.petId), r.quantity]),
        [
          [last + 1001n, 2, 12],
          [last + 1002n, 3, 9],
          [last + 1003n, 4, 4],
          [last + 1004n, 5, 5],
        ],
      )
      // The rows after the jump read on from the last row before it, once each; the jump stays expired.
      assertError(await getChanges(suite.server, suite.token, `after=${last + 1n}`), 410, 'cursor_expired')
    })

    test('When the seqs are bumped twice with no row between, then the jump widens to the larger and its cursors stay expired', async () => {
      const last = BigInt((await readAllChanges(suite.server, suite.token)).at(-1)!.seq)
      assert.equal((await suite.server.cli(['ledger', 'bump-seq', '10'])).code, 0)
      const second = await suite.server.cli(['ledger', 'bump-seq', '5'])
      assert.equal(second.code, 0, second.stderr)
      assert.match(second.stderr, new RegExp(`from ${last + 1n} to ${last + 10n} now gets 410`))
      assertError(await getChanges(suite.server, suite.token, `after=${last + 7n}`), 410, 'cursor_expired')
      assert.equal((await patch(1, 20)).status, 200)
      const rows = await readAllChanges(suite.server, suite.token, { after: Number(last) })
      assert.deepEqual(
        rows.map((r) => BigInt(r.seq)),
        [last + 11n],
      )
    })

    test('When bump-seq is given no N, zero, a negative or a fraction, then exit 2 and nothing changes', async () => {
      for (const args of [[], ['0'], ['-5'], ['1.5'], ['ten'], ['5', 'more']]) {
        const res = await suite.server.cli(['ledger', 'bump-seq', ...args])
        assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`)
      }
    })
  })
}
