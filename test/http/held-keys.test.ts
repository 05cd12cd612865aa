// Issue 50: keys held to locations over HTTP. A shop's till key reads and writes only its own
// locations' stock: the spec's list and entry sum only them, a PATCH with no location sets its one
// location, orders allocate among them, anything out of its reach (another location, a transfer out
// of it, the ledger that shows every location) is 403 insufficient_scope and changes nothing.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { assertError, importInventory, lastSeq } from '../support/ledger-client.js'

const JSON_HEADERS = { 'content-type': 'application/json' }

for (const backend of BACKENDS) {
  describe(`keys held to locations (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    let shopA: number
    let shopB: number
    let till: string
    let twoShops: string
    const request = (method: string, path: string, body?: unknown, token = suite.token, headers: Record<string, string> = {}) =>
      suite.server.request(
        method,
        path,
        body === undefined ? { token, headers } : { token, body, headers: { ...JSON_HEADERS, ...headers } },
      )
    const makeKey = async (body: unknown) => {
      const res = await request('POST', '/v1/keys', body)
      assert.equal(res.status, 201, res.text)
      return res
    }
    const levels = async (petId: number) =>
      Object.fromEntries(
        ((await request('GET', `/v1/inventory/${petId}/locations`)).body as { locationId: number; quantity: number }[]).map((l) => [
          l.locationId,
          l.quantity,
        ]),
      )

    before(async () => {
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 6 },
        { petId: 3, quantity: 4, status: 'sold' },
      ])
      shopA = (await request('POST', '/v1/locations', { name: 'Shop A' })).body.id
      shopB = (await request('POST', '/v1/locations', { name: 'Shop B' })).body.id
      // Pet 1: default 4, A 4, B 2. Pet 2: default 6.
      await request('POST', '/v1/inventory/batch', {
        changes: [
          { petId: 1, fromLocationId: 1, toLocationId: shopA, quantity: 4 },
          { petId: 1, fromLocationId: 1, toLocationId: shopB, quantity: 2 },
        ],
      })
      const scopes = ['inventory:read', 'inventory:write', 'orders:read', 'orders:write']
      const made = await makeKey({ name: 'till-a', scopes, locations: [shopA] })
      assert.deepEqual(made.body.locations, [shopA])
      till = made.body.token
      twoShops = (await makeKey({ name: 'two-shops', scopes, locations: [shopB, shopA] })).body.token
    })

    test('When a key is held to a location, then it shows it, and a bad list of locations makes no key', async () => {
      const current = await request('GET', '/v1/keys/current', undefined, till)
      assert.deepEqual(current.body.locations, [shopA])
      const two = (await request('GET', '/v1/keys', undefined)).body.find((k: { name: string }) => k.name === 'two-shops')
      assert.deepEqual(
        two.locations,
        [shopA, shopB].sort((a, b) => a - b),
        'listed by id',
      )
      const everywhere = (await request('GET', '/v1/keys/current', undefined)).body
      assert.equal('locations' in everywhere, false, 'a key that reaches every location has no such field')
      const scopes = ['inventory:read']
      assertError(await request('POST', '/v1/keys', { name: 'k1', scopes, locations: [] }), 400, 'invalid_request')
      assertError(await request('POST', '/v1/keys', { name: 'k2', scopes, locations: [shopA, shopA] }), 400, 'invalid_request')
      assertError(await request('POST', '/v1/keys', { name: 'k3', scopes, locations: [99] }), 404, 'not_found')
      const names = (await request('GET', '/v1/keys')).body.map((k: { name: string }) => k.name)
      assert.deepEqual(
        names.filter((n: string) => n.startsWith('k')),
        [],
      )
    })

    test('When an operator holds a key to locations with the CLI, then keys list shows them; a bad list makes no key', async () => {
      const made = await suite.server.cli([
        'keys',
        'create',
        '--name',
        'till-cli',
        '--scopes',
        'inventory:read',
        '--locations',
        `${shopB},1`,
      ])
      assert.equal(made.code, 0, made.stderr)
      assert.match(made.stderr, new RegExp(`held to locations 1,${shopB}\\.`))
      const rows = (await suite.server.cli(['keys', 'list'])).stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'))
      const at = rows[0]!.indexOf('LOCATIONS')
      assert.equal(rows.find((r) => r[1] === 'till-cli')?.[at], `1,${shopB}`)
      assert.equal(rows.find((r) => r[1] === 'two-shops')?.[at], [shopA, shopB].sort((x, y) => x - y).join(','))
      for (const [list, code] of [
        ['x', 2],
        ['0', 2],
        ['99', 1],
      ] as const) {
        const refused = await suite.server.cli(['keys', 'create', '--name', `refused-${code}`, '--locations', list])
        assert.equal(refused.code, code, `--locations ${list}: ${refused.stderr}`)
      }
      assert.equal(
        rows.some((r) => r[1]?.startsWith('refused')),
        false,
      )
      assert.equal((await suite.server.cli(['keys', 'list'])).stdout.includes('refused'), false)
    })

    test('When a till reads the inventory, then each quantity is its location’s, in the list, a page and one entry', async () => {
      const list = await request('GET', '/v1/inventory', undefined, till)
      assert.equal(list.status, 200, list.text)
      assert.equal(
        list.text,
        '[{"petId":1,"quantity":4,"status":"available"},{"petId":2,"quantity":0,"status":"available"},{"petId":3,"quantity":0,"status":"sold"}]',
      )
      const etag = list.headers.get('etag')
      assert.ok(etag)
      assert.equal((await request('GET', '/v1/inventory', undefined, till, { 'if-none-match': etag })).status, 304)
      const sold = await request('GET', '/v1/inventory?status=sold', undefined, till)
      assert.equal(sold.text, '[{"petId":3,"quantity":0,"status":"sold"}]')
      const page = await request('GET', '/v1/inventory?limit=1&after=1', undefined, till)
      assert.equal(page.text, '[{"petId":2,"quantity":0,"status":"available"}]')
      const one = await request('GET', '/v1/inventory/1', undefined, till)
      assert.equal(one.text, '{"petId":1,"quantity":4,"status":"available"}')
      const both = await request('GET', '/v1/inventory/1', undefined, twoShops)
      assert.equal(both.text, '{"petId":1,"quantity":6,"status":"available"}')
      assertError(await request('GET', '/v1/inventory/77', undefined, till), 404, 'not_found')
      const everywhere = await request('GET', '/v1/inventory/1', undefined)
      assert.equal(everywhere.body.quantity, 10, 'an unheld key still sees the sum over every location')
      const own = await request('GET', '/v1/inventory/1/locations', undefined, till)
      assert.equal(own.text, `[{"petId":1,"locationId":${shopA},"quantity":4,"status":"available"}]`)
    })

    test('When a till writes with no location, then it writes its own; conditional on its own ETag', async () => {
      const read = await request('GET', '/v1/inventory/2', undefined, till)
      const patched = await request('PATCH', '/v1/inventory/2', { quantity: 3 }, till, { 'if-match': read.headers.get('etag')! })
      assert.equal(patched.status, 200, patched.text)
      assert.equal(patched.text, '{"petId":2,"quantity":3,"status":"available"}')
      const adjusted = await request('POST', '/v1/inventory/2/adjustments', { delta: 2 }, till)
      assert.equal(adjusted.text, '{"petId":2,"quantity":5,"status":"available"}')
      assert.deepEqual(await levels(2), { 1: 6, [shopA]: 5 })
      assert.equal((await request('GET', '/v1/inventory/2')).body.quantity, 11)
      assertError(
        await request('PATCH', '/v1/inventory/2', { quantity: 1 }, till, { 'if-match': read.headers.get('etag')! }),
        412,
        'precondition_failed',
      )
    })

    test('When a till reaches out of its locations, then 403 insufficient_scope, and nothing changes', async () => {
      const before = [await levels(1), await levels(2)]
      const seq = await lastSeq(suite.server, suite.token)
      const refused = await request('POST', '/v1/inventory/1/adjustments', { delta: 1, locationId: shopB }, till)
      assertError(refused, 403, 'insufficient_scope')
      assert.match(refused.body.message, new RegExp(`held to location ${shopA}; location ${shopB} is out of its reach`))
      assertError(await request('PATCH', '/v1/inventory/1', { quantity: 1, locationId: 1 }, till), 403, 'insufficient_scope')
      assertError(
        await request('POST', '/v1/inventory/1/transfers', { fromLocationId: shopA, toLocationId: shopB, quantity: 1 }, till),
        403,
        'insufficient_scope',
        'a transfer out of its reach',
      )
      const batch = await request(
        'POST',
        '/v1/inventory/batch',
        {
          changes: [
            { petId: 1, delta: 1 },
            { petId: 1, delta: 1, locationId: shopB },
          ],
        },
        till,
      )
      assertError(batch, 403, 'insufficient_scope')
      assert.match(batch.body.message, /^changes\[1\]: /)
      const two = await request('PATCH', '/v1/inventory/1', { quantity: 1 }, twoShops)
      assertError(two, 403, 'insufficient_scope', 'held to two locations, it names one')
      assert.match(two.body.message, /name one of them \(locationId\)/)
      assertError(await request('GET', `/v1/locations/${shopB}/inventory`, undefined, till), 403, 'insufficient_scope')
      assertError(await request('GET', '/v1/inventory/changes', undefined, till), 403, 'insufficient_scope')
      assertError(await request('GET', '/v1/inventory/changes/stream', undefined, till), 403, 'insufficient_scope')
      assert.deepEqual([await levels(1), await levels(2)], before)
      assert.equal(await lastSeq(suite.server, suite.token), seq)
      const own = await request('GET', `/v1/locations/${shopA}/inventory`, undefined, till)
      assert.equal(own.status, 200, own.text)
    })

    test('When a till places orders, then they take from its locations only, and it cannot cancel one taken elsewhere', async () => {
      // Pet 1: default 4, A 4, B 2.
      const mine = await request('POST', '/v1/store/orders', { petId: 1, quantity: 3 }, till)
      assert.equal(mine.status, 201, mine.text)
      assert.deepEqual(mine.body.allocations, [{ locationId: shopA, quantity: 3 }])
      const short = await request('POST', '/v1/store/orders', { petId: 1, quantity: 2 }, till)
      assertError(short, 409, 'insufficient_stock')
      assert.match(short.body.message, /has 1 in stock/)
      const split = await request('POST', '/v1/store/orders', { petId: 1, quantity: 3 }, twoShops)
      assert.deepEqual(split.body.allocations, [
        { locationId: shopB, quantity: 2 },
        { locationId: shopA, quantity: 1 },
      ])
      const elsewhere = await request('POST', '/v1/store/orders', { petId: 1, quantity: 1 })
      assert.equal('allocations' in elsewhere.body, false, 'an unheld key takes from the default location')
      assertError(await request('PATCH', `/v1/store/orders/${elsewhere.body.id}`, { status: 'cancelled' }, till), 403, 'insufficient_scope')
      const cancelled = await request('PATCH', `/v1/store/orders/${mine.body.id}`, { status: 'cancelled' }, till)
      assert.equal(cancelled.status, 200, cancelled.text)
      assert.deepEqual(await levels(1), { 1: 3, [shopA]: 3, [shopB]: 0 })
    })
  })
}
