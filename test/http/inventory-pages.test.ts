// GET /v1/inventory paged (limit, after) and filtered (status): exact int64 keyset pages, Links to the
// end, the whole list unchanged without parameters, consistent walks under writes, refused parameters.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type TestApp, startApp, useAppSuite } from '../support/app.js'
import { BACKENDS, type Response, seed } from '../support/helpers.js'
import { assertError } from '../support/ledger-client.js'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const TWO_53 = 2n ** 53n

type Status = 'available' | 'pending' | 'sold'
interface Entry {
  petId: bigint
  quantity: number
  status: Status
}

const STATUSES: Status[] = ['available', 'pending', 'sold']
const byPetId = (a: Entry, b: Entry) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0)
const entryJson = (e: Entry) => `{"petId":${e.petId},"quantity":${e.quantity},"status":"${e.status}"}`
/** The list's exact text for these entries, sorted by petId as signed 64-bit. */
const listJson = (entries: Entry[]) => `[${[...entries].sort(byPetId).map(entryJson).join(',')}]`

/** The next page's path from a Link header, checked against its exact form; undefined when there is none. */
function nextPath(res: Response, limit: number, status?: Status): string | undefined {
  const link = res.headers.get('link')
  if (link === null) return undefined
  const match = new RegExp(`^<(/v1/inventory\\?after=(-?\\d+)&limit=${limit}${status ? `&status=${status}` : ''})>; rel="next"$`).exec(link)
  assert.ok(match, `Link ${link}`)
  return match[1]
}

for (const backend of BACKENDS) {
  describe(`inventory pages (${backend.name})`, () => {
    // Ids at both ends of int64, around ±2^53 (where a double rounds), and where text order differs from numeric.
    const ids = [
      INT64_MIN,
      INT64_MIN + 1n,
      -(TWO_53 + 1n),
      -TWO_53,
      -10n,
      -2n,
      0n,
      2n,
      10n,
      100n,
      TWO_53 - 1n,
      TWO_53,
      TWO_53 + 1n,
      INT64_MAX - 1n,
      INT64_MAX,
    ]
    const entries: Entry[] = ids.map((petId, n) => ({ petId, quantity: n * 7, status: STATUSES[n % 3]! }))
    // Seeded out of order: the order must come from the database's sort.
    const suite = useAppSuite(backend, { seed: [...entries].reverse() })
    const get = (query = '', headers: Record<string, string> = {}) =>
      suite.server.request('GET', `/v1/inventory${query ? `?${query}` : ''}`, { token: suite.token, headers })

    /** Follows the Links from the first page to the end; the pages' texts, each checked. */
    async function walk(query: string, limit: number, status?: Status, between?: (page: number) => Promise<void>): Promise<string[]> {
      const pages: string[] = []
      let path: string | undefined = `/v1/inventory?${query}`
      while (path !== undefined) {
        const res = await suite.server.request('GET', path, { token: suite.token })
        assert.equal(res.status, 200, res.text)
        assert.equal(res.headers.get('etag'), null, 'a page carries no ETag')
        const items = res.body as Entry[]
        assert.ok(items.length <= limit, `${items.length} entries on a page of ${limit}`)
        path = nextPath(res, limit, status)
        if (path !== undefined) assert.equal(items.length, limit, 'a page before the last one is full')
        else assert.ok(items.length > 0 || pages.length === 0, 'no empty last page')
        if (status) for (const item of items) assert.equal(item.status, status)
        pages.push(res.text)
        await between?.(pages.length)
      }
      return pages
    }
    /** The pages' entries as one list text. */
    const joined = (pages: string[]) =>
      `[${pages
        .map((p) => p.slice(1, -1))
        .filter(Boolean)
        .join(',')}]`

    test('When no query parameter is given, then the whole list is answered exactly as before: every entry, its ETag, 304, no Link', async () => {
      const res = await get()
      assert.equal(res.status, 200)
      assert.equal(res.text, listJson(entries))
      assert.equal(res.headers.get('link'), null)
      const etag = res.headers.get('etag')
      assert.match(etag ?? '', /^"[^"]+"$/)
      assert.equal(res.headers.get('cache-control'), 'private, no-cache')
      const again = await get('', { 'if-none-match': etag! })
      assert.equal(again.status, 304)
      assert.equal(again.text, '')
    })

    for (const limit of [1, 2, 3, 4]) {
      test(`When walked with limit=${limit}, then the Links lead to the end and the pages join into the whole list, byte for byte`, async () => {
        const pages = await walk(`limit=${limit}`, limit)
        assert.equal(pages.length, Math.ceil(entries.length / limit))
        assert.equal(joined(pages), (await get()).text)
        assert.equal(joined(pages), listJson(entries))
      })

      for (const status of STATUSES) {
        test(`When walked with limit=${limit}&status=${status}, then the pages join into the list of that status, and the Links keep it`, async () => {
          const expected = listJson(entries.filter((e) => e.status === status))
          const pages = await walk(`limit=${limit}&status=${status}`, limit, status)
          assert.equal(joined(pages), expected)
          assert.equal((await get(`status=${status}`)).text, expected)
        })
      }
    }

    test('When the first page is asked from each end of int64, then after is exclusive and exact', async () => {
      const sorted = [...entries].sort(byPetId)
      assert.equal((await get(`after=${INT64_MIN}&limit=2`)).text, listJson(sorted.slice(1, 3)))
      assert.equal((await get(`after=${-INT64_MAX - 1n}&limit=1`)).text, listJson(sorted.slice(1, 2)))
      // Neighbours a double cannot tell apart.
      assert.equal((await get(`after=${TWO_53 - 1n}&limit=1`)).text, listJson([entries.find((e) => e.petId === TWO_53)!]))
      assert.equal((await get(`after=${TWO_53}&limit=1`)).text, listJson([entries.find((e) => e.petId === TWO_53 + 1n)!]))
      assert.equal((await get(`after=${-TWO_53 - 1n}&limit=1`)).text, listJson([entries.find((e) => e.petId === -TWO_53)!]))
      // A petId no entry has continues at the next one.
      assert.equal((await get('after=3&limit=1')).text, listJson([entries.find((e) => e.petId === 10n)!]))
      const last = await get(`after=${INT64_MAX - 1n}&limit=1`)
      assert.equal(last.text, listJson([entries.find((e) => e.petId === INT64_MAX)!]))
      assert.equal(last.headers.get('link'), null, 'a page that holds exactly the last entry carries no Link')
      for (const query of [`after=${INT64_MAX}`, `after=${INT64_MAX}&limit=5`, `after=${INT64_MAX}&status=sold`]) {
        const end = await get(query)
        assert.equal(end.status, 200)
        assert.equal(end.text, '[]')
        assert.equal(end.headers.get('link'), null)
      }
    })

    test('When limit is the number of entries, then one page holds them all and has no Link; with one less, the Link points at the last', async () => {
      const all = await get(`limit=${entries.length}`)
      assert.equal(all.text, listJson(entries))
      assert.equal(all.headers.get('link'), null)
      const short = await get(`limit=${entries.length - 1}`)
      assert.equal(short.headers.get('link'), `</v1/inventory?after=${INT64_MAX - 1n}&limit=${entries.length - 1}>; rel="next"`)
      assert.equal((await get(`limit=1000`)).text, listJson(entries))
    })

    test('When a page is asked with If-None-Match, then it is answered 200 in full, without an ETag', async () => {
      const etag = (await get()).headers.get('etag')!
      for (const query of ['limit=1000', `after=${INT64_MIN}`, 'limit=2&status=sold']) {
        const res = await get(query, { 'if-none-match': etag })
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('etag'), null)
        assert.ok(res.text.startsWith('['))
      }
      const star = await get('limit=1', { 'if-none-match': '*' })
      assert.equal(star.status, 200)
    })

    test('When the list is filtered by status alone, then it is the whole list of that status, with its own ETag and 304', async () => {
      const tags = new Set<string>()
      for (const status of STATUSES) {
        const res = await get(`status=${status}`)
        assert.equal(res.status, 200)
        assert.equal(res.text, listJson(entries.filter((e) => e.status === status)))
        assert.equal(res.headers.get('link'), null)
        const etag = res.headers.get('etag')!
        tags.add(etag)
        assert.equal((await get(`status=${status}`, { 'if-none-match': etag })).status, 304)
      }
      tags.add((await get()).headers.get('etag')!)
      assert.equal(tags.size, 4, 'each list has the tag of its own bytes')
    })

    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=-1',
      'limit=x',
      'limit=1.5',
      'limit=01',
      'limit=1e2',
      'limit=',
      'after=x',
      'after=1.5',
      'after=01',
      'after=-0',
      'after=+1',
      'after=1e3',
      'after=',
      'after=9223372036854775808',
      'after=-9223372036854775809',
      'status=bogus',
      'status=',
      'status=SOLD',
      'limit=1&limit=2',
      'after=1&after=2',
      'status=sold&status=pending',
      'status=sold&status=sold',
      'foo=1',
      'petId=1',
      'limit=2&offset=1',
    ]) {
      test(`When the list query is '${query}', then 400 invalid_request with an Error body, and nothing changed`, async () => {
        const before = await get()
        assertError(await get(query), 400, 'invalid_request', query)
        const after = await get()
        assert.equal(after.text, before.text)
        assert.equal(after.headers.get('etag'), before.headers.get('etag'))
      })
    }
  })

  describe(`inventory pages past the default size (${backend.name})`, () => {
    const entries: Entry[] = Array.from({ length: 250 }, (_, n) => ({
      petId: BigInt(n * 1000 - 100_000),
      quantity: n,
      status: n % 2 === 0 ? 'available' : 'sold',
    }))
    const suite = useAppSuite(backend, { seed: entries })
    const get = (query: string) => suite.server.request('GET', `/v1/inventory?${query}`, { token: suite.token })

    test('When only after is given, then the page holds 100 entries and links with limit=100', async () => {
      const res = await get(`after=${INT64_MIN}`)
      assert.equal(res.text, listJson(entries.slice(0, 100)))
      assert.equal(res.headers.get('link'), `</v1/inventory?after=${entries[99]!.petId}&limit=100>; rel="next"`)
      const second = await get(`after=${entries[99]!.petId}&limit=100`)
      assert.equal(second.text, listJson(entries.slice(100, 200)))
      const third = await get(`after=${entries[199]!.petId}&limit=100`)
      assert.equal(third.text, listJson(entries.slice(200)))
      assert.equal(third.headers.get('link'), null)
    })

    test('When only after and status are given, then the page holds 100 entries of that status', async () => {
      const sold = entries.filter((e) => e.status === 'sold')
      const res = await get(`after=${INT64_MIN}&status=sold`)
      assert.equal(res.text, listJson(sold.slice(0, 100)))
      assert.equal(res.headers.get('link'), `</v1/inventory?after=${sold[99]!.petId}&limit=100&status=sold>; rel="next"`)
      const rest = await get(`after=${sold[99]!.petId}&limit=100&status=sold`)
      assert.equal(rest.text, listJson(sold.slice(100)))
      assert.equal(rest.headers.get('link'), null)
    })

    test('When only limit is given, then the first page starts at the smallest petId', async () => {
      const res = await get('limit=1')
      assert.equal(res.text, listJson(entries.slice(0, 1)))
      assert.equal(res.headers.get('link'), `</v1/inventory?after=${entries[0]!.petId}&limit=1>; rel="next"`)
    })
  })

  describe(`inventory pages under writes (${backend.name})`, () => {
    // Even petIds from 0 to 58, so imports can land between them and before and after the walk.
    const initial: Entry[] = Array.from({ length: 30 }, (_, n) => ({
      petId: BigInt(n * 2),
      quantity: n,
      status: n % 3 === 0 ? 'sold' : 'available',
    }))
    const suite = useAppSuite(backend, { seed: initial })

    /** Follows the Links from `query`, running `between` after each page; every entry seen, in order. */
    async function walk(query: string, between: (page: number, seen: Entry[]) => Promise<void>): Promise<Entry[]> {
      const seen: Entry[] = []
      let path: string | undefined = `/v1/inventory?${query}`
      for (let page = 1; path !== undefined; page++) {
        const res = await suite.server.request('GET', path, { token: suite.token })
        assert.equal(res.status, 200, res.text)
        seen.push(...(res.body as Entry[]))
        const link = res.headers.get('link')
        path = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1]
        await between(page, seen)
      }
      return seen
    }
    const assertNoRepeats = (seen: Entry[]) => {
      for (let i = 1; i < seen.length; i++)
        assert.ok(seen[i - 1]!.petId < seen[i]!.petId, `ascending, once each: ${seen.map((e) => e.petId)}`)
    }
    const patch = (petId: bigint, quantity: number) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })

    test('When entries are imported and patched between the pages, then no entry is shown twice and none that existed throughout is skipped', async () => {
      const whole = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body as Entry[]
      const seen = await walk('limit=4', async (page, sofar) => {
        const last = sofar.at(-1)!.petId
        // Before the cursor, just after it, far ahead, and at both ends of int64.
        await seed(suite.database.url, [
          { petId: last - 1n, quantity: 900 + page, status: 'pending' },
          { petId: last + 1n, quantity: 900 + page, status: 'pending' },
          { petId: 10_000n + 10n * BigInt(page), quantity: 1, status: 'available' },
          { petId: INT64_MIN + BigInt(page), quantity: 1, status: 'available' },
        ])
        // A PATCH of an entry already shown and of one still ahead.
        assert.equal((await patch(0n, 500 + page)).status, 200)
        assert.equal((await patch(58n, 500 + page)).status, 200)
      })
      assertNoRepeats(seen)
      const shown = new Set(seen.map((e) => e.petId))
      for (const e of whole) assert.ok(shown.has(e.petId), `entry ${e.petId} existed throughout and was shown`)
      // The writes were applied (the walk saw live data, not an old copy): 58 was patched before its page.
      assert.ok(seen.find((e) => e.petId === 58n)!.quantity >= 500)
    })

    test('When statuses change between the pages of a filtered walk, then no entry is shown twice and every one that kept the status throughout is shown', async () => {
      const sold = ((await suite.server.request('GET', '/v1/inventory?status=sold', { token: suite.token })).body as Entry[]).map(
        (e) => e.petId,
      )
      assert.ok(sold.length >= 8, 'enough sold entries to walk several pages')
      const changed = new Set<bigint>()
      const seen = await walk('limit=2&status=sold', async (_page, sofar) => {
        const last = sofar.at(-1)?.petId ?? INT64_MIN
        // One sold entry ahead leaves the status, and back again later: it may be shown or not, but never twice.
        const ahead = sold.find((id) => id > last && !changed.has(id))
        if (ahead !== undefined) {
          changed.add(ahead)
          await seed(suite.database.url, [{ petId: ahead, quantity: 1, status: 'available' }])
        }
        // An entry already shown leaves and comes back: it must not be shown again.
        const behind = sofar[0]!.petId
        changed.add(behind)
        await seed(suite.database.url, [{ petId: behind, quantity: 2, status: 'pending' }])
        await seed(suite.database.url, [{ petId: behind, quantity: 3, status: 'sold' }])
        // A new sold entry behind the cursor is not shown; one ahead may be.
        await seed(suite.database.url, [{ petId: last - 1n, quantity: 4, status: 'sold' }])
      })
      assertNoRepeats(seen)
      for (const e of seen) assert.equal(e.status, 'sold')
      const shown = new Set(seen.map((e) => e.petId))
      for (const id of sold) if (!changed.has(id)) assert.ok(shown.has(id), `sold entry ${id} kept its status and was shown`)
    })
  })

  describe(`filtered lists on two instances (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      seed: [
        { petId: 1n, quantity: 1, status: 'sold' },
        { petId: 2n, quantity: 2, status: 'available' },
      ],
    })

    test('When another instance or the CLI writes, then the filtered list this instance cached is never served stale', async () => {
      const other: TestApp = await startApp(suite.database.url)
      try {
        const sold = () => suite.server.request('GET', '/v1/inventory?status=sold', { token: suite.token })
        const first = await sold()
        assert.equal(first.text, '[{"petId":1,"quantity":1,"status":"sold"}]')
        // A PATCH through the other instance.
        assert.equal((await other.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 9 } })).status, 200)
        const patched = await sold()
        assert.equal(patched.text, '[{"petId":1,"quantity":9,"status":"sold"}]')
        assert.notEqual(patched.headers.get('etag'), first.headers.get('etag'))
        // A status moved by an import (as the CLI does): the entry changes list.
        await seed(suite.database.url, [{ petId: 2n, quantity: 2, status: 'sold' }])
        assert.equal((await sold()).text, '[{"petId":1,"quantity":9,"status":"sold"},{"petId":2,"quantity":2,"status":"sold"}]')
        const available = await suite.server.request('GET', '/v1/inventory?status=available', { token: suite.token })
        assert.equal(available.text, '[]')
        assert.equal(available.headers.get('etag') !== null, true)
        // A tag from before the write no longer gives 304.
        const stale = await suite.server.request('GET', '/v1/inventory?status=sold', {
          token: suite.token,
          headers: { 'if-none-match': first.headers.get('etag')! },
        })
        assert.equal(stale.status, 200)
      } finally {
        await other.close()
      }
    })
  })
}
