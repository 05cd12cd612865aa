import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, startServer, useSuite, type Response, type TestServer } from '../support/helpers.js'

const ABOVE_DOUBLE = 9007199254740993n
const STRONG_TAG = /^"[A-Za-z0-9_-]{22}"$/

for (const backend of BACKENDS) {
  describe(`single entries and entity tags (${backend.name})`, () => {
    const suite = useSuite(backend, {
      instances: 2,
      seed: [
        { petId: 1, quantity: 5, status: 'available' },
        { petId: 2, quantity: 7, status: 'pending' },
        { petId: ABOVE_DOUBLE, quantity: 1, status: 'sold' },
      ],
    })
    const get = (server: TestServer, path: string, headers: Record<string, string> = {}) =>
      server.request('GET', path, { token: suite.token, headers })
    const patch = (server: TestServer, petId: number, quantity: number) =>
      server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })
    const tagOf = (res: Response) => res.headers.get('etag')!

    test('When one entry is fetched, then it comes back exactly with a strong ETag, the same on every instance', async () => {
      const [a, b] = suite.servers as [TestServer, TestServer]
      const res = await get(a, `/v1/inventory/${ABOVE_DOUBLE}`)
      assert.equal(res.status, 200)
      assert.equal(res.text, `{"petId":${ABOVE_DOUBLE},"quantity":1,"status":"sold"}`)
      assert.match(tagOf(res), STRONG_TAG)
      assert.equal(tagOf(await get(b, `/v1/inventory/${ABOVE_DOUBLE}`)), tagOf(res))
      assert.equal((await get(a, '/v1/inventory/3')).status, 404)
    })

    test('When If-None-Match holds the current tag, in any accepted form, then 304 with no body and the tag', async () => {
      const [a, b] = suite.servers as [TestServer, TestServer]
      const tag = tagOf(await get(a, '/v1/inventory/1'))
      for (const header of [tag, `W/${tag}`, `"nope", ${tag}`, '*']) {
        for (const server of [a, b]) {
          const res = await get(server, '/v1/inventory/1', { 'if-none-match': header })
          assert.equal(res.status, 304, header)
          assert.equal(res.text, '')
          assert.equal(tagOf(res), tag)
        }
      }
      for (const header of ['"nope"', tag.slice(1, -1), `${tag}x`]) {
        const res = await get(a, '/v1/inventory/1', { 'if-none-match': header })
        assert.equal(res.status, 200, header)
        assert.deepEqual(res.body, { petId: 1n, quantity: 5, status: 'available' })
      }
    })

    test('When an entry changes, then its tag changes, the PATCH answer carries the new one, and the old tag no longer matches', async () => {
      const [a, b] = suite.servers as [TestServer, TestServer]
      const before = tagOf(await get(a, '/v1/inventory/2'))
      const res = await patch(a, 2, 8)
      assert.equal(res.status, 200)
      const after = tagOf(res)
      assert.match(after, STRONG_TAG)
      assert.notEqual(after, before)
      assert.equal(tagOf(await get(b, '/v1/inventory/2')), after, 'the other instance agrees at once')
      const stale = await get(b, '/v1/inventory/2', { 'if-none-match': before })
      assert.equal(stale.status, 200)
      assert.equal(stale.body.quantity, 8)
    })

    test('When a PATCH leaves the entry as it was, then its tag stays the same', async () => {
      const [a] = suite.servers as [TestServer, TestServer]
      const before = tagOf(await get(a, '/v1/inventory/1'))
      assert.equal(tagOf(await patch(a, 1, 5)), before)
      assert.equal(tagOf(await patch(a, 1, 6)) === before, false)
      assert.equal(tagOf(await patch(a, 1, 5)), before, 'the same representation has the same tag again')
    })

    test('When the list is fetched, then it carries a tag of its bytes that answers 304 until any entry changes, through either instance', async () => {
      const [a, b] = suite.servers as [TestServer, TestServer]
      const first = await get(a, '/v1/inventory')
      const tag = tagOf(first)
      assert.match(tag, STRONG_TAG)
      assert.equal(tagOf(await get(b, '/v1/inventory')), tag)
      const unchanged = await get(b, '/v1/inventory', { 'if-none-match': tag })
      assert.equal(unchanged.status, 304)
      assert.equal(unchanged.text, '')
      assert.equal((await patch(b, 2, 9)).status, 200)
      const changed = await get(a, '/v1/inventory', { 'if-none-match': tag })
      assert.equal(changed.status, 200)
      assert.notEqual(tagOf(changed), tag)
      assert.equal(changed.body.find((i: { petId: bigint }) => i.petId === 2n).quantity, 9)
    })

    test('When an instance restarts, then the tags it sends are the same as before', async () => {
      const [a] = suite.servers as [TestServer, TestServer]
      const one = tagOf(await get(a, '/v1/inventory/1'))
      const list = tagOf(await get(a, '/v1/inventory'))
      const fresh = await startServer(suite.database.url)
      try {
        assert.equal(tagOf(await get(fresh, '/v1/inventory/1')), one)
        assert.equal(tagOf(await get(fresh, '/v1/inventory')), list)
      } finally {
        await fresh.stop()
      }
    })
  })
}

for (const backend of BACKENDS) {
  describe(`updates conditional on If-Match (${backend.name})`, () => {
    const PETS = 20
    const suite = useSuite(backend, {
      instances: 2,
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 100, status: 'available' })),
    })
    const read = async (petId: number) => {
      const res = await suite.server.request('GET', `/v1/inventory/${petId}`, { token: suite.token })
      return { quantity: res.body.quantity as number, tag: res.headers.get('etag')! }
    }
    const patch = (server: TestServer, petId: number, quantity: number, ifMatch?: string) =>
      server.request('PATCH', `/v1/inventory/${petId}`, {
        token: suite.token,
        body: { quantity },
        headers: ifMatch === undefined ? {} : { 'if-match': ifMatch },
      })

    test('When two clients read an entry and both update it with its tag through different instances, then exactly one wins', async () => {
      const [a, b] = suite.servers as [TestServer, TestServer]
      for (let petId = 1; petId <= PETS; petId++) {
        const { tag } = await read(petId)
        const [first, second] = await Promise.all([patch(a, petId, 1, tag), patch(b, petId, 2, tag)])
        const statuses = [first.status, second.status].sort()
        assert.deepEqual(statuses, [200, 412], `pet ${petId}: ${first.text} / ${second.text}`)
        const loser = first.status === 412 ? first : second
        assert.deepEqual(loser.body, { code: 'precondition_failed', message: loser.body.message, status: 412 })
        const winner = first.status === 200 ? 1 : 2
        assert.equal((await read(petId)).quantity, winner, "the stored value is the winner's")
      }
    })

    test('When many clients race with the same tag in one burst, then one update applies and the rest get 412', async () => {
      const { tag } = await read(1)
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => patch(suite.servers[i % 2]!, 1, 1000 + i, tag)))
      const winners = results.filter((r) => r.status === 200)
      assert.equal(winners.length, 1, results.map((r) => r.status).join(','))
      assert.equal(results.filter((r) => r.status === 412).length, 29)
      assert.equal((await read(1)).quantity, winners[0]!.body.quantity)
      assert.equal(winners[0]!.headers.get('etag'), (await read(1)).tag)
    })

    test('When If-Match holds a stale, weak or unknown tag, then 412 and nothing changes; * and the current tag apply', async () => {
      const before = await read(3)
      assert.equal((await patch(suite.server, 3, 7, `W/${before.tag}`)).status, 412, 'a weak tag never matches')
      assert.equal((await patch(suite.server, 3, 7, '"stale"')).status, 412)
      assert.equal((await read(3)).quantity, before.quantity)
      const res = await patch(suite.server, 3, 7, `"stale", ${before.tag}`)
      assert.equal(res.status, 200)
      assert.equal((await patch(suite.server, 3, 8, before.tag)).status, 412, 'the old tag is stale now')
      assert.equal((await patch(suite.server, 3, 9, '*')).status, 200)
      assert.equal((await read(3)).quantity, 9)
    })

    test('When If-Match is set on a pet with no entry, then 404; when it is malformed, then 400 and nothing changes', async () => {
      assert.equal((await patch(suite.server, 424242, 1, '*')).status, 404)
      const before = await read(4)
      const res = await patch(suite.server, 4, 1, 'not-a-tag')
      assert.equal(res.status, 400)
      assert.match(res.body.message, /If-Match/)
      assert.deepEqual(await read(4), before)
    })
  })

  describe(`REQUIRE_IF_MATCH=true (${backend.name})`, () => {
    const suite = useAppSuite(backend, { env: { REQUIRE_IF_MATCH: 'true' }, seed: [{ petId: 1, quantity: 5, status: 'sold' }] })

    test('When a PATCH has no If-Match, then 428 and nothing changes; with the current tag it applies', async () => {
      const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 6 } })
      assert.equal(res.status, 428)
      assert.deepEqual(res.body, { code: 'precondition_required', message: res.body.message, status: 428 })
      const current = await suite.server.request('GET', '/v1/inventory/1', { token: suite.token })
      assert.equal(current.body.quantity, 5)
      const ok = await suite.server.request('PATCH', '/v1/inventory/1', {
        token: suite.token,
        body: { quantity: 6 },
        headers: { 'if-match': current.headers.get('etag')! },
      })
      assert.equal(ok.status, 200)
      assert.equal(ok.body.quantity, 6)
    })
  })
}
