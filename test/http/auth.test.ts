import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey } from '../support/helpers.js'

for (const backend of BACKENDS) {
  describe(`authentication (${backend.name})`, () => {
    const suite = useAppSuite(backend, { seed: [{ petId: 1, quantity: 5, status: 'available' }] })
    let revoked: string

    before(async () => {
      revoked = await createKey(suite.server, 'to-revoke')
      const result = await suite.server.cli(['keys', 'revoke', 'to-revoke'])
      assert.equal(result.code, 0, result.stderr)
    })

    const unknownKey = `psk_${'A'.repeat(43)}`
    // RFC 6750 §3.1: no key, the bare challenge; a key that was sent but is not valid, error="invalid_token".
    const NO_KEY = 'Bearer realm="petstore"'
    const INVALID = 'Bearer realm="petstore", error="invalid_token"'
    const badHeaders: [string, Record<string, string>, string][] = [
      ['no Authorization header', {}, NO_KEY],
      ['an empty Authorization header', { authorization: '' }, NO_KEY],
      ['the Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, INVALID],
      ['a bearer scheme with no token', { authorization: 'Bearer' }, INVALID],
      ['a bearer scheme with a blank token', { authorization: 'Bearer    ' }, INVALID],
      ['a malformed token', { authorization: 'Bearer not-a-key' }, INVALID],
      ['a token with a wrong prefix', { authorization: `Bearer xyz_${'A'.repeat(43)}` }, INVALID],
      ['a token one character short', { authorization: `Bearer ${unknownKey.slice(0, -1)}` }, INVALID],
      ['two tokens', { authorization: `Bearer ${unknownKey} ${unknownKey}` }, INVALID],
      ['an unknown well-formed key', { authorization: `Bearer ${unknownKey}` }, INVALID],
    ]

    const operations: [string, string, unknown][] = [
      ['GET', '/v1/inventory', undefined],
      ['PATCH', '/v1/inventory/1', { quantity: 9 }],
    ]

    for (const [method, path, body] of operations) {
      for (const [label, headers, challenge] of badHeaders) {
        test(`When ${method} ${path} has ${label}, then 401 with an Error body and WWW-Authenticate: ${challenge}`, async () => {
          const res = await suite.server.request(method, path, { headers, body })
          assert.equal(res.status, 401)
          assert.equal(res.headers.get('www-authenticate'), challenge)
          assert.deepEqual(res.body, { code: 'unauthorized', message: res.body.message, status: 401 })
        })
      }
    }

    test('When a revoked key is used, then 401 with error="invalid_token"', async () => {
      const res = await suite.server.request('GET', '/v1/inventory', { token: revoked })
      assert.equal(res.status, 401)
      assert.equal(res.body.code, 'unauthorized')
      assert.equal(res.headers.get('www-authenticate'), INVALID)
    })

    test('When the scheme name is in any case, then the key is accepted', async () => {
      for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
        const res = await suite.server.request('GET', '/v1/inventory', {
          headers: { authorization: `${scheme} ${suite.token}` },
        })
        assert.equal(res.status, 200, scheme)
      }
    })

    test('When unauthenticated requests are also invalid, then authentication decides first (401)', async () => {
      const cases: [string, string, Record<string, string>, string | undefined][] = [
        ['PATCH', '/v1/inventory/abc', { 'content-type': 'application/json' }, '{"quantity":1}'],
        ['PATCH', '/v1/inventory/1', { 'content-type': 'application/json' }, '{"quantity":"x"}'],
        ['PATCH', '/v1/inventory/1', { 'content-type': 'application/json' }, '{bad json'],
        ['PATCH', '/v1/inventory/1', { 'content-type': 'text/plain' }, 'quantity=1'],
        ['PATCH', '/v1/inventory/424242', { 'content-type': 'application/json' }, '{"quantity":1}'],
        ['PATCH', '/v1/inventory/1', { 'content-type': 'application/json' }, `{"pad":"${'x'.repeat(70_000)}"}`],
      ]
      for (const [method, path, headers, rawBody] of cases) {
        const res = await suite.server.request(method, path, {
          headers: { ...headers, authorization: `Bearer ${unknownKey}` },
          rawBody,
        })
        assert.equal(res.status, 401, `${method} ${path} ${rawBody?.slice(0, 20)}`)
      }
      const list = await suite.server.request('GET', '/v1/inventory', { token: suite.token })
      assert.deepEqual(list.body, [{ petId: 1n, quantity: 5, status: 'available' }])
    })

    test('When fetching the OpenAPI document or the docs page, then no key is needed', async () => {
      assert.equal((await suite.server.request('GET', '/v1/openapi.json')).status, 200)
      const docs = await suite.server.request('GET', '/v1/docs')
      assert.equal(docs.status, 200)
    })
  })
}
