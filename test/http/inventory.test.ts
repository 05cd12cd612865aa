import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'

const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const ABOVE_DOUBLE = 9007199254740993n // 2^53 + 1: a double would round it to ...992

for (const backend of BACKENDS) {
  describe(`inventory operations (${backend.name})`, () => {
    const seedItems = [
      { petId: 3n, quantity: 30, status: 'sold' },
      { petId: 1n, quantity: 10, status: 'available' },
      { petId: 2n, quantity: 20, status: 'pending' },
      { petId: ABOVE_DOUBLE, quantity: 7, status: 'available' },
      { petId: INT64_MAX, quantity: 1, status: 'available' },
      { petId: INT64_MIN, quantity: 2, status: 'pending' },
      { petId: 0n, quantity: 0, status: 'sold' },
      // Numeric order differs from text order here (2 < 10 < 100, but "10" < "100" < "2").
      { petId: 10n, quantity: 100, status: 'available' },
      { petId: 100n, quantity: 1000, status: 'pending' },
      { petId: -10n, quantity: 3, status: 'sold' },
      { petId: -2n, quantity: 4, status: 'sold' },
    ]
    const sorted = [...seedItems].sort((a, b) => (a.petId < b.petId ? -1 : a.petId > b.petId ? 1 : 0))

    const suite = useAppSuite(backend, { seed: seedItems })

    const get = () => suite.server.request('GET', '/v1/inventory', { token: suite.token })
    const patch = (petId: string | bigint, body: unknown) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body })

    test('When listing, then every entry comes back sorted by petId with exact int64 values', async () => {
      const res = await get()
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.deepEqual(res.body, sorted)
      // The JSON text itself carries the digits as numbers, not strings.
      assert.ok(res.text.includes(`"petId":${ABOVE_DOUBLE},`))
      assert.ok(res.text.includes(`"petId":${INT64_MIN},`))
    })

    test('When setting a quantity, then the updated entry is returned, status untouched, and listed after', async () => {
      const res = await patch(2n, { quantity: 42 })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, { petId: 2n, quantity: 42, status: 'pending' })
      const list = await get()
      assert.deepEqual(
        list.body.find((i: { petId: bigint }) => i.petId === 2n),
        { petId: 2n, quantity: 42, status: 'pending' },
      )
    })

    for (const petId of [ABOVE_DOUBLE, INT64_MAX, INT64_MIN, 0n]) {
      test(`When patching petId ${petId}, then exactly that entry changes and round-trips`, async () => {
        const res = await patch(petId, { quantity: 2147483647 })
        assert.equal(res.status, 200)
        assert.ok(res.text.startsWith(`{"petId":${petId},`), res.text)
        assert.equal(res.body.petId, petId)
        assert.equal(res.body.quantity, 2147483647)
        const list = await get()
        assert.equal(list.body.find((i: { petId: bigint }) => i.petId === petId).quantity, 2147483647)
      })
    }

    test('When the neighbour of a big petId is patched, then the big one is not touched', async () => {
      const before = (await get()).body
      const res = await patch(ABOVE_DOUBLE - 1n, { quantity: 5 })
      assert.equal(res.status, 404, 'no entry for 2^53: it must not alias 2^53 + 1')
      assert.deepEqual((await get()).body, before)
    })

    test('When the pet has no entry, then 404 with an Error body and nothing changes', async () => {
      const before = (await get()).text
      const res = await patch(999n, { quantity: 1 })
      assert.equal(res.status, 404)
      assert.deepEqual(res.body, { code: 'not_found', message: res.body.message, status: 404 })
      assert.match(res.body.message, /999/)
      assert.equal((await get()).text, before)
    })

    const badBodies: [string, string | undefined, string][] = [
      ['a string quantity', '{"quantity":"5"}', 'quantity'],
      ['a boolean quantity', '{"quantity":true}', 'quantity'],
      ['a null quantity', '{"quantity":null}', 'quantity'],
      ['a fractional quantity', '{"quantity":1.5}', 'quantity'],
      ['a negative quantity', '{"quantity":-1}', 'quantity'],
      ['a quantity above int32', '{"quantity":2147483648}', 'quantity'],
      ['a huge quantity', '{"quantity":1e400}', 'quantity'],
      ['no quantity', '{}', 'quantity'],
      ['an unknown field', '{"quantity":1,"status":"sold"}', 'status'],
      ['an array body', '[{"quantity":1}]', 'object'],
      ['a number body', '5', 'object'],
      ['a null body', 'null', 'object'],
      ['malformed JSON', '{"quantity":', 'JSON'],
      ['an empty body', '', 'empty'],
      ['a proto-poisoning body', '{"__proto__":{"x":1},"quantity":1}', 'JSON'],
    ]
    for (const [label, raw, mentions] of badBodies) {
      test(`When the body has ${label}, then 400 naming the problem and nothing changes`, async () => {
        const before = (await get()).text
        const res = await suite.server.request('PATCH', '/v1/inventory/1', {
          token: suite.token,
          rawBody: raw,
          headers: { 'content-type': 'application/json' },
        })
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.code, 'invalid_request')
        assert.equal(res.body.status, 400)
        assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'status'])
        assert.ok(res.body.message.toLowerCase().includes(mentions.toLowerCase()), res.body.message)
        assert.equal((await get()).text, before)
      })
    }

    test('When the body is missing altogether, then 400', async () => {
      const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token })
      assert.equal(res.status, 400)
      assert.equal(res.body.code, 'invalid_request')
    })

    for (const petId of [
      'abc',
      '1.5',
      '1e3',
      '9223372036854775808',
      '-9223372036854775809',
      '007',
      '-0',
      '+1',
      '0x10',
      '%201',
      '9'.repeat(300),
    ]) {
      test(`When petId is '${petId.slice(0, 24)}', then 400 and nothing changes`, async () => {
        const before = (await get()).text
        const res = await patch(petId, { quantity: 1 })
        assert.equal(res.status, 400, res.text)
        assert.deepEqual(res.body, { code: 'invalid_request', message: res.body.message, status: 400 })
        assert.match(res.body.message, /petId/)
        assert.equal((await get()).text, before)
      })
    }

    test('When the body is not JSON, then 415 and nothing changes', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        const res = await suite.server.request('PATCH', '/v1/inventory/1', {
          token: suite.token,
          rawBody: 'quantity=5',
          headers: { 'content-type': type },
        })
        assert.equal(res.status, 415, type)
        assert.deepEqual(res.body, { code: 'unsupported_media_type', message: res.body.message, status: 415 })
      }
      assert.equal((await get()).body.find((i: { petId: bigint }) => i.petId === 1n).quantity, 10)
    })

    test('When the content type carries a charset, then the body is accepted', async () => {
      const res = await suite.server.request('PATCH', '/v1/inventory/1', {
        token: suite.token,
        rawBody: '{"quantity":11}',
        headers: { 'content-type': 'application/json; charset=utf-8' },
      })
      assert.equal(res.status, 200)
      assert.equal(res.body.quantity, 11)
    })

    test('When the body is over 64 KiB, then 413', async () => {
      const res = await suite.server.request('PATCH', '/v1/inventory/1', {
        token: suite.token,
        rawBody: `{"quantity":1,"pad":"${'x'.repeat(70_000)}"}`,
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(res.status, 413)
      assert.deepEqual(res.body, { code: 'payload_too_large', message: res.body.message, status: 413 })
    })

    test('When the path is unknown, then 404 with an Error body', async () => {
      for (const path of ['/v1/nope', '/', '/v2/inventory', '/v1/inventory/1/extra']) {
        const res = await suite.server.request('GET', path, { token: suite.token })
        assert.equal(res.status, 404, path)
        assert.deepEqual(res.body, { code: 'not_found', message: res.body.message, status: 404 })
      }
    })

    test('When the method is wrong for a known path, then 405 with Allow', async () => {
      const cases: [string, string, string][] = [
        ['DELETE', '/v1/inventory/1', 'GET, HEAD, PATCH'],
        ['PUT', '/v1/inventory/1', 'GET, HEAD, PATCH'],
        ['POST', '/v1/inventory', 'GET, HEAD'],
        ['PUT', '/v1/inventory', 'GET, HEAD'],
        ['POST', '/v1/openapi.json', 'GET, HEAD'],
        ['DELETE', '/healthz', 'GET, HEAD'],
        ['POST', '/v1/docs', 'GET, HEAD'],
      ]
      for (const [method, path, allow] of cases) {
        const res = await suite.server.request(method, path, { token: suite.token })
        assert.equal(res.status, 405, `${method} ${path}`)
        assert.equal(res.headers.get('allow'), allow)
        assert.deepEqual(res.body, { code: 'method_not_allowed', message: res.body.message, status: 405 })
      }
    })

    // That its log line carries it too is in hardening.test.ts, which reads a real process's log.
    test('When a request carries X-Request-Id, then the response carries it too, and a generated one otherwise', async () => {
      const res = await suite.server.request('GET', '/v1/inventory', {
        token: suite.token,
        headers: { 'x-request-id': 'trace-abc-123' },
      })
      assert.equal(res.headers.get('x-request-id'), 'trace-abc-123')
      const generated = await get()
      assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
    })

    test('When probed, then /healthz and /readyz answer 200 without a key', async () => {
      const live = await suite.server.request('GET', '/healthz')
      assert.deepEqual([live.status, live.body], [200, { status: 'ok' }])
      const ready = await suite.server.request('GET', '/readyz')
      assert.deepEqual([ready.status, ready.body], [200, { status: 'ready' }])
    })

    test('When an error response is sent, then it carries X-Request-Id as well', async () => {
      const res = await suite.server.request('GET', '/v1/nope')
      assert.ok(res.headers.get('x-request-id'))
    })
  })
}
