import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, type Response } from '../support/helpers.js'
import {
  assertChangeShape,
  assertError,
  assertTimeWithin,
  changesSince,
  getChanges,
  importInventory,
  keyIdOf,
  lastSeq,
  nextLink,
  quantityOf,
  readAllChanges,
  type InventoryChange,
} from '../support/ledger-client.js'

const INT64_MAX = 9223372036854775807n
const ABOVE_DOUBLE = 9007199254740993n

for (const backend of BACKENDS) {
  describe(`ledger rows of PATCH and import (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let keyId: number
    before(async () => {
      keyId = await keyIdOf(suite.server, 'suite')
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 20, status: 'pending' },
        { petId: ABOVE_DOUBLE, quantity: 7 },
      ])
    })
    const patch = (petId: bigint | number | string, body: unknown, headers: Record<string, string> = {}) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body, headers })

    test('When a PATCH applies, then exactly one row records it: adjustment, both quantities, the key, the request id, now', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const started = Date.now()
      const res = await patch(1, { quantity: 4 })
      const ended = Date.now()
      assert.equal(res.status, 200, res.text)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 1, JSON.stringify(rows.map((r) => r.seq)))
      const row = rows[0]!
      assertTimeWithin(row.at, started, ended, 'at')
      assert.ok(row.seq > after)
      assert.deepEqual(row, {
        seq: row.seq,
        petId: 1n,
        previousQuantity: 10,
        quantity: 4,
        reason: 'adjustment',
        note: null,
        orderId: null,
        batchId: null,
        keyId,
        requestId: res.headers.get('x-request-id'),
        at: row.at,
      })
      assert.match(row.requestId!, /^[0-9a-f-]{36}$/, 'a generated request id')
      assert.equal(await quantityOf(suite.server, suite.token, 1), 4)
    })

    test('When the client sends its own plain X-Request-Id, then the row keeps it', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const res = await patch(2, { quantity: 21 }, { 'x-request-id': 'ledger-trace-42' })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('x-request-id'), 'ledger-trace-42')
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.requestId, 'ledger-trace-42')
      assert.equal(rows[0]!.previousQuantity, 20)
      assert.equal(rows[0]!.quantity, 21)
    })

    test('When the client sends an X-Request-Id that is not plain, then the row keeps the generated id the response carries', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const res = await patch(2, { quantity: 20 }, { 'x-request-id': 'has spaces; and "quotes"' })
      assert.equal(res.status, 200)
      const generated = res.headers.get('x-request-id')
      assert.match(generated ?? '', /^[0-9a-f-]{36}$/)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.deepEqual(
        rows.map((r) => [r.requestId, r.previousQuantity, r.quantity]),
        [[generated, 21, 20]],
      )
      assert.equal((await patch(2, { quantity: 21 })).status, 200)
    })

    test('When a PATCH leaves the quantity as it was, then it still writes one row with previousQuantity equal to quantity', async () => {
      const current = (await quantityOf(suite.server, suite.token, ABOVE_DOUBLE))!
      const after = await lastSeq(suite.server, suite.token)
      const res = await patch(ABOVE_DOUBLE, { quantity: current })
      assert.equal(res.status, 200)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.petId, ABOVE_DOUBLE)
      assert.equal(rows[0]!.previousQuantity, current)
      assert.equal(rows[0]!.quantity, current)
      assert.equal(rows[0]!.reason, 'adjustment')
      const text = (await getChanges(suite.server, suite.token, `after=${after}`)).text
      assert.ok(text.includes(`"petId":${ABOVE_DOUBLE},`), `petId digit for digit: ${text}`)
    })

    test('When a PATCH is refused (404, 400, 412), then no row is written', async () => {
      const after = await lastSeq(suite.server, suite.token)
      assert.equal((await patch(999, { quantity: 1 })).status, 404)
      assert.equal((await patch(1, { quantity: -1 })).status, 400)
      assert.equal((await patch(1, { quantity: 1, extra: true })).status, 400)
      assert.equal((await patch('abc', { quantity: 1 })).status, 400)
      assert.equal((await patch(1, { quantity: 1 }, { 'if-match': '"stale"' })).status, 412)
      assert.equal((await patch(999, { quantity: 1 }, { 'if-match': '*' })).status, 404)
      assert.deepEqual(await changesSince(suite.server, suite.token, after), [])
      // A write after them still records from the value the refused ones left alone.
      const res = await patch(1, { quantity: 5 })
      assert.equal(res.status, 200)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.deepEqual(
        rows.map((r) => [r.previousQuantity, r.quantity]),
        [[4, 5]],
      )
    })

    test('When an If-Match PATCH applies, then it writes its row like any other', async () => {
      const tag = (await suite.server.request('GET', '/v1/inventory/2', { token: suite.token })).headers.get('etag')!
      const after = await lastSeq(suite.server, suite.token)
      assert.equal((await patch(2, { quantity: 22 }, { 'if-match': tag })).status, 200)
      const rows = await changesSince(suite.server, suite.token, after)
      assert.deepEqual(
        rows.map((r) => [r.reason, r.previousQuantity, r.quantity]),
        [['adjustment', 21, 22]],
      )
    })

    test('When petstore import inventory runs, then it writes one import row per record, without key or request, null previousQuantity for new entries', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const started = Date.now()
      await importInventory(suite.server, [
        { petId: 1, quantity: 50 },
        { petId: 2, quantity: 22, status: 'sold' },
        { petId: 300, quantity: 3 },
        { petId: INT64_MAX, quantity: 9 },
      ])
      const ended = Date.now()
      const rows = await changesSince(suite.server, suite.token, after)
      assert.equal(rows.length, 4, JSON.stringify(rows.map((r) => String(r.petId))))
      for (const row of rows) {
        assertTimeWithin(row.at, started, ended, `at of pet ${row.petId}`)
        assert.equal(row.reason, 'import')
        assert.equal(row.keyId, null)
        assert.equal(row.requestId, null)
        assert.equal(row.orderId, null)
      }
      const byPet = new Map(rows.map((r) => [r.petId, [r.previousQuantity, r.quantity]]))
      assert.deepEqual(byPet.get(1n), [5, 50])
      assert.deepEqual(byPet.get(2n), [22, 22], 'an unchanged quantity still gets its row')
      assert.deepEqual(byPet.get(300n), [null, 3])
      assert.deepEqual(byPet.get(INT64_MAX), [null, 9])
    })

    test('When the first import created the entries, then their rows have null previousQuantity', async () => {
      const rows = await readAllChanges(suite.server, suite.token, { limit: 3 })
      assert.deepEqual(
        rows
          .slice(0, 3)
          .map((r) => [r.reason, r.previousQuantity, r.quantity, r.keyId, r.requestId])
          .sort((a, b) => Number(a[2]) - Number(b[2])),
        [
          ['import', null, 7, null, null],
          ['import', null, 10, null, null],
          ['import', null, 20, null, null],
        ],
      )
    })

    test('When a refused import runs, then no row is written', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const result = await suite.server.cli(['import', 'inventory', '/nonexistent/inventory.json'])
      assert.notEqual(result.code, 0)
      assert.deepEqual(await changesSince(suite.server, suite.token, after), [])
    })

    test('When the ledger is read without a valid key, then 401', async () => {
      for (const token of [undefined, 'psk_not-a-real-key']) {
        const res = await suite.server.request('GET', '/v1/inventory/changes', token === undefined ? {} : { token })
        assertError(res, 401, 'unauthorized')
      }
    })
  })

  describe(`ledger paging (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let all: InventoryChange[]
    const PETS = 150
    before(async () => {
      // 150 import rows (one per pet), then 7 adjustments: 157 rows, more than the default page.
      await importInventory(
        suite.server,
        Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: i })),
      )
      for (const [petId, quantity] of [
        [1, 100],
        [2, 200],
        [1, 101],
        [INT64_MAX, 0],
        [3, 300],
        [1, 102],
        [2, 201],
      ] as const) {
        const res = await suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })
        assert.equal(res.status, petId === INT64_MAX ? 404 : 200)
      }
      all = await readAllChanges(suite.server, suite.token)
    })
    const get = (query: string) => getChanges(suite.server, suite.token, query)

    test('When the whole ledger is read, then it holds one row per import record and per applied PATCH, in seq order', async () => {
      assert.equal(all.length, PETS + 6)
      assert.deepEqual(
        all.slice(0, PETS).map((r) => r.reason),
        Array(PETS).fill('import'),
      )
      assert.deepEqual(
        all.slice(PETS).map((r) => [r.petId, r.previousQuantity, r.quantity]),
        [
          [1n, 0, 100],
          [2n, 1, 200],
          [1n, 100, 101],
          [3n, 2, 300],
          [1n, 101, 102],
          [2n, 200, 201],
        ],
      )
    })

    test('When no parameters are given, then the first 100 rows come with a Link to the rest', async () => {
      const res = await get('')
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.deepEqual(res.body, all.slice(0, 100))
      assert.equal(res.headers.get('link'), `</v1/inventory/changes?after=${all[99]!.seq}&limit=100>; rel="next"`)
      const rest = await get(`after=${all[99]!.seq}&limit=100`)
      assert.deepEqual(rest.body, all.slice(100))
      assert.equal(rest.headers.get('link'), null, 'no Link on the last page')
    })

    for (const limit of [1, 7, 52, 78, 100, 156, 157, 1000]) {
      test(`When Links are followed with limit=${limit}, then every row is visited exactly once, in order`, async () => {
        const pages: number[] = []
        const seen: InventoryChange[] = []
        let query = `limit=${limit}`
        for (;;) {
          const res = await get(query)
          assert.equal(res.status, 200)
          pages.push(res.body.length)
          seen.push(...res.body)
          const next = nextLink(res, '/v1/inventory/changes')
          if (!next) break
          assert.equal(res.headers.get('link'), `</v1/inventory/changes?after=${seen.at(-1)!.seq}&limit=${limit}>; rel="next"`)
          query = `after=${next.after}&limit=${next.limit}`
        }
        assert.deepEqual(seen, all)
        const full = Math.floor(all.length / limit)
        const expected = [...Array(full).fill(limit), ...(all.length % limit ? [all.length % limit] : [])]
        assert.deepEqual(pages, expected, 'a page that holds exactly the last rows carries no Link')
      })
    }

    test('When after is a seq, then it is exclusive; past the last row, an empty page without Link', async () => {
      const res = await get(`after=${all[10]!.seq}&limit=3`)
      assert.deepEqual(res.body, all.slice(11, 14))
      assert.equal(res.headers.get('link'), `</v1/inventory/changes?after=${all[13]!.seq}&limit=3>; rel="next"`)
      for (const after of [String(all.at(-1)!.seq), String(INT64_MAX)]) {
        const end = await get(`after=${after}`)
        assert.equal(end.status, 200)
        assert.deepEqual(end.body, [])
        assert.equal(end.headers.get('link'), null)
      }
      assert.deepEqual((await get('after=0&limit=2')).body, all.slice(0, 2))
      assert.deepEqual((await get(`after=${all.at(-2)!.seq}&limit=1`)).body, all.slice(-1))
      assert.equal((await get(`after=${all.at(-2)!.seq}&limit=1`)).headers.get('link'), null)
    })

    test("When filtered by petId, then only that pet's rows come back, and the Link carries the filter", async () => {
      const ofPet1 = all.filter((r) => r.petId === 1n)
      assert.equal(ofPet1.length, 4)
      const first = await get('petId=1&limit=2')
      assert.deepEqual(first.body, ofPet1.slice(0, 2))
      assert.equal(first.headers.get('link'), `</v1/inventory/changes?after=${ofPet1[1]!.seq}&limit=2&petId=1>; rel="next"`)
      const second = await get(`after=${ofPet1[1]!.seq}&limit=2&petId=1`)
      assert.deepEqual(second.body, ofPet1.slice(2))
      assert.equal(second.headers.get('link'), null)
      assert.deepEqual(await readAllChanges(suite.server, suite.token, { petId: 1n, limit: 3 }), ofPet1)
      assert.deepEqual(
        await readAllChanges(suite.server, suite.token, { petId: 150n, limit: 1 }),
        all.filter((r) => r.petId === 150n),
      )
      for (const petId of ['999', String(INT64_MAX), '-9223372036854775808']) {
        const none = await get(`petId=${petId}`)
        assert.equal(none.status, 200, 'a pet without rows is an empty page, not a 404')
        assert.deepEqual(none.body, [])
        assert.equal(none.headers.get('link'), null)
      }
    })

    const bad: [string, string][] = [
      ['after=-1', 'after'],
      ['after=abc', 'after'],
      ['after=1.5', 'after'],
      ['after=1e3', 'after'],
      ['after=9223372036854775808', 'after'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=-5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=2.5', 'limit'],
      ['petId=abc', 'petId'],
      ['petId=1.5', 'petId'],
      ['petId=9223372036854775808', 'petId'],
      ['petId=-9223372036854775809', 'petId'],
      ['pet=1', 'pet'],
      ['after=1&sort=desc', 'sort'],
    ]
    for (const [query, mentions] of bad) {
      test(`When the query is '${query}', then 400 invalid_request naming it`, async () => {
        const res = await get(query)
        assertError(res, 400, 'invalid_request', query)
        assert.ok(res.body.message.includes(mentions), res.body.message)
      })
    }
  })

  describe(`ledger under concurrent PATCHes (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const PETS = [1, 2, 3]
    before(async () => {
      await importInventory(
        suite.server,
        PETS.map((petId) => ({ petId, quantity: 1000 })),
      )
    })

    test('When ~50 PATCHes arrive at once, some refused, then each applied one has its own row in application order, and the refused none', async () => {
      for (let round = 0; round < 3; round++) {
        const after = await lastSeq(suite.server, suite.token)
        const before = new Map<number, number>()
        for (const petId of PETS) before.set(petId, (await quantityOf(suite.server, suite.token, petId))!)
        const tags = new Map<number, string>()
        for (const petId of PETS) {
          tags.set(petId, (await suite.server.request('GET', `/v1/inventory/${petId}`, { token: suite.token })).headers.get('etag')!)
        }
        // 41 plain PATCHes to three pets, 5 to a pet with no entry, 4 with a stale If-Match.
        const sent = Array.from({ length: 50 }, (_, i) => {
          const requestId = `burst-${round}-${i}`
          const kind = i % 10 === 3 ? 'missing' : i % 10 === 7 && i < 40 ? 'stale' : 'plain'
          const petId = kind === 'missing' ? 4242 : PETS[i % PETS.length]!
          const quantity = round * 1000 + i
          const headers: Record<string, string> = { 'x-request-id': requestId }
          if (kind === 'stale') headers['if-match'] = '"stale-tag-0000000000000"'
          return { requestId, kind, petId, quantity, headers }
        })
        const results: Response[] = await Promise.all(
          sent.map((s) =>
            suite.server.request('PATCH', `/v1/inventory/${s.petId}`, {
              token: suite.token,
              body: { quantity: s.quantity },
              headers: s.headers,
            }),
          ),
        )
        results.forEach((res, i) => {
          const s = sent[i]!
          assert.equal(res.status, s.kind === 'missing' ? 404 : s.kind === 'stale' ? 412 : 200, `${s.requestId}: ${res.text}`)
          assert.equal(res.headers.get('x-request-id'), s.requestId)
        })
        const applied = sent.filter((s) => s.kind === 'plain')
        const rows = await changesSince(suite.server, suite.token, after)
        assert.equal(rows.length, applied.length, 'one row per applied PATCH, none for the refused ones')
        assert.deepEqual(rows.map((r) => r.requestId).sort(), applied.map((s) => s.requestId).sort())
        for (const row of rows) {
          assertChangeShape(row)
          const s = applied.find((a) => a.requestId === row.requestId)!
          assert.equal(row.petId, BigInt(s.petId))
          assert.equal(row.quantity, s.quantity)
          assert.equal(row.reason, 'adjustment')
        }
        // Per pet, the rows chain in seq order, from the value before the burst to the stored value.
        for (const petId of PETS) {
          const mine = rows.filter((r) => r.petId === BigInt(petId))
          let running = before.get(petId)!
          for (const row of mine) {
            assert.equal(row.previousQuantity, running, `pet ${petId} seq ${row.seq}`)
            running = row.quantity
          }
          assert.equal(await quantityOf(suite.server, suite.token, petId), running, `pet ${petId}: the last row is the stored value`)
        }
      }
    })
  })
}
