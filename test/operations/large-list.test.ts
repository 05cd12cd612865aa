import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { entityTag } from '../../src/entity-tags.js'
import { itemJson } from '../../src/inventory/inventory.json.js'
import type { PetStatus } from '../../src/domain.js'
import { readdirSync, readlinkSync } from 'node:fs'
import { request } from 'node:http'
import { BACKENDS, sqliteDatabase, useSuite, type TestServer } from '../support/helpers.js'

// Enough entries for several pages (2,000 each) and a body over 1 MiB, which is kept in a spool file.
const PETS = 30_000
const HIGH = PETS - 7

/** The spool files the server process holds open (unlinked temporary files, see src/cache/spool.ts). */
function openSpools(server: TestServer): string[] {
  const fds = `/proc/${server.child.pid}/fd`
  return readdirSync(fds)
    .map((fd) => {
      try {
        return readlinkSync(`${fds}/${fd}`)
      } catch {
        return ''
      }
    })
    .filter((target) => target.includes('petstore-spool-'))
}

/** Starts a GET of the list and drops the connection once the first bytes of the body arrived. */
function abandonList(server: TestServer, token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.once('data', () => {
        req.destroy()
        resolve()
      })
    })
    req.once('error', (error) => (req.destroyed ? resolve() : reject(error)))
    req.end()
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of BACKENDS) {
  describe(`a list of ${PETS} entries (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 0, status: ['available', 'pending', 'sold'][i % 3]! })),
    })
    const list = () => suite.server.request('GET', '/v1/inventory', { token: suite.token })
    const patch = (petId: number, quantity: number) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })

    test('When the list is fetched, then every entry comes back in order, with the length and the tag of its exact bytes', async () => {
      const res = await list()
      assert.equal(res.status, 200)
      assert.equal(res.body.length, PETS)
      for (const [i, item] of (res.body as { petId: bigint }[]).entries()) assert.equal(item.petId, BigInt(i + 1))
      assert.equal(Number(res.headers.get('content-length')), Buffer.byteLength(res.text))
      assert.ok(Buffer.byteLength(res.text) > 1024 * 1024, 'large enough to be sent in pieces')
      assert.equal(res.headers.get('etag'), entityTag(res.text))
      // Byte for byte what itemJson writes, on either backend (PostgreSQL writes the JSON itself).
      const items = res.body as { petId: bigint; quantity: number; status: PetStatus }[]
      assert.equal(res.text, `[${items.map(itemJson).join(',')}]`)
      const again = await suite.server.request('GET', '/v1/inventory', {
        token: suite.token,
        headers: { 'if-none-match': res.headers.get('etag')! },
      })
      assert.equal(again.status, 304)
      const head = await suite.server.request('HEAD', '/v1/inventory', { token: suite.token })
      assert.equal(head.status, 200)
      assert.equal(head.text, '')
      assert.equal(head.headers.get('etag'), res.headers.get('etag'))
      assert.equal(head.headers.get('content-length'), res.headers.get('content-length'))
    })

    test('When the list of one status or its pages are fetched, then they hold exactly the entries of that status, the list with its tag and 304', async () => {
      const whole = (await list()).body as { petId: bigint; quantity: number; status: PetStatus }[]
      for (const status of ['available', 'pending', 'sold'] as const) {
        const res = await suite.server.request('GET', `/v1/inventory?status=${status}`, { token: suite.token })
        assert.equal(res.status, 200)
        // Built from many steps of 2,000 entries, of which each holds a third.
        assert.equal(
          res.text,
          `[${whole
            .filter((i) => i.status === status)
            .map(itemJson)
            .join(',')}]`,
        )
        assert.equal(res.headers.get('etag'), entityTag(res.text))
        const again = await suite.server.request('GET', `/v1/inventory?status=${status}`, {
          token: suite.token,
          headers: { 'if-none-match': res.headers.get('etag')! },
        })
        assert.equal(again.status, 304)
        // The pages of 1,000 join into the same list.
        const pages: string[] = []
        for (let path: string | undefined = `/v1/inventory?limit=1000&status=${status}`; path !== undefined; ) {
          const page = await suite.server.request('GET', path, { token: suite.token })
          assert.equal(page.status, 200)
          pages.push(page.text.slice(1, -1))
          path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1]
        }
        assert.equal(pages.length, Math.ceil(PETS / 3 / 1000))
        assert.equal(`[${pages.join(',')}]`, res.text)
      }
    })

    // Each round writes a late page's pet, then an early page's pet, to the same value. A list read
    // from one snapshot can never show the early one ahead of the late one, nor more than one round
    // behind it; a list stitched from pages read at different moments could.
    test('When writes land on early and late pages while lists are read, then every list is one consistent snapshot', async () => {
      let writing = true
      const writer = (async () => {
        for (let round = 1; round <= 60; round++) {
          assert.equal((await patch(HIGH, round)).status, 200)
          assert.equal((await patch(1, round)).status, 200)
        }
        writing = false
      })()
      let lists = 0
      while (writing) {
        const res = await list()
        assert.equal(res.status, 200)
        const low = res.body[0].quantity as number
        const high = res.body[HIGH - 1].quantity as number
        assert.ok(high === low || high === low + 1, `pet ${HIGH} at ${high} but pet 1 at ${low}`)
        assert.equal(res.headers.get('etag'), entityTag(res.text))
        lists++
      }
      await writer
      assert.ok(lists > 0)
      const last = await list()
      assert.deepEqual([last.body[0].quantity, last.body[HIGH - 1].quantity], [60, 60])
    })

    test('When clients drop the list halfway and nothing changes, then the list they left is still served whole, to readers at the same time and after', async () => {
      const before = await list()
      assert.equal(before.status, 200)
      const during = list()
      await Promise.all(Array.from({ length: 12 }, () => abandonList(suite.server, suite.token)))
      const after = await list()
      for (const res of [await during, after]) {
        assert.equal(res.status, 200, res.text.slice(0, 200))
        assert.equal(res.text, before.text)
        assert.equal(res.headers.get('etag'), before.headers.get('etag'))
      }
    })

    test("When clients drop the list halfway and the list changes, then the server holds only the current list's spool file", async () => {
      for (let round = 1; round <= 3; round++) {
        await Promise.all([abandonList(suite.server, suite.token), abandonList(suite.server, suite.token)])
        assert.equal((await patch(2, 1000 + round)).status, 200)
      }
      const res = await list()
      assert.equal(res.status, 200)
      assert.equal(res.body[1].quantity, 1003)
      // A dropped response's stream is destroyed asynchronously: give it a bounded moment.
      for (let i = 0; i < 100 && openSpools(suite.server).length > 1; i++) await sleep(20)
      const spools = openSpools(suite.server)
      assert.equal(spools.length, 1, spools.join(', '))
      assert.match(spools[0]!, /\(deleted\)$/, 'unlinked: nothing is left on disk if the process dies')
    })
  })
}

describe(`a list of ${PETS} entries where no spool file can be made`, () => {
  const suite = useSuite(
    { name: 'sqlite', create: async () => sqliteDatabase() },
    {
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: i % 5, status: 'available' })),
      env: { TMPDIR: '/nonexistent/petstore-tmp' },
    },
  )

  test('When TMPDIR cannot be written, then the list is served from memory, exactly, and the server says why once', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await suite.server.request('GET', '/v1/inventory', { token: suite.token })
      assert.equal(res.status, 200)
      assert.equal(res.body.length, PETS)
      assert.equal(res.body[PETS - 1].quantity, (PETS - 1) % 5)
      assert.equal(res.headers.get('etag'), entityTag(res.text))
      assert.equal(Number(res.headers.get('content-length')), Buffer.byteLength(res.text))
      const patched = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 50 + i } })
      assert.equal(patched.status, 200)
    }
    const warnings = suite.server.logs().filter((l) => String(l.msg).startsWith('cannot create a spool file'))
    assert.equal(warnings.length, 1)
    assert.deepEqual(openSpools(suite.server), [])
  })
})
