// Issue 23: a PATCH's reason and note, recorded on its ledger row and shown by the feed; what is refused.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import {
  assertError,
  changesSince,
  getChanges,
  importInventory,
  keyIdOf,
  lastSeq,
  quantityOf,
  type InventoryChange,
} from '../support/ledger-client.js'

const SET_REASONS = ['adjustment', 'arrival', 'return', 'count', 'damage', 'loss'] as const
/** 500 code points, 1000 UTF-16 units: ajv's maxLength counts code points, as the contract says. */
const EMOJI_500 = '🐕'.repeat(500)

for (const backend of BACKENDS) {
  describe(`reasons and notes of PATCHes (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let keyId: number
    before(async () => {
      keyId = await keyIdOf(suite.server, 'suite')
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 20 },
        { petId: 3, quantity: 30 },
      ])
    })
    const patch = (petId: number, body: unknown, headers: Record<string, string> = {}) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body, headers })
    /** PATCHes pet 1 and returns the one ledger row it added. */
    const patchedRow = async (body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<InventoryChange> => {
      const after = await lastSeq(suite.server, suite.token)
      const res = await patch(1, body, headers)
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(res.body, { petId: 1n, quantity: body.quantity, status: 'available' })
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 1, JSON.stringify(rows.map((r) => r.seq)))
      return rows[0]!
    }

    for (const reason of SET_REASONS) {
      test(`When a PATCH gives reason ${reason} and a note, then its row records both, with the key and request id`, async () => {
        const row = await patchedRow({ quantity: 11, reason, note: `${reason} of the day` }, { 'x-request-id': `why-${reason}` })
        assert.deepEqual(
          { ...row, seq: 0, at: '' },
          {
            seq: 0,
            petId: 1n,
            previousQuantity: row.previousQuantity,
            quantity: 11,
            reason,
            note: `${reason} of the day`,
            orderId: null,
            batchId: null,
            keyId,
            requestId: `why-${reason}`,
            at: '',
          },
        )
      })
    }

    test('When a PATCH gives neither, then the row says adjustment and note null, as before', async () => {
      const row = await patchedRow({ quantity: 12 })
      assert.equal(row.reason, 'adjustment')
      assert.equal(row.note, null)
    })

    test('When a PATCH gives a reason without a note, or a note without a reason, then the other is its default', async () => {
      const counted = await patchedRow({ quantity: 13, reason: 'count' })
      assert.deepEqual([counted.reason, counted.note], ['count', null])
      const noted = await patchedRow({ quantity: 14, note: 'just a note' })
      assert.deepEqual([noted.reason, noted.note], ['adjustment', 'just a note'])
    })

    const exactNotes: [string, string][] = [
      ['unicode of every width', 'Ünïcödé ✓ 日本語 עברית 🐕‍🦺 e\u0301 \u2028\u2029 end'],
      ['JSON specials and control characters', '"quoted" \\ back\\slash \t tab \r\n lines \u0001\u001f\u007f'],
      ['500 ASCII characters', 'n'.repeat(500)],
      ['500 emoji (1000 UTF-16 units)', EMOJI_500],
      ['500 code points mixing both', `${'🐕'.repeat(250)}${'x'.repeat(250)}`],
      ['an empty string', ''],
      ['spaces kept as given', '  padded  '],
    ]
    for (const [what, note] of exactNotes) {
      test(`When the note is ${what}, then the row records it exactly`, async () => {
        const row = await patchedRow({ quantity: 15, reason: 'arrival', note })
        assert.equal(row.note, note)
        assert.equal(row.reason, 'arrival')
      })
    }

    test('When a PATCH carries If-Match, then its row records the reason and note too (the planned path)', async () => {
      const current = await suite.server.request('GET', '/v1/inventory/1', { token: suite.token })
      const row = await patchedRow({ quantity: 16, reason: 'return', note: 'with If-Match' }, { 'if-match': current.headers.get('etag')! })
      assert.deepEqual([row.reason, row.note, row.quantity], ['return', 'with If-Match', 16])
    })

    test('When PATCHes with different reasons and notes arrive at once, then each row has its own', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const writes = Array.from({ length: 24 }, (_, i) => ({
        petId: 1 + (i % 3),
        body: {
          quantity: 100 + i,
          ...(i % 5 === 0 ? {} : { reason: SET_REASONS[i % SET_REASONS.length] }),
          ...(i % 3 === 0 ? {} : { note: `w${i}` }),
        },
        requestId: `batch-${i}`,
      }))
      const answers = await Promise.all(writes.map((w) => patch(w.petId, w.body, { 'x-request-id': w.requestId })))
      for (const res of answers) assert.equal(res.status, 200, res.text)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, writes.length)
      const byRequest = new Map(rows.map((r) => [r.requestId, r]))
      for (const w of writes) {
        const row = byRequest.get(w.requestId)!
        assert.deepEqual(
          [row.petId, row.quantity, row.reason, row.note],
          [BigInt(w.petId), w.body.quantity, w.body.reason ?? 'adjustment', w.body.note ?? null],
          w.requestId,
        )
      }
    })

    test('When the feed is read, then every row carries note, null or text, beside its reason', async () => {
      const res = await getChanges(suite.server, suite.token, 'after=0&limit=1000&petId=1')
      assert.equal(res.status, 200, res.text)
      const rows = res.body as InventoryChange[]
      assert.equal(rows[0]!.reason, 'import')
      assert.equal(rows[0]!.note, null)
      assert.ok(rows.some((r) => r.note === EMOJI_500))
      assert.equal((res.text.match(/"note":/g) ?? []).length, rows.length, 'note is always present')
      assert.ok(res.text.includes(`"note":"${EMOJI_500}"`), 'written as UTF-8, not escaped')
    })

    const refused: [string, unknown][] = [
      ['an unknown reason', { quantity: 1, reason: 'gift' }],
      ['reason order, the store’s own', { quantity: 1, reason: 'order' }],
      ['reason cancellation, the store’s own', { quantity: 1, reason: 'cancellation' }],
      ['reason import, the operator’s', { quantity: 1, reason: 'import' }],
      ['a reason in capitals', { quantity: 1, reason: 'Arrival' }],
      ['a reason that is not a string', { quantity: 1, reason: 1 }],
      ['a null reason', { quantity: 1, reason: null }],
      ['a note of 501 characters', { quantity: 1, note: 'n'.repeat(501) }],
      ['a note of 501 emoji', { quantity: 1, note: `${EMOJI_500}🐕` }],
      ['a note of 500 emoji and one letter', { quantity: 1, reason: 'count', note: `${EMOJI_500}x` }],
      ['a null note', { quantity: 1, note: null }],
      ['a note that is not a string', { quantity: 1, note: 5 }],
      ['a note holding NUL', { quantity: 1, note: 'a\u0000b' }],
      ['a note holding an unpaired surrogate', { quantity: 1, note: 'a\ud83db' }],
      ['a note ending in an unpaired surrogate', { quantity: 1, note: '\udc15' }],
      ['an unknown field beside them', { quantity: 1, reason: 'count', note: 'n', why: 'x' }],
      ['a valid reason and note without a quantity', { reason: 'count', note: 'n' }],
    ]
    for (const [what, body] of refused) {
      test(`When a PATCH gives ${what}, then 400 and neither the entry nor the ledger changes`, async () => {
        const before = await lastSeq(suite.server, suite.token)
        const quantity = await quantityOf(suite.server, suite.token, 2)
        const res = await patch(2, body)
        assertError(res, 400, 'invalid_request', what)
        assert.equal(await quantityOf(suite.server, suite.token, 2), quantity)
        assert.equal(await lastSeq(suite.server, suite.token), before)
        assert.deepEqual(await changesSince(suite.server, suite.token, before), [])
      })
    }

    test('When the reason is refused, then the message names the reasons a PATCH may give', async () => {
      for (const reason of ['order', 'gift']) {
        const res = await patch(2, { quantity: 1, reason })
        assertError(res, 400, 'invalid_request')
        assert.match(res.body.message, /reason must be one of: adjustment, arrival, return, count, damage, loss$/, res.text)
      }
      const long = await patch(2, { quantity: 1, note: 'n'.repeat(501) })
      assert.match(long.body.message, /note must NOT have more than 500 characters/, long.text)
    })

    test('When the feed is filtered by reason, then only rows of that reason come, oldest first or newest first, and the Link keeps the filter', async () => {
      const all = (await getChanges(suite.server, suite.token, 'after=0&limit=1000')).body as InventoryChange[]
      for (const reason of ['arrival', 'count', 'import'] as const) {
        const expected = all.filter((r) => r.reason === reason).map((r) => r.seq)
        assert.ok(expected.length >= 2, `${reason} rows to page through (${expected.length})`)
        const first = await getChanges(suite.server, suite.token, `after=0&limit=1&reason=${reason}`)
        assert.equal(first.status, 200, first.text)
        assert.deepEqual(
          (first.body as InventoryChange[]).map((r) => r.seq),
          expected.slice(0, 1),
        )
        assert.equal(first.headers.get('link'), `</v1/inventory/changes?after=${expected[0]}&limit=1&reason=${reason}>; rel="next"`)
        const whole = await getChanges(suite.server, suite.token, `after=0&limit=1000&reason=${reason}`)
        assert.deepEqual(
          (whole.body as InventoryChange[]).map((r) => r.seq),
          expected,
        )
        assert.equal(whole.headers.get('link'), null)
        const newest = await getChanges(suite.server, suite.token, `before=9223372036854775807&limit=2&reason=${reason}`)
        assert.deepEqual(
          (newest.body as InventoryChange[]).map((r) => r.seq),
          expected.slice(-2).reverse(),
        )
        const more = expected.length > 2
        assert.equal(
          newest.headers.get('link'),
          more ? `</v1/inventory/changes?before=${expected.at(-2)}&limit=2&reason=${reason}>; rel="next"` : null,
        )
      }
      const onePet = await getChanges(suite.server, suite.token, 'after=0&limit=1000&petId=2&reason=import')
      assert.deepEqual(
        (onePet.body as InventoryChange[]).map((r) => [r.petId, r.reason]),
        [[2n, 'import']],
      )
      const none = await getChanges(suite.server, suite.token, 'after=0&limit=10&reason=cancellation')
      assert.deepEqual([none.status, none.body, none.headers.get('link')], [200, [], null])
    })

    for (const [what, query] of [
      ['an unknown reason', 'reason=gift'],
      ['a reason in capitals', 'reason=Count'],
      ['an empty reason', 'reason='],
      ['two reasons', 'reason=count&reason=arrival'],
    ]) {
      test(`When the feed is asked for ${what}, then 400 naming the reasons`, async () => {
        const res = await getChanges(suite.server, suite.token, `after=0&${query}`)
        assertError(res, 400, 'invalid_request', what)
        assert.match(res.body.message, /reason/, res.text)
      })
    }
  })
}
