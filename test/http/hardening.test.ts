// What an attacker tries over HTTP (OWASP API Security Top 10, 2023): bad keys sent without end,
// undeclared query parameters, secrets in URLs, traversal of the docs page's files, responses a browser
// might sniff or cache. Held connections, file modes and the metrics listener: test/operations/hardening.test.ts.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { startApp, useAppSuite } from '../support/app.js'
import { BACKENDS, createKey, seed, useResources, useSuite, type TestServer } from '../support/helpers.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!

/** One raw HTTP/1.1 exchange, the request sent byte for byte as given (no URL normalisation). */
function rawExchange(server: TestServer, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1')
    let data = ''
    socket.on('data', (d) => (data += d))
    socket.on('error', reject)
    socket.on('close', () => resolve(data))
    socket.write(request)
  })
}

const rawStatus = (raw: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1])
const rawHeader = (raw: string, name: string) =>
  new RegExp(`^${name}: (.*)$`, 'im').exec(raw.slice(0, raw.indexOf('\r\n\r\n')))?.[1]?.trim()
const rawBody = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))

for (const backend of BACKENDS) {
  describe(`keys that are not valid are throttled (${backend.name})`, () => {
    const resources = useResources()

    test('When a key that was verified is revoked, then every later use counts against RATE_LIMIT_PER_ADDRESS, 401 with error="invalid_token" until 429', async (t) => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'soon-revoked')
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      const server = await startApp(database.url, {
        RATE_LIMIT_PER_ADDRESS: '3',
        RATE_LIMIT_PER_KEY: '1000',
        RATE_LIMIT_WINDOW_S: '86400',
      })
      t.after(() => server.close())
      // Its first use is counted per address (1 of 3): the key is not verified yet.
      assert.equal((await server.request('GET', '/v1/inventory/1', { token })).status, 200)
      const revoked = await server.cli(['keys', 'revoke', 'soon-revoked'])
      assert.equal(revoked.code, 0, revoked.stderr)
      const answers = []
      for (let i = 0; i < 4; i++) answers.push(await server.request('GET', '/v1/inventory/1', { token }))
      assert.deepEqual(
        answers.map((r) => r.status),
        [401, 401, 429, 429],
      )
      for (const res of answers.slice(0, 2)) {
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore", error="invalid_token"')
        assert.equal(res.body.code, 'unauthorized')
      }
      assert.equal(answers[2]!.body.code, 'rate_limited')
      assert.match(answers[2]!.headers.get('ratelimit') ?? '', /"per-address";r=0;/)
    })
  })

  describe(`undeclared query parameters (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      seed: [
        { petId: 1, quantity: 5, status: 'available' },
        { petId: 2, quantity: 5, status: 'sold' },
      ],
    })

    /** A request for each operation that would succeed without the extra parameter (a body made when sent, where it names what the test made). */
    const cases: Record<string, { method: string; path: (orderId: string) => string; body?: unknown }> = {
      listInventory: { method: 'GET', path: () => '/v1/inventory' },
      getInventoryItem: { method: 'GET', path: () => '/v1/inventory/1' },
      updateInventory: { method: 'PATCH', path: () => '/v1/inventory/1', body: { quantity: 9 } },
      adjustInventory: { method: 'POST', path: () => '/v1/inventory/1/adjustments', body: { delta: 1 } },
      applyInventoryBatch: { method: 'POST', path: () => '/v1/inventory/batch', body: { changes: [{ petId: 1, delta: 1 }] } },
      listInventoryChanges: { method: 'GET', path: () => '/v1/inventory/changes' },
      // Refused before the handler: a stream never opens (one that did would never end).
      streamInventoryChanges: { method: 'GET', path: () => '/v1/inventory/changes/stream' },
      placeOrder: { method: 'POST', path: () => '/v1/store/orders', body: { petId: 1, quantity: 1 } },
      listOrders: { method: 'GET', path: () => '/v1/store/orders' },
      getOrder: { method: 'GET', path: (id) => `/v1/store/orders/${id}` },
      updateOrder: { method: 'PATCH', path: (id) => `/v1/store/orders/${id}`, body: { status: 'approved' } },
      createReservation: { method: 'POST', path: () => '/v1/store/reservations', body: { lines: [{ petId: 1, quantity: 1 }] } },
      listReservations: { method: 'GET', path: () => '/v1/store/reservations' },
      getReservation: { method: 'GET', path: () => `/v1/store/reservations/${holdId}` },
      extendReservation: { method: 'POST', path: () => `/v1/store/reservations/${holdId}/extend`, body: { expiresInSeconds: 60 } },
      releaseReservation: { method: 'POST', path: () => `/v1/store/reservations/${holdId}/release` },
      confirmReservation: { method: 'POST', path: () => `/v1/store/reservations/${holdId}/confirm` },
      getPetById: { method: 'GET', path: () => '/v1/pets/1' },
      listDeprecatedCalls: { method: 'GET', path: () => '/v1/deprecations' },
      listKeys: { method: 'GET', path: () => '/v1/keys' },
      createKey: { method: 'POST', path: () => '/v1/keys', body: { name: 'by-query', scopes: ['admin'] } },
      getCurrentKey: { method: 'GET', path: () => '/v1/keys/current' },
      getKey: { method: 'GET', path: () => `/v1/keys/${spareKeyId}` },
      revokeKey: { method: 'DELETE', path: () => `/v1/keys/${spareKeyId}` },
      listWebhooks: { method: 'GET', path: () => '/v1/webhooks' },
      createWebhook: { method: 'POST', path: () => '/v1/webhooks', body: { url: 'https://example.com/by-query' } },
      getWebhook: { method: 'GET', path: () => `/v1/webhooks/${webhookId}` },
      deleteWebhook: { method: 'DELETE', path: () => `/v1/webhooks/${webhookId}` },
      enableWebhook: { method: 'POST', path: () => `/v1/webhooks/${webhookId}/enable` },
      listLocations: { method: 'GET', path: () => '/v1/locations' },
      createLocation: { method: 'POST', path: () => '/v1/locations', body: { name: 'By Query' } },
      getLocation: { method: 'GET', path: () => `/v1/locations/${locationId}` },
      updateLocation: { method: 'PATCH', path: () => `/v1/locations/${locationId}`, body: { name: 'Renamed By Query' } },
      listLocationInventory: { method: 'GET', path: () => `/v1/locations/${locationId}/inventory` },
      getInventoryLocations: { method: 'GET', path: () => '/v1/inventory/1/locations' },
      transferInventory: {
        method: 'POST',
        path: () => '/v1/inventory/1/transfers',
        body: () => ({ fromLocationId: 1, toLocationId: locationId, quantity: 1 }),
      },
    }
    let spareKeyId = 0
    let locationId = 0
    let webhookId = 0
    let holdId = 0

    test('When any operation of the document is sent a query parameter it does not declare, then 400 and nothing changes', async () => {
      const { server, token } = suite
      const placed = await server.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1 } })
      assert.equal(placed.status, 201, placed.text)
      const orderId = String(placed.body.id)
      await createKey(server, 'spare', ['pets:read'])
      spareKeyId = (await server.request('GET', '/v1/keys', { token })).body.find((k: { name: string }) => k.name === 'spare').id
      // Before the webhook, which starts at the ledger's end: it has no row of the hold to deliver.
      const hold = await server.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1 }] } })
      assert.equal(hold.status, 201, hold.text)
      holdId = hold.body.id
      const webhook = await server.request('POST', '/v1/webhooks', { token, body: { url: 'https://example.com/hook' } })
      assert.equal(webhook.status, 201, webhook.text)
      webhookId = webhook.body.id
      const location = await server.request('POST', '/v1/locations', { token, body: { name: 'Harbour Street' } })
      assert.equal(location.status, 201, location.text)
      locationId = location.body.id
      const state = async () => ({
        holds: (await server.request('GET', '/v1/store/reservations', { token })).text,
        keys: (await server.request('GET', '/v1/keys', { token })).text,
        inventory: (await server.request('GET', '/v1/inventory', { token })).text,
        orders: (await server.request('GET', '/v1/store/orders', { token })).text,
        changes: (await server.request('GET', '/v1/inventory/changes', { token })).text,
        webhooks: (await server.request('GET', '/v1/webhooks', { token })).text,
        locations: (await server.request('GET', '/v1/locations', { token })).text,
        stockThere: (await server.request('GET', `/v1/locations/${locationId}/inventory`, { token })).text,
        petStock: (await server.request('GET', '/v1/inventory/1/locations', { token })).text,
      })
      const before = await state()
      const doc = (await server.request('GET', '/v1/openapi.json')).body
      const operations = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) =>
        Object.values(ops).map((op) => op.operationId),
      )
      assert.deepEqual([...operations].sort(), Object.keys(cases).sort(), 'every operation has a case here')
      for (const operationId of operations) {
        const { method, path, body } = cases[operationId]!
        for (const query of ['foo=1', 'access_token=x', 'status=sold&foo=']) {
          const declared = [
            'listInventory',
            'listOrders',
            'listReservations',
            'listInventoryChanges',
            'streamInventoryChanges',
            'listLocationInventory',
          ].includes(operationId)
          // A declared filter is not undeclared: keep only the extra parameter for those operations.
          const sent = declared ? 'foo=1' : query
          const res = await server.request(method, `${path(orderId)}?${sent}`, { token, body: typeof body === 'function' ? body() : body })
          assert.equal(res.status, 400, `${operationId}?${sent}: ${res.text}`)
          assert.equal(res.body.code, 'invalid_request')
          assert.match(res.body.message, /unknown query parameter/)
        }
      }
      assert.deepEqual(await state(), before, 'nothing changed')
    })

    test('When an operation that cannot filter is asked to filter by status, then 400 rather than the unfiltered answer', async () => {
      const res = await suite.server.request('GET', '/v1/inventory/2?status=available', { token: suite.token })
      assert.equal(res.status, 400)
      assert.deepEqual(res.body, {
        code: 'invalid_request',
        message: 'unknown query parameter "status"; this operation takes no query parameters',
        status: 400,
      })
    })
  })
}

describe('what the service writes down and sends (sqlite)', () => {
  const suite = useSuite(sqlite, { seed: [{ petId: 1, quantity: 5, status: 'available' }] })

  test('When a request carries X-Request-Id, then its log line carries it too', async () => {
    const res = await suite.server.request('GET', '/v1/inventory', { token: suite.token, headers: { 'x-request-id': 'trace-abc-123' } })
    assert.equal(res.status, 200)
    const line = await suite.server.waitForLog((l) => l.reqId === 'trace-abc-123' && l.msg === 'request')
    assert.equal(line.statusCode, 200)
  })

  test('When a key is sent in the query string, then the request log has the route and the path, and no query value', async () => {
    const secret = `psk_${'Q'.repeat(43)}`
    const res = await suite.server.request('GET', `/v1/inventory/1?access_token=${secret}`, {
      token: suite.token,
      headers: { 'x-request-id': 'query-secret' },
    })
    assert.equal(res.status, 400)
    const line = await suite.server.waitForLog((l) => l.reqId === 'query-secret' && l.msg === 'request')
    assert.equal(line.path, '/v1/inventory/1')
    assert.equal(line.route, '/v1/inventory/:petId')
    assert.equal(line.url, undefined)
    assert.ok(!suite.server.stdoutLines.some((l) => l.includes(secret)), 'the secret is nowhere in the log')
  })

  test('When the docs page is asked for a file outside its folder, in any encoding, then 404 with an Error body, logged at info', async () => {
    const targets = [
      '/v1/docs/static/../../../package.json',
      '/v1/docs/static/%2e%2e/%2e%2e/%2e%2e/package.json',
      '/v1/docs/static/..%5c..%5c..%5cpackage.json',
      '/v1/docs/static/%2e%2e%2f%2e%2e%2fpackage.json',
    ]
    for (const [i, target] of targets.entries()) {
      const raw = await rawExchange(
        suite.server,
        `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: traversal-${i}\r\nConnection: close\r\n\r\n`,
      )
      assert.equal(rawStatus(raw), 404, `${target}: ${raw.slice(0, 200)}`)
      assert.deepEqual(rawBody(raw), { code: 'not_found', message: rawBody(raw).message, status: 404 })
      assert.equal(rawHeader(raw, 'x-content-type-options'), 'nosniff')
      const logged = await suite.server.waitForLog((l) => l.reqId === `traversal-${i}` && l.msg === 'request')
      assert.equal(logged.statusCode, 404)
    }
    const loud = suite.server.logs().filter((l) => String(l.reqId).startsWith('traversal-') && Number(l.level) > 30)
    assert.deepEqual(loud, [], 'nothing above info')
    // A file that is there is still served.
    assert.equal((await fetch(`${suite.server.baseUrl}/v1/docs/static/swagger-ui.css`)).status, 200)
  })

  test('When a Range asks for bytes beyond a docs asset, then the asset is served whole rather than a 500', async () => {
    const res = await fetch(`${suite.server.baseUrl}/v1/docs/static/swagger-ui.css`, { headers: { range: 'bytes=99999999-' } })
    assert.equal(res.status, 200)
    assert.ok((await res.text()).length > 1000)
  })

  test('When anything is answered, then it carries nosniff; authenticated answers say how they may be cached', async () => {
    const { server, token } = suite
    const list = await server.request('GET', '/v1/inventory', { token })
    const one = await server.request('GET', '/v1/inventory/1', { token })
    const unchanged = await server.request('GET', '/v1/inventory/1', { token, headers: { 'if-none-match': one.headers.get('etag')! } })
    assert.equal(unchanged.status, 304)
    for (const res of [list, one, unchanged]) assert.equal(res.headers.get('cache-control'), 'private, no-cache')
    const patched = await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 6 } })
    const unauthenticated = await server.request('GET', '/v1/inventory')
    const missing = await server.request('GET', '/v1/inventory/404', { token })
    const orders = await server.request('GET', '/v1/store/orders', { token })
    const pet = await server.request('GET', '/v1/pets/1', { token })
    for (const res of [patched, unauthenticated, missing, orders, pet])
      assert.equal(res.headers.get('cache-control'), 'no-store', String(res.status))
    const docs = await fetch(`${server.baseUrl}/v1/docs/`)
    assert.match(docs.headers.get('content-security-policy') ?? '', /default-src 'self'/)
    const others = [
      docs,
      await fetch(`${server.baseUrl}/healthz`),
      await fetch(`${server.baseUrl}/nowhere`),
      await fetch(`${server.baseUrl}/v1/%zz`),
    ]
    for (const res of [list, one, unchanged, patched, unauthenticated, missing, orders, pet])
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    for (const res of others) assert.equal(res.headers.get('x-content-type-options'), 'nosniff', res.url)
    const refused = await rawExchange(server, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n')
    assert.equal(rawStatus(refused), 400)
    assert.equal(rawHeader(refused, 'x-content-type-options'), 'nosniff')
  })
})
