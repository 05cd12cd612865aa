// petstore-client against a live service on each backend: exact int64s everywhere, typed errors,
// conditional writes, paging (the ledger newest first too). (Retries: retries.test.ts; the stream:
// stream.test.ts; webhooks and the packed tarball: webhooks.test.ts, package.test.ts.)
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { createClient, type InventoryChange, PetstoreConnectionError, PetstoreError } from 'petstore-client'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'

const MAX = 9223372036854775807n
const MIN = -9223372036854775808n
const BIG = 2n ** 53n + 1n // 9007199254740993: JSON.parse would read 9007199254740992

for (const backend of BACKENDS) {
  describe(`petstore-client (${backend.name})`, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: MIN, quantity: 3, status: 'sold' },
        { petId: 1, quantity: 100, status: 'available' },
        { petId: 2, quantity: 50, status: 'pending' },
        { petId: BIG, quantity: 7, status: 'available' },
        { petId: MAX, quantity: 9, status: 'available' },
      ],
    })
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })

    test('When the inventory is listed, whole or in pages, then every petId is the exact bigint, the extremes of int64 and 2^53+1 included', async () => {
      const all = await api().inventory.list()
      assert.deepEqual(
        all.map((i) => i.petId),
        [MIN, 1n, 2n, BIG, MAX],
      )
      assert.deepEqual(all.at(-1), { petId: MAX, quantity: 9, status: 'available' })
      const available = await api().inventory.list({ status: 'available' })
      assert.deepEqual(
        available.map((i) => i.petId),
        [1n, BIG, MAX],
      )
      const walked = []
      for await (const item of api().inventory.iterate({ pageSize: 2 })) walked.push(item)
      assert.deepEqual(walked, all)
      const first = await api().inventory.page({ pageSize: 2 })
      assert.deepEqual(
        first.items.map((i) => i.petId),
        [MIN, 1n],
      )
      assert.equal(first.next, 1n)
      const last = await api().inventory.page({ pageSize: 2, after: BIG })
      assert.deepEqual(last, { items: [{ petId: MAX, quantity: 9, status: 'available' }], next: undefined })
    })

    test('When an entry is read and set with its ETag, then the write lands, its ledger row is exact, and the ETag read before another writer’s change is refused with 412 leaving the entry as it was', async () => {
      const client = api()
      const { item, etag } = await client.inventory.get(BIG)
      assert.deepEqual(item, { petId: BIG, quantity: 7, status: 'available' })
      assert.match(etag, /^"[^"]+"$/)
      const set = await client.inventory.set(BIG, { quantity: 5, reason: 'arrival', note: 'crate 7' }, { ifMatch: etag })
      assert.deepEqual(set.item, { petId: BIG, quantity: 5, status: 'available' })
      assert.notEqual(set.etag, etag)

      // Someone else changes the entry meanwhile: the stale tag is refused, and nothing is written.
      await client.inventory.set(BIG, { quantity: 6 })
      const rejected = await client.inventory.set(BIG, { quantity: 1 }, { ifMatch: set.etag }).catch((e: unknown) => e)
      assert.ok(rejected instanceof PetstoreError, String(rejected))
      assert.equal(rejected.status, 412)
      assert.equal(rejected.code, 'precondition_failed')
      assert.match(rejected.requestId ?? '', /^[0-9a-f-]{36}$/)
      assert.equal((await client.inventory.get(BIG)).item.quantity, 6)

      const rows: InventoryChange[] = []
      for await (const change of client.changes.list({ petId: BIG })) rows.push(change)
      assert.deepEqual(
        rows.map((r) => [r.petId, r.previousQuantity, r.quantity, r.reason, r.note]),
        [
          [BIG, null, 7, 'import', null],
          [BIG, 7, 5, 'arrival', 'crate 7'],
          [BIG, 5, 6, 'adjustment', null],
        ],
      )
      assert.ok(rows.every((r) => (typeof r.seq === 'bigint' && typeof r.keyId === 'bigint') || r.keyId === null))
      assert.ok(rows[1]!.seq < rows[2]!.seq)
    })

    test('When orders are placed, moved and listed, then ids and petIds are exact bigints and each page follows its Link', async () => {
      const client = api()
      const placed = []
      for (const petId of [MAX, 1n, BIG, 1n, MAX]) placed.push(await client.orders.place({ petId, quantity: 1 }))
      assert.deepEqual(
        placed.map((o) => [o.petId, o.status]),
        [
          [MAX, 'placed'],
          [1n, 'placed'],
          [BIG, 'placed'],
          [1n, 'placed'],
          [MAX, 'placed'],
        ],
      )
      assert.ok(placed.every((o) => typeof o.id === 'bigint'))
      assert.equal((await client.inventory.get(MAX)).item.quantity, 7)
      const approved = await client.orders.update(placed[0]!.id, { status: 'approved' })
      assert.equal(approved.status, 'approved')
      assert.deepEqual(await client.orders.get(placed[0]!.id), approved)

      const listed = []
      for await (const order of client.orders.list({ status: 'placed', pageSize: 2 })) listed.push(order.id)
      assert.deepEqual(
        listed,
        placed.slice(1).map((o) => o.id),
      )
      const page = await client.orders.page({ pageSize: 2 })
      assert.equal(page.items.length, 2)
      assert.equal(page.next, page.items[1]!.id)

      const conflict = await client.orders.update(placed[0]!.id, { status: 'placed' }).catch((e: unknown) => e)
      assert.ok(conflict instanceof PetstoreError)
      assert.deepEqual([conflict.status, conflict.code], [409, 'invalid_transition'])
      const short = await client.orders.place({ petId: MIN, quantity: 4 }).catch((e: unknown) => e)
      assert.ok(short instanceof PetstoreError)
      assert.deepEqual([short.status, short.code], [409, 'insufficient_stock'])
      assert.equal((await client.inventory.get(MIN)).item.quantity, 3)
    })

    test('When the ledger is read newest first with before, then list and page walk it from the newest row down, the rows oldest first reversed, for the store and for one pet, and next is the before of the next page', async () => {
      const client = api()
      const oldestFirst: InventoryChange[] = []
      for await (const change of client.changes.list()) oldestFirst.push(change)
      assert.ok(oldestFirst.length >= 10, `${oldestFirst.length} rows`)
      const newestFirst: InventoryChange[] = []
      for await (const change of client.changes.list({ before: MAX, pageSize: 3 })) newestFirst.push(change)
      assert.deepEqual(newestFirst, [...oldestFirst].reverse())

      const pages: bigint[][] = []
      for (let next: bigint | undefined = MAX; next !== undefined; ) {
        const page = await client.changes.page({ before: next, pageSize: 4 })
        pages.push(page.items.map((c) => c.seq))
        if (page.next !== undefined) assert.equal(page.next, page.items.at(-1)!.seq, 'next is the oldest seq of the page')
        next = page.next
      }
      assert.deepEqual(
        pages.flat(),
        newestFirst.map((c) => c.seq),
      )
      assert.ok(pages.slice(0, -1).every((p) => p.length === 4) && pages.at(-1)!.length > 0, JSON.stringify(pages.map((p) => p.length)))

      for (const petId of [BIG, MAX]) {
        const mine = oldestFirst.filter((c) => c.petId === petId).reverse()
        assert.ok(mine.length >= 3, `pet ${petId}: ${mine.length} rows`)
        const walked: InventoryChange[] = []
        for await (const change of client.changes.list({ before: MAX, petId, pageSize: 1 })) walked.push(change)
        assert.deepEqual(walked, mine)
        const latest = await client.changes.page({ before: MAX, petId, pageSize: 2 })
        assert.deepEqual(latest, { items: mine.slice(0, 2), next: mine[1]!.seq })
        const older = await client.changes.page({ before: latest.next!, petId, pageSize: 2 })
        assert.deepEqual(older.items, mine.slice(2, 4))
      }
      // Oldest first, next is still the after of the next page.
      const first = await client.changes.page({ pageSize: 2 })
      assert.deepEqual([first.items, first.next], [oldestFirst.slice(0, 2), oldestFirst[1]!.seq])
      // @ts-expect-error: one direction per read; the service refuses both.
      const both = await client.changes.page({ before: MAX, after: 0n }).catch((e: unknown) => e)
      assert.ok(both instanceof PetstoreError, String(both))
      assert.deepEqual([both.status, both.code], [400, 'invalid_request'])
    })

    test('When a key lacks a scope, an id is unknown or a value is out of range, then each is a PetstoreError with its status and code, and nothing changes', async () => {
      const reader = createClient({
        baseUrl: `${suite.server.baseUrl}/v1`,
        token: await createKey(suite.database.url, 'reader', ['inventory:read']),
      })
      const cases: [() => Promise<unknown>, number, string][] = [
        [() => reader.inventory.set(1n, { quantity: 1 }), 403, 'insufficient_scope'],
        [() => reader.orders.place({ petId: 1n, quantity: 1 }), 403, 'insufficient_scope'],
        [() => api().inventory.get(424242n), 404, 'not_found'],
        [() => api().inventory.set(1n, { quantity: 2147483648 }), 400, 'invalid_request'],
        [() => api().orders.get(MAX), 404, 'not_found'],
        [() => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: 'psk_nope' }).inventory.list(), 401, 'unauthorized'],
      ]
      const before = await api().inventory.list()
      for (const [call, status, code] of cases) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        )
        assert.ok(error instanceof PetstoreError, `${code}: ${String(error)}`)
        assert.deepEqual([error.status, error.code], [status, code])
        assert.ok(error.message.length > 0)
        assert.match(error.requestId ?? '', /^[0-9a-f-]{36}$/)
      }
      assert.deepEqual(await api().inventory.list(), before)
      assert.deepEqual((await reader.keys.current()).scopes, ['inventory:read'])
    })

    test('When an id is not a bigint, then the call is refused before anything is sent', async () => {
      // @ts-expect-error: a number would lose digits past 2^53; the types ask for a bigint.
      await assert.rejects(api().inventory.get(1), /must be a bigint/)
    })

    test('When keys and webhooks are managed, then their ids are bigints that address them', async () => {
      const client = api()
      const key = await client.keys.create({ name: 'pos-1', scopes: ['inventory:read'] })
      assert.equal(typeof key.id, 'bigint')
      assert.match(key.token, /^psk_/)
      assert.deepEqual((await client.keys.get(key.id)).scopes, ['inventory:read'])
      assert.ok((await client.keys.list()).some((k) => k.id === key.id))
      await client.keys.revoke(key.id)
      assert.ok(!(await client.keys.list()).some((k) => k.id === key.id))
      const revoked = await createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: key.token })
        .inventory.list()
        .catch((e: unknown) => e)
      assert.ok(revoked instanceof PetstoreError && revoked.status === 401)
    })
  })
}

describe('petstore-client without a service', () => {
  test('When nothing listens at the base URL, then the call fails with a PetstoreConnectionError, not a PetstoreError', async () => {
    // A port that was just free: nothing listens there now.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise((resolve) => probe.close(resolve))
    const api = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, token: 'psk_x', maxRetries: 1 })
    const error = await api.inventory.list().catch((e: unknown) => e)
    assert.ok(error instanceof PetstoreConnectionError, String(error))
    assert.ok(!(error instanceof PetstoreError))
    assert.match(error.message, /ECONNREFUSED/)
  })
})
