// GET /v1/inventory/changes?before=SEQ: the ledger newest first, a page at a time, for the operator
// console's latest changes and a pet's recent history. The pages are the rows oldest first reversed,
// for the store and for one pet, full but the last, each with a Link before its oldest row; rows
// written meanwhile never shift them (the cursor is a seq); int64 petIds stay exact; a bad `before`,
// or `before` with `after`, is 400 and changes nothing; retention ends a walk at the oldest row kept,
// without a 410. Real server processes, on each backend.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage } from '../../src/storage/ports.js'
import { BACKENDS, type Response, type TestServer, useSuite } from '../support/helpers.js'
import { assertChangeShape, assertError, getChanges, type InventoryChange, readAllChanges } from '../support/ledger-client.js'

const INT64_MAX = 9223372036854775807n
const BIG = 2n ** 53n + 1n // 9007199254740993: a double would read 9007199254740992
const PETS = [1n, 2n, BIG, INT64_MAX]
const PATH = '/v1/inventory/changes'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A newest-first page's Link, checked against its exact form `<PATH?before=N&limit=M[&petId=P]>; rel="next"`. */
function beforeLink(res: Response, limit: number, petId?: bigint): number | undefined {
  const link = res.headers.get('link')
  if (link === null) return undefined
  const m = /^<\/v1\/inventory\/changes\?before=(\d+)&limit=(\d+)(?:&petId=(-?\d+))?>; rel="next"$/.exec(link)
  assert.ok(m, `Link ${JSON.stringify(link)} is not <${PATH}?before=N&limit=M[&petId=P]>; rel="next"`)
  assert.equal(Number(m[2]), limit)
  assert.equal(m[3], petId === undefined ? undefined : String(petId), 'the Link keeps petId, digit for digit')
  return Number(m[1])
}

interface Walk {
  rows: InventoryChange[]
  pages: number[]
}

/**
 * Follows the Links newest first from `from` (default: the int64 maximum, the newest row on), checking
 * every page: 200, rows well formed, seq descending, of the pet when given, a Link exactly when the
 * page is full, before its oldest row. `between` runs after each page, before the Link is followed.
 */
async function walkNewestFirst(
  server: TestServer,
  token: string,
  { limit, petId, from = INT64_MAX }: { limit: number; petId?: bigint; from?: bigint },
  between?: () => Promise<void>,
): Promise<Walk> {
  const walk: Walk = { rows: [], pages: [] }
  const filter = petId === undefined ? '' : `&petId=${petId}`
  let query = `before=${from}&limit=${limit}${filter}`
  for (;;) {
    assert.ok(walk.pages.length < 10_000, 'the Links never end')
    const res = await getChanges(server, token, query)
    assert.equal(res.status, 200, `${query}: ${res.text}`)
    for (const row of res.body as unknown[]) {
      assertChangeShape(row)
      if (petId !== undefined) assert.equal(row.petId, petId)
      const last = walk.rows.at(-1)
      if (last) assert.ok(row.seq < last.seq, `seq ${row.seq} after ${last.seq}, newest first`)
      walk.rows.push(row)
    }
    walk.pages.push(res.body.length)
    const next = beforeLink(res, limit, petId)
    if (next === undefined) return walk
    assert.equal(res.body.length, limit, 'a Link on a page shorter than the limit')
    assert.equal(next, walk.rows.at(-1)!.seq, 'the Link continues before the oldest row of the page')
    await between?.()
    query = `before=${next}&limit=${limit}${filter}`
  }
}

const reversed = <T>(rows: T[]) => [...rows].reverse()

for (const backend of BACKENDS) {
  describe(`the ledger newest first (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: PETS.map((petId) => ({ petId, quantity: 10, status: 'available' })),
    })
    const patch = (petId: bigint, quantity: number) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })
    /** The ledger oldest first, as the feed reads it with `after` (its Links checked on the way). */
    const ascending = (petId?: bigint) => readAllChanges(suite.server, suite.token, petId === undefined ? {} : { petId })

    before(async () => {
      // 4 import rows, then 20 PATCHes: 24 rows, so pages of 6 end on a full one.
      for (let i = 0; i < 20; i++) assert.equal((await patch(PETS[i % PETS.length]!, 20 + i)).status, 200)
      assert.equal((await ascending()).length, 24)
    })

    test('When the ledger is walked newest first, then the pages are the rows oldest first reversed, full but the last, a Link before the oldest row of each, none after the last', async () => {
      const all = await ascending()
      for (const limit of [1, 5, 6, 24, 1000]) {
        const walk = await walkNewestFirst(suite.server, suite.token, { limit })
        assert.deepEqual(walk.rows, reversed(all), `limit ${limit}`)
        // Pages of 6 and of 24 end on a full page, with no Link onward to an empty one.
        const expected = Array.from({ length: Math.ceil(24 / limit) }, (_, i) => Math.min(limit, 24 - i * limit))
        assert.deepEqual(walk.pages, expected, `limit ${limit}`)
      }
    })

    test('When one pet is walked newest first, then its pages are its rows reversed, and 2^53+1 and the int64 maximum stay exact in rows and Links', async () => {
      for (const petId of [BIG, INT64_MAX, 1n]) {
        const mine = await ascending(petId)
        assert.equal(mine.length, 6)
        for (const limit of [1, 2, 4, 100]) {
          const walk = await walkNewestFirst(suite.server, suite.token, { limit, petId })
          assert.deepEqual(walk.rows, reversed(mine), `pet ${petId}, limit ${limit}`)
        }
        // The text itself, not only the parsed value: the row's petId digit for digit.
        const res = await getChanges(suite.server, suite.token, `before=${INT64_MAX}&limit=1&petId=${petId}`)
        assert.ok(res.text.includes(`"petId":${petId},`), res.text)
      }
      const nobody = await getChanges(suite.server, suite.token, `before=${INT64_MAX}&petId=3`)
      assert.deepEqual([nobody.status, nobody.body, nobody.headers.get('link')], [200, [], null])
    })

    test('When before is in the middle, at the start or past the end, then exactly the rows below it come, the default limit applying', async () => {
      const all = await ascending()
      const seqs = (res: Response) => (res.body as InventoryChange[]).map((r) => r.seq)
      const middle = all[10]!.seq
      const res = await getChanges(suite.server, suite.token, `before=${middle}&limit=3`)
      assert.deepEqual(seqs(res), [all[9]!.seq, all[8]!.seq, all[7]!.seq])
      assert.equal(beforeLink(res, 3), all[7]!.seq)
      const rest = await getChanges(suite.server, suite.token, `before=${middle}`)
      assert.deepEqual(
        seqs(rest),
        reversed(all.slice(0, 10)).map((r) => r.seq),
      )
      assert.equal(rest.headers.get('link'), null)
      for (const past of [all.at(-1)!.seq + 1, all.at(-1)!.seq + 1000, INT64_MAX - 1n, INT64_MAX]) {
        const top = await getChanges(suite.server, suite.token, `before=${past}`)
        assert.deepEqual(top.body, reversed(all), `before=${past}`)
      }
      for (const bottom of [1, all[0]!.seq]) {
        const none = await getChanges(suite.server, suite.token, `before=${bottom}&limit=2`)
        assert.deepEqual([none.status, none.body, none.headers.get('link')], [200, [], null], `before=${bottom}`)
      }
      // Without before, the feed reads oldest first as it always did: after left out is the start.
      const oldest = await getChanges(suite.server, suite.token, 'limit=2')
      assert.deepEqual(seqs(oldest), [all[0]!.seq, all[1]!.seq])
      assert.equal(oldest.headers.get('link'), `<${PATH}?after=${all[1]!.seq}&limit=2>; rel="next"`)
    })

    test('When rows are written between the pages of a newest-first walk, then its pages are the ones it would have read without them', async (t) => {
      const all = await ascending()
      let quantity = 100
      const walk = await walkNewestFirst(suite.server, suite.token, { limit: 5 }, async () => {
        for (const petId of [BIG, INT64_MAX]) assert.equal((await patch(petId, quantity++)).status, 200)
      })
      assert.deepEqual(walk.rows, reversed(all))
      assert.deepEqual(walk.pages, [5, 5, 5, 5, 4])
      const now = await ascending()
      assert.equal(now.length, all.length + 8)
      assert.deepEqual(now.slice(0, all.length), all)
      // The same under writers running all along, and one pet's walk too: each page waits for a write.
      let writing = true
      let written = 0
      const writers = Promise.all(
        PETS.map(async (petId) => {
          while (writing) {
            assert.equal((await patch(petId, quantity++)).status, 200)
            written++
          }
        }),
      )
      const aWrite = async () => {
        for (const target = written + 1; written < target; ) await pause(1)
      }
      try {
        for (const petId of [undefined, BIG]) {
          const during = await walkNewestFirst(suite.server, suite.token, { limit: 3, ...(petId === undefined ? {} : { petId }) }, aWrite)
          const top = during.rows[0]!.seq
          const expected = (await ascending(petId)).filter((r) => r.seq <= top)
          assert.deepEqual(during.rows, reversed(expected), `pet ${petId}`)
          assert.ok(during.pages.length > 2, `pet ${petId}: ${during.pages.length} pages`)
        }
      } finally {
        writing = false
        await writers
      }
      t.diagnostic(`${written} writes while the walks went on`)
    })

    test('When before is 0, negative, not a decimal integer, over int64, given twice, or given with after, then 400 invalid_request, and nothing changes', async () => {
      const ledger = await ascending()
      const inventory = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).text
      for (const query of [
        'before=0',
        'before=-1',
        'before=abc',
        'before=',
        'before=1.5',
        'before=1e3',
        'before=07',
        'before=+7',
        'before=9223372036854775808',
        'before=99999999999999999999',
        'before=5&before=6',
        `before=${INT64_MAX}&limit=0`,
        `before=${INT64_MAX}&limit=1001`,
      ]) {
        const res = await getChanges(suite.server, suite.token, query)
        assertError(res, 400, 'invalid_request', query)
        assert.match(res.body.message, /before|limit/, query)
      }
      for (const query of ['before=5&after=0', 'after=3&before=5', `petId=1&before=${INT64_MAX}&after=0&limit=10`]) {
        const res = await getChanges(suite.server, suite.token, query)
        assertError(res, 400, 'invalid_request', query)
        assert.match(res.body.message, /after and before cannot be used together/, query)
      }
      assert.deepEqual(await ascending(), ledger)
      assert.equal((await suite.server.request('GET', '/v1/inventory', { token: suite.token })).text, inventory)
    })

    describe('with rows removed by retention', () => {
      let other: Storage
      before(async () => {
        other = await openStorage({ databaseUrl: suite.database.url, dbPoolSize: 2, dbTimeoutMs: 20_000, dbMigrationTimeoutMs: 60_000 })
      })
      after(async () => {
        await other?.close()
      })

      test('When rows below the Link are removed, then the next page holds only the rows kept and ends the walk, a before below them is an empty page, not a 410, and after still gets 410', async () => {
        const all = await ascending()
        await pause(5)
        const cut = new Date().toISOString()
        const first = await getChanges(suite.server, suite.token, `before=${INT64_MAX}&limit=5`)
        const next = beforeLink(first, 5)!
        const below = all.filter((r) => r.seq < next)
        // Retention removes all but the two newest rows below the Link, then the walk goes on.
        assert.equal(await other.pruneLedger(cut, below.length - 2), below.length - 2)
        const pruned = await other.prunedThrough()
        const second = await getChanges(suite.server, suite.token, `before=${next}&limit=5`)
        assert.deepEqual(second.body, reversed(below.slice(-2)))
        assert.equal(second.headers.get('link'), null, 'the oldest row kept ends the walk')
        assert.ok((second.body as InventoryChange[]).every((r) => BigInt(r.seq) > pruned))
        for (const query of [`before=${pruned + 1n}`, `before=${pruned}&limit=1`, 'before=1', `before=${pruned + 1n}&petId=${BIG}`]) {
          const res = await getChanges(suite.server, suite.token, query)
          assert.deepEqual([res.status, res.body, res.headers.get('link')], [200, [], null], query)
        }
        const expired = await getChanges(suite.server, suite.token, 'after=0')
        assertError(expired, 410, 'cursor_expired')
        // A walk from the newest row now reads exactly the rows kept.
        const kept = await walkNewestFirst(suite.server, suite.token, { limit: 4 })
        assert.deepEqual(kept.rows, reversed(all.filter((r) => BigInt(r.seq) > pruned)))
      })
    })
  })
}
