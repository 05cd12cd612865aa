import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, startServer, useSuite, type Response, type TestServer } from './helpers.js'

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
