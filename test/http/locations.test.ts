// Issue 50: locations over HTTP. The default location as a one-location store sees it; locations
// created, renamed, deactivated only when empty (admin); stock per location (a page of one location,
// one pet everywhere); transfers with their two ledger rows; sets, adjustments and batches at a
// location; orders and holds allocated across locations and given back where taken; Idempotency-Key;
// scopes; and bad input that changes nothing, checked afterwards.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import type { AddressInfo } from 'node:net'
import { feedTexts, openStream, until } from '../changes/sse.js'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey } from '../support/helpers.js'
import {
  assertChangeShape,
  assertError,
  assertOrderShape,
  changesSince,
  importInventory,
  lastSeq,
  nextLink,
} from '../support/ledger-client.js'

const BIG = 9007199254740993n
const JSON_HEADERS = { 'content-type': 'application/json' }
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A body as raw JSON, petIds (bigint) written digit for digit. */
const raw = (body: unknown) => JSON.stringify(body, (_, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1')

for (const backend of BACKENDS) {
  describe(`locations (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let reader: string
    let clerk: string
    let shopA: number
    let shopB: number
    before(async () => {
      reader = await createKey(suite.server, 'stock-reader', ['inventory:read'])
      clerk = await createKey(suite.server, 'stock-clerk', ['inventory:read', 'inventory:write', 'orders:write'])
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 5, status: 'pending' },
        { petId: BIG, quantity: 20 },
        ...Array.from({ length: 5 }, (_, i) => ({ petId: 100 + i, quantity: 9 })),
      ])
    })

    const request = (method: string, path: string, body?: unknown, token = suite.token, headers: Record<string, string> = {}) =>
      suite.server.request(
        method,
        path,
        body === undefined ? { token, headers } : { token, rawBody: raw(body), headers: { ...JSON_HEADERS, ...headers } },
      )
    const levels = async (petId: bigint | number) => {
      const res = await request('GET', `/v1/inventory/${petId}/locations`)
      assert.equal(res.status, 200, res.text)
      return Object.fromEntries((res.body as { locationId: number; quantity: number }[]).map((l) => [l.locationId, l.quantity]))
    }
    const total = async (petId: bigint | number) => (await request('GET', `/v1/inventory/${petId}`)).body.quantity as number
    const create = async (name: string) => {
      const res = await request('POST', '/v1/locations', { name })
      assert.equal(res.status, 201, res.text)
      return res
    }

    test('When the store has one location, then it is the default one, holding every entry, and the spec’s list is unchanged', async () => {
      const res = await request('GET', '/v1/locations', undefined, reader)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.length, 1)
      const [only] = res.body
      assert.deepEqual(Object.keys(only).sort(), ['active', 'createdAt', 'id', 'name', 'updatedAt'])
      assert.deepEqual([only.id, only.name, only.active], [1, 'Default', true])
      assert.match(only.createdAt, TIME)
      const one = await request('GET', `/v1/inventory/${BIG}/locations`, undefined, reader)
      assert.equal(one.text, `[{"petId":${BIG},"locationId":1,"quantity":20,"status":"available"}]`)
      const list = await request('GET', '/v1/inventory', undefined, reader)
      assert.ok(list.text.startsWith('[{"petId":1,"quantity":10,"status":"available"},{"petId":2,"quantity":5,"status":"pending"}'))
      const atDefault = await request('GET', '/v1/locations/1/inventory?limit=2', undefined, reader)
      assert.equal(
        atDefault.text,
        '[{"petId":1,"locationId":1,"quantity":10,"status":"available"},{"petId":2,"locationId":1,"quantity":5,"status":"pending"}]',
      )
      assert.deepEqual(nextLink(atDefault, '/v1/locations/1/inventory'), { after: '2', limit: '2' })
    })

    test('When an admin creates locations, then 201 with its Location; a name taken (case aside), a bad name or another scope change nothing', async () => {
      const a = await create('Shop A')
      shopA = a.body.id
      assert.equal(a.headers.get('location'), `/v1/locations/${shopA}`)
      assert.deepEqual([a.body.name, a.body.active], ['Shop A', true])
      shopB = (await create('Shop B')).body.id
      assertError(await request('POST', '/v1/locations', { name: 'shop a' }), 409, 'location_name_taken')
      for (const name of ['', '   ', 'x'.repeat(101), 'tab\there', 'nul\u0000'])
        assertError(await request('POST', '/v1/locations', { name }), 400, 'invalid_request', JSON.stringify(name))
      assertError(await request('POST', '/v1/locations', { name: 'Shop C', active: false }), 400, 'invalid_request')
      assertError(await request('POST', '/v1/locations', { name: 'Shop C' }, clerk), 403, 'insufficient_scope')
      const list = await request('GET', '/v1/locations', undefined, reader)
      assert.deepEqual(
        list.body.map((l: { name: string }) => l.name),
        ['Default', 'Shop A', 'Shop B'],
      )
      const one = await request('GET', `/v1/locations/${shopA}`, undefined, reader)
      assert.equal(one.text, a.text)
      assertError(await request('GET', '/v1/locations/99', undefined, reader), 404, 'not_found')
      assertError(await request('GET', '/v1/locations/99999999999999', undefined, reader), 404, 'not_found')
      assertError(await request('GET', '/v1/locations/x', undefined, reader), 400, 'invalid_request')
    })

    test('When units are transferred, then both locations are answered, the entry is unchanged, and two rows share the transfer id', async () => {
      const after = await lastSeq(suite.server, suite.token)
      const res = await request(
        'POST',
        `/v1/inventory/${BIG}/transfers`,
        { fromLocationId: 1, toLocationId: shopA, quantity: 6, note: 'van 2' },
        clerk,
      )
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(Object.keys(res.body).sort(), ['from', 'locationId', 'petId', 'quantity', 'status', 'transferId'])
      assert.deepEqual(
        [res.body.petId, res.body.locationId, res.body.quantity, res.body.from],
        [BIG, shopA, 6, { locationId: 1, quantity: 14 }],
      )
      assert.match(res.body.transferId, UUID)
      assert.equal(await total(BIG), 20)
      assert.deepEqual(await levels(BIG), { 1: 14, [shopA]: 6 })
      const rows = await changesSince(suite.server, suite.token, after)
      for (const row of rows) assertChangeShape(row)
      assert.deepEqual(
        rows.map((r) => [r.petId, r.locationId, r.previousQuantity, r.quantity, r.reason, r.transferId, r.note]),
        [
          [BIG, undefined, 20, 14, 'transfer', res.body.transferId, 'van 2'],
          [BIG, shopA, 0, 6, 'transfer', res.body.transferId, 'van 2'],
        ],
      )
    })

    test('When a transfer is bad, then 400, 404 or 409 with the Error shape, and nothing moves', async () => {
      const before = await levels(BIG)
      const seq = await lastSeq(suite.server, suite.token)
      const transfer = (body: unknown, token = clerk) => request('POST', `/v1/inventory/${BIG}/transfers`, body, token)
      assertError(await transfer({ fromLocationId: shopA, toLocationId: shopA, quantity: 1 }), 400, 'invalid_request', 'same location')
      assertError(await transfer({ fromLocationId: 1, toLocationId: shopA, quantity: 0 }), 400, 'invalid_request', '0 units')
      assertError(
        await transfer({ fromLocationId: 1, toLocationId: shopA, quantity: 1, extra: 1 }),
        400,
        'invalid_request',
        'unknown field',
      )
      assertError(await transfer({ fromLocationId: 1, toLocationId: 2147483648, quantity: 1 }), 400, 'invalid_request', 'id past int32')
      assertError(await transfer({ fromLocationId: 1, toLocationId: 77, quantity: 1 }), 404, 'not_found', 'unknown location')
      assertError(
        await transfer({ fromLocationId: shopA, toLocationId: 1, quantity: 7 }),
        409,
        'insufficient_stock',
        'more than the source',
      )
      assertError(await transfer({ fromLocationId: 1, toLocationId: shopA, quantity: 1 }, reader), 403, 'insufficient_scope')
      assertError(
        await request('POST', '/v1/inventory/424242/transfers', { fromLocationId: 1, toLocationId: shopA, quantity: 1 }, clerk),
        404,
        'not_found',
      )
      const short = await transfer({ fromLocationId: shopA, toLocationId: 1, quantity: 7 })
      assert.match(short.body.message, /has 6 in stock at location \d+; moving 7 to location 1/)
      assert.deepEqual(await levels(BIG), before)
      assert.equal(await lastSeq(suite.server, suite.token), seq)
    })

    test('When a transfer is retried with its Idempotency-Key, then the first answer comes back and it moves once', async () => {
      const headers = { 'idempotency-key': 'move-once-1' }
      const body = { fromLocationId: 1, toLocationId: shopB, quantity: 2 }
      const first = await request('POST', '/v1/inventory/1/transfers', body, clerk, headers)
      const again = await request('POST', '/v1/inventory/1/transfers', body, clerk, headers)
      assert.equal(again.status, 200)
      assert.equal(again.text, first.text)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.deepEqual(await levels(1), { 1: 8, [shopB]: 2 })
      assertError(
        await request('POST', '/v1/inventory/1/transfers', { ...body, quantity: 3 }, clerk, headers),
        409,
        'idempotency_key_reused',
      )
    })

    test('When stock is set or adjusted at a location, then the adjustment answers that location and PATCH the entry in all', async () => {
      const adjusted = await request('POST', '/v1/inventory/100/adjustments', { delta: 4, reason: 'arrival', locationId: shopA }, clerk)
      assert.equal(adjusted.status, 200, adjusted.text)
      assert.equal(adjusted.text, `{"petId":100,"locationId":${shopA},"quantity":4,"status":"available"}`)
      const patched = await request('PATCH', '/v1/inventory/100', { quantity: 7, locationId: shopB }, clerk)
      assert.equal(patched.status, 200, patched.text)
      assert.equal(patched.text, '{"petId":100,"quantity":20,"status":"available"}')
      const plain = await request('PATCH', '/v1/inventory/100', { quantity: 1 }, clerk)
      assert.equal(
        plain.text,
        '{"petId":100,"quantity":12,"status":"available"}',
        'a PATCH with no location sets the default location’s stock',
      )
      assert.deepEqual(await levels(100), { 1: 1, [shopA]: 4, [shopB]: 7 })
      assertError(
        await request('PATCH', '/v1/inventory/100', { quantity: 5, expectedQuantity: 3, locationId: shopA }, clerk),
        409,
        'quantity_mismatch',
      )
      assertError(
        await request('POST', '/v1/inventory/100/adjustments', { delta: -5, locationId: shopA }, clerk),
        409,
        'insufficient_stock',
      )
      assertError(await request('PATCH', '/v1/inventory/100', { quantity: 5, locationId: 0 }, clerk), 400, 'invalid_request')
      assertError(await request('PATCH', '/v1/inventory/100', { quantity: 5, locationId: 88 }, clerk), 404, 'not_found')
      assert.deepEqual(await levels(100), { 1: 1, [shopA]: 4, [shopB]: 7 })
    })

    test('When a batch names locations and transfers, then each change answers where it applied, and a refused one names its place', async () => {
      const res = await request(
        'POST',
        '/v1/inventory/batch',
        {
          changes: [
            { petId: 101, quantity: 3, locationId: shopA, reason: 'count' },
            { petId: 101, fromLocationId: 1, toLocationId: shopB, quantity: 4 },
            { petId: 101, delta: -1 },
          ],
        },
        clerk,
      )
      assert.equal(res.status, 200, res.text)
      const [set, moved, plain] = res.body.entries
      assert.deepEqual(set, { petId: 101n, locationId: shopA, quantity: 3, status: 'available' })
      assert.deepEqual(
        { ...moved, transferId: '' },
        { petId: 101n, locationId: shopB, quantity: 4, status: 'available', transferId: '', from: { locationId: 1, quantity: 5 } },
      )
      assert.deepEqual(plain, { petId: 101n, quantity: 11, status: 'available' })
      assert.deepEqual(await levels(101), { 1: 4, [shopA]: 3, [shopB]: 4 })
      const seq = await lastSeq(suite.server, suite.token)
      for (const [change, status, code] of [
        [{ petId: 101, fromLocationId: 1, toLocationId: 1, quantity: 1 }, 400, 'invalid_request'],
        [{ petId: 101, fromLocationId: 1, quantity: 1 }, 400, 'invalid_request'],
        [{ petId: 101, fromLocationId: 1, toLocationId: shopA, quantity: 1, delta: 1 }, 400, 'invalid_request'],
        [{ petId: 101, delta: 1, locationId: 55 }, 404, 'not_found'],
        [{ petId: 101, fromLocationId: shopB, toLocationId: shopA, quantity: 5 }, 409, 'insufficient_stock'],
      ] as const) {
        const refused = await request('POST', '/v1/inventory/batch', { changes: [{ petId: 101, delta: 1 }, change] }, clerk)
        assertError(refused, status, code, JSON.stringify(change))
        if (status !== 400) assert.match(refused.body.message, /^changes\[1\]: /)
      }
      assert.deepEqual(await levels(101), { 1: 4, [shopA]: 3, [shopB]: 4 })
      assert.equal(await lastSeq(suite.server, suite.token), seq)
    })

    test('When orders name no location, then the allocation rule picks where, the order shows it, and a cancellation gives it back there', async () => {
      // Pet 102: default 1, A 5, B 3.
      await request('POST', '/v1/inventory/batch', {
        changes: [
          { petId: 102, fromLocationId: 1, toLocationId: shopA, quantity: 5 },
          { petId: 102, fromLocationId: 1, toLocationId: shopB, quantity: 3 },
        ],
      })
      const place = (body: unknown) => request('POST', '/v1/store/orders', body, clerk)
      const a = await place({ petId: 102, quantity: 4 })
      assert.equal(a.status, 201, a.text)
      assertOrderShape(a.body)
      assert.deepEqual(a.body.allocations, [{ locationId: shopA, quantity: 4 }])
      const fromB = await place({ petId: 102, quantity: 3 })
      assert.deepEqual(fromB.body.allocations, [{ locationId: shopB, quantity: 3 }], 'default 1, A 1, B 3: B covers it alone')
      // Default 1, A 1, B 0.
      const split = await place({ petId: 102, quantity: 2 })
      assert.deepEqual(split.body.allocations, [
        { locationId: 1, quantity: 1 },
        { locationId: shopA, quantity: 1 },
      ])
      assert.equal(await total(102), 0)
      assertError(await place({ petId: 102, quantity: 1 }), 409, 'insufficient_stock')
      const read = await request('GET', `/v1/store/orders/${split.body.id}`, undefined, suite.token)
      assert.equal(read.text, split.text)
      const cancelled = await request('PATCH', `/v1/store/orders/${split.body.id}`, { status: 'cancelled' }, clerk)
      assert.equal(cancelled.status, 200, cancelled.text)
      assert.deepEqual(await levels(102), { 1: 1, [shopA]: 1, [shopB]: 0 })
      const named = await place({ petId: 102, quantity: 1, locationId: shopA })
      assert.deepEqual(named.body.allocations, [{ locationId: shopA, quantity: 1 }])
      const atDefault = await place({ petId: 102, quantity: 1, locationId: 1 })
      assert.equal('allocations' in atDefault.body, false, 'all from the default location: no allocations shown')
      assertError(await place({ petId: 102, quantity: 1, locationId: shopB }), 409, 'insufficient_stock')
      assertError(await place({ petId: 102, quantity: 1, locationId: 66 }), 404, 'not_found')
      assert.deepEqual(await levels(102), { 1: 0, [shopA]: 0, [shopB]: 0 })
    })

    test('When a hold names a line’s location or lets the rule choose, then its lines show where, and releasing gives them back there', async () => {
      // Pet 103: default 9; 6 of them to A.
      await request('POST', '/v1/inventory/103/transfers', { fromLocationId: 1, toLocationId: shopA, quantity: 6 })
      const res = await request('POST', '/v1/store/reservations', {
        lines: [
          { petId: 103, quantity: 5 },
          { petId: 104, quantity: 2, locationId: 1 },
        ],
      })
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(res.body.lines, [
        { petId: 103n, quantity: 5, orderId: null, allocations: [{ locationId: shopA, quantity: 5 }] },
        { petId: 104n, quantity: 2, orderId: null },
      ])
      assert.deepEqual(await levels(103), { 1: 3, [shopA]: 1 })
      const released = await request('POST', `/v1/store/reservations/${res.body.id}/release`)
      assert.equal(released.status, 200, released.text)
      assert.deepEqual(await levels(103), { 1: 3, [shopA]: 6 })
      assertError(
        await request('POST', '/v1/store/reservations', { lines: [{ petId: 103, quantity: 1, locationId: 66 }] }),
        404,
        'not_found',
      )
      assertError(
        await request('POST', '/v1/store/reservations', { lines: [{ petId: 103, quantity: 4, locationId: 1 }] }),
        409,
        'insufficient_stock',
      )
    })

    test('When a location holds stock, then it cannot be deactivated; emptied, it can, and writes naming it are 400 location_inactive', async () => {
      const probe = (await create('Pop-up')).body.id
      await request('POST', '/v1/inventory/1/transfers', { fromLocationId: 1, toLocationId: probe, quantity: 1 })
      const refused = await request('PATCH', `/v1/locations/${probe}`, { active: false })
      assertError(refused, 409, 'location_not_empty')
      assert.match(refused.body.message, /holds 1 unit of 1 pet;/)
      assertError(await request('PATCH', '/v1/locations/1', { active: false }), 400, 'invalid_request', 'the default location')
      assertError(await request('PATCH', `/v1/locations/${probe}`, {}), 400, 'invalid_request', 'an empty update')
      assertError(await request('PATCH', `/v1/locations/${probe}`, { name: 'shop a' }), 409, 'location_name_taken')
      assertError(await request('PATCH', `/v1/locations/${probe}`, { active: false }, clerk), 403, 'insufficient_scope')
      assertError(await request('PATCH', '/v1/locations/4242', { active: false }), 404, 'not_found')
      await request('POST', '/v1/inventory/1/transfers', { fromLocationId: probe, toLocationId: 1, quantity: 1 })
      const closed = await request('PATCH', `/v1/locations/${probe}`, { active: false, name: 'Pop-up (closed)' })
      assert.equal(closed.status, 200, closed.text)
      assert.deepEqual([closed.body.active, closed.body.name], [false, 'Pop-up (closed)'])
      assertError(await request('POST', '/v1/inventory/1/adjustments', { delta: 1, locationId: probe }, clerk), 400, 'location_inactive')
      assertError(
        await request('POST', '/v1/inventory/1/transfers', { fromLocationId: 1, toLocationId: probe, quantity: 1 }),
        400,
        'location_inactive',
      )
      assert.equal(Object.hasOwn(await levels(1), String(probe)), false, 'an inactive location is not listed for a pet')
      const reopened = await request('PATCH', `/v1/locations/${probe}`, { active: true })
      assert.equal(reopened.body.active, true)
    })

    test('When one location’s stock is paged, then by petId with a Link, of one status when asked, 404 for an unknown location', async () => {
      const first = await request('GET', `/v1/locations/${shopA}/inventory?limit=2`, undefined, reader)
      assert.equal(first.status, 200, first.text)
      assert.deepEqual(
        first.body.map((l: { petId: bigint; locationId: number }) => [l.petId, l.locationId]),
        [
          [100n, shopA],
          [101n, shopA],
        ],
      )
      const link = nextLink(first, `/v1/locations/${shopA}/inventory`)
      assert.deepEqual(link, { after: '101', limit: '2' })
      const rest = await request('GET', `/v1/locations/${shopA}/inventory?after=101&limit=100`, undefined, reader)
      assert.deepEqual(
        rest.body.map((l: { petId: bigint }) => l.petId),
        [102n, 103n, BIG],
      )
      const pending = await request('GET', '/v1/locations/1/inventory?status=pending', undefined, reader)
      assert.equal(pending.text, '[{"petId":2,"locationId":1,"quantity":5,"status":"pending"}]')
      assertError(await request('GET', '/v1/locations/999/inventory', undefined, reader), 404, 'not_found')
      assertError(await request('GET', `/v1/locations/${shopA}/inventory?limit=0`, undefined, reader), 400, 'invalid_request')
      assertError(await request('GET', '/v1/inventory/999/locations', undefined, reader), 404, 'not_found')
    })

    test('When units are transferred with the change stream open, then its events are the feed’s rows byte for byte, each with its locationId and transferId', async () => {
      await suite.server.app.listen({ port: 0, host: '127.0.0.1' })
      const baseUrl = `http://127.0.0.1:${(suite.server.app.server.address() as AddressInfo).port}`
      const client = await openStream(baseUrl, { token: suite.token })
      try {
        assert.equal(client.status, 200)
        await until(() => client.blocks.length > 0, 5000, 'the preamble')
        const first = client.blocks[0]
        assert.ok(first?.kind === 'retry')
        const start = Number(first.id)
        const moved = await request('POST', '/v1/inventory/104/transfers', { fromLocationId: 1, toLocationId: shopA, quantity: 2 }, clerk)
        assert.equal(moved.status, 200, moved.text)
        const feed = await feedTexts(baseUrl, suite.token, start)
        assert.equal(feed.length, 2)
        await until(() => client.events.length >= 2, 5000, '2 events')
        assert.deepEqual(
          client.events.map((e) => e.data),
          feed,
        )
        assert.match(feed[0]!, new RegExp(`"reason":"transfer".*"transferId":"${moved.body.transferId}"}$`))
        assert.doesNotMatch(feed[0]!, /"locationId"/, 'the default location’s row names none')
        assert.match(feed[1]!, new RegExp(`"locationId":${shopA},"transferId":"${moved.body.transferId}"}$`))
      } finally {
        await client.close()
      }
    })
  })
}
