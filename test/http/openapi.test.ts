import { Ajv2020 } from 'ajv/dist/2020.js'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { ERROR_CODES } from '../../src/errors.js'
import { INT64_NOTE } from '../../src/http/int64.schema.js'
import { SqliteStorage } from '../../src/storage/sqlite/sqlite.storage.js'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, useSuite, type TestServer } from '../support/helpers.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!

/** The committed contract; this file runs as dist/test/http/openapi.test.js. */
const COMMITTED = fileURLToPath(new URL('../../../openapi.json', import.meta.url))
const ERROR_REF = '#/components/schemas/Error'
const normalise = (text: string) => JSON.stringify(JSON.parse(text), null, 2)

/** Every path of the document, with its operations' ids by method. */
const OPERATIONS: Record<string, Record<string, string>> = {
  '/inventory': { get: 'listInventory' },
  '/inventory/changes': { get: 'listInventoryChanges' },
  '/inventory/changes/stream': { get: 'streamInventoryChanges' },
  '/inventory/{petId}': { get: 'getInventoryItem', patch: 'updateInventory' },
  '/inventory/{petId}/adjustments': { post: 'adjustInventory' },
  '/inventory/batch': { post: 'applyInventoryBatch' },
  '/inventory/{petId}/locations': { get: 'getInventoryLocations' },
  '/inventory/{petId}/transfers': { post: 'transferInventory' },
  '/locations': { get: 'listLocations', post: 'createLocation' },
  '/locations/{locationId}': { get: 'getLocation', patch: 'updateLocation' },
  '/locations/{locationId}/inventory': { get: 'listLocationInventory' },
  '/store/orders': { get: 'listOrders', post: 'placeOrder' },
  '/pets/{petId}': { get: 'getPetById' },
  '/store/orders/{orderId}': { get: 'getOrder', patch: 'updateOrder' },
  '/store/reservations': { get: 'listReservations', post: 'createReservation' },
  '/store/reservations/{reservationId}': { get: 'getReservation' },
  '/store/reservations/{reservationId}/extend': { post: 'extendReservation' },
  '/store/reservations/{reservationId}/release': { post: 'releaseReservation' },
  '/store/reservations/{reservationId}/confirm': { post: 'confirmReservation' },
  '/deprecations': { get: 'listDeprecatedCalls' },
  '/keys': { get: 'listKeys', post: 'createKey' },
  '/keys/current': { get: 'getCurrentKey' },
  '/keys/{id}': { get: 'getKey', delete: 'revokeKey' },
  '/webhooks': { get: 'listWebhooks', post: 'createWebhook' },
  '/webhooks/{id}': { get: 'getWebhook', delete: 'deleteWebhook' },
  '/webhooks/{id}/enable': { post: 'enableWebhook' },
}
/** The one scope each operation needs; none: any valid key. */
const SCOPE_OF: Record<string, string | undefined> = {
  listInventory: 'inventory:read',
  listInventoryChanges: 'inventory:read',
  streamInventoryChanges: 'inventory:read',
  getInventoryItem: 'inventory:read',
  updateInventory: 'inventory:write',
  adjustInventory: 'inventory:write',
  applyInventoryBatch: 'inventory:write',
  getInventoryLocations: 'inventory:read',
  transferInventory: 'inventory:write',
  listLocations: 'inventory:read',
  getLocation: 'inventory:read',
  listLocationInventory: 'inventory:read',
  createLocation: 'admin',
  updateLocation: 'admin',
  listOrders: 'orders:read',
  getOrder: 'orders:read',
  placeOrder: 'orders:write',
  updateOrder: 'orders:write',
  listReservations: 'orders:read',
  getReservation: 'orders:read',
  createReservation: 'orders:write',
  extendReservation: 'orders:write',
  releaseReservation: 'orders:write',
  confirmReservation: 'orders:write',
  getPetById: 'pets:read',
  listDeprecatedCalls: 'admin',
  listKeys: 'admin',
  createKey: 'admin',
  getKey: 'admin',
  revokeKey: 'admin',
  listWebhooks: 'admin',
  createWebhook: 'admin',
  getWebhook: 'admin',
  deleteWebhook: 'admin',
  enableWebhook: 'admin',
  getCurrentKey: undefined,
}
const PATHS = Object.keys(OPERATIONS).sort()

/** Every operation of a document, with where it is. */
function operationsOf(doc: any): { where: string; op: any }[] {
  return Object.entries<any>(doc.paths).flatMap(([path, ops]) =>
    Object.entries<any>(ops).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })),
  )
}

/** A response, its $ref to components.responses followed. */
const resolve = (doc: any, response: any) => (response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response)

/** A JSON pointer as a URI fragment (ajv decodes it before reading the pointer). */
const fragment = (tokens: string[]) => tokens.map((t) => `/${encodeURIComponent(t.replaceAll('~', '~0').replaceAll('/', '~1'))}`).join('')

interface ExampleSite {
  /** Where the example is, for messages. */
  at: string
  /** The pointer of the schema it must be valid against. */
  schema: string[]
  value: unknown
}

/**
 * Every example in the document: a schema's `examples` (JSON Schema's array), and the `example` or
 * `examples` (a map of Example Objects) of a parameter, a media type or a header, beside their `schema`.
 */
function exampleSites(node: any, at: string[] = []): ExampleSite[] {
  if (node === null || typeof node !== 'object') return []
  const sites: ExampleSite[] = []
  if (Array.isArray(node.examples)) {
    for (const value of node.examples) sites.push({ at: at.join('/'), schema: at, value })
  }
  if (node.schema !== undefined && typeof node.schema === 'object') {
    if ('example' in node) sites.push({ at: at.join('/'), schema: [...at, 'schema'], value: node.example })
    if (node.examples && !Array.isArray(node.examples)) {
      for (const [name, example] of Object.entries<any>(node.examples)) {
        sites.push({ at: `${at.join('/')} ${name}`, schema: [...at, 'schema'], value: example.value })
      }
    }
  }
  for (const [key, child] of Object.entries<any>(node)) {
    if (key === 'examples' || key === 'example') continue
    sites.push(...exampleSites(child, [...at, key]))
  }
  return sites
}

/** Sends raw bytes and returns the raw HTTP response, for requests fetch() refuses to make. */
function rawRequest(server: TestServer, raw: string): Promise<string> {
  const { hostname, port } = new URL(server.baseUrl)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    let out = ''
    socket.on('data', (d) => (out += d))
    socket.on('error', reject)
    socket.on('close', () => resolve(out))
    socket.end(raw)
  })
}

describe('OpenAPI document and docs page (sqlite)', () => {
  // PUBLIC_BASE_URL is pinned to its default so the document is the default one.
  const suite = useSuite(sqlite, { env: { PUBLIC_BASE_URL: loadConfig({}).publicBaseUrl } })
  let server: TestServer
  let doc: any
  /** The document as served, before any parser rounds its numbers. */
  let docText: string
  before(async () => {
    server = suite.server
    docText = (await server.request('GET', '/v1/openapi.json')).text
    doc = JSON.parse(docText)
  })

  test('When the document is fetched without a key or with a bad one, then it is served as OpenAPI 3.1 JSON', async () => {
    for (const token of [undefined, 'psk_not-a-key']) {
      const res = await server.request('GET', '/v1/openapi.json', { token })
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
    }
    assert.match(doc.openapi, /^3\.1\.\d+$/)
    assert.equal(doc.info.version, '1.0.0')
    assert.equal(doc.info.title, 'Petstore Inventory API')
  })

  test('When the document is fetched, then it equals the committed openapi.json', () => {
    let committed: string
    try {
      committed = readFileSync(COMMITTED, 'utf8')
    } catch {
      assert.fail(`${COMMITTED} is missing: run \`npm run openapi\` and commit openapi.json`)
    }
    assert.equal(
      normalise(JSON.stringify(doc)),
      normalise(committed),
      'openapi.json is out of date with the served document: run `npm run openapi` and commit openapi.json',
    )
  })

  test('When the shared schemas are read, then InventoryItem, InventoryUpdate, PetStatus, Pet and Error are as documented', () => {
    const { schemas } = doc.components
    assert.deepEqual(Object.keys(schemas).sort(), [
      'ApiKey',
      'ApiKeyCreate',
      'Category',
      'ChangeReason',
      'DeprecatedCalls',
      'Error',
      'InventoryAdjustment',
      'InventoryBatch',
      'InventoryBatchChange',
      'InventoryBatchResult',
      'InventoryChange',
      'InventoryItem',
      'InventoryUpdate',
      'Location',
      'LocationCreate',
      'LocationUpdate',
      'NewApiKey',
      'NewWebhook',
      'Order',
      'OrderCreate',
      'OrderStatus',
      'OrderUpdate',
      'Pet',
      'PetStatus',
      'Reservation',
      'ReservationCreate',
      'ReservationExtend',
      'ReservationLine',
      'ReservationStatus',
      'Scope',
      'StockLevel',
      'Tag',
      'Transfer',
      'TransferResult',
      'Webhook',
      'WebhookCreate',
    ])
    assert.deepEqual([...schemas.Pet.required].sort(), ['id', 'name', 'photoUrls', 'tags'])
    for (const [schema, field] of [
      [schemas.Pet, 'id'],
      [schemas.Category, 'id'],
      [schemas.Tag, 'id'],
    ]) {
      assert.deepEqual([schema.properties[field].type, schema.properties[field].format], ['integer', 'int64'])
    }
    assert.equal(schemas.Pet.properties.status.$ref, '#/components/schemas/PetStatus')
    assert.deepEqual(schemas.PetStatus.enum, ['available', 'pending', 'sold'])
    assert.equal(schemas.InventoryItem.properties.petId.type, 'integer')
    assert.equal(schemas.InventoryItem.properties.petId.format, 'int64')
    assert.deepEqual([...schemas.InventoryItem.required].sort(), ['petId', 'quantity', 'status'])
    assert.equal(schemas.InventoryItem.properties.status.$ref, '#/components/schemas/PetStatus')
    assert.deepEqual(schemas.InventoryUpdate.required, ['quantity'])
    assert.deepEqual(schemas.InventoryAdjustment.required, ['delta'])
    assert.deepEqual(schemas.InventoryBatchChange.required, ['petId'])
    assert.deepEqual(
      [schemas.InventoryBatchChange.properties.petId.type, schemas.InventoryBatchChange.properties.petId.format],
      ['integer', 'int64'],
    )
    assert.deepEqual([schemas.InventoryBatch.properties.changes.minItems, schemas.InventoryBatch.properties.changes.maxItems], [1, 1000])
    assert.deepEqual([...schemas.Error.required].sort(), ['code', 'message', 'status'])
    assert.deepEqual(schemas.Error.properties.code.enum, Object.keys(ERROR_CODES))
  })

  test('When every $ref is followed, then it points at a schema, a header or a response of the document', () => {
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? []
    assert.ok(refs.length > 0)
    for (const ref of refs) {
      const [, kind, name] = /"#\/components\/(schemas|headers|responses)\/([^"]+)"/.exec(ref) ?? []
      assert.ok(kind && name && doc.components[kind][name], ref)
    }
  })

  test('When the operations are read, then they are exactly the documented ones, each secured by bearer auth with its one scope', () => {
    assert.deepEqual(Object.keys(doc.paths).sort(), PATHS)
    for (const [path, ops] of Object.entries(OPERATIONS)) {
      assert.deepEqual(Object.keys(doc.paths[path]).sort(), Object.keys(ops).sort(), path)
      for (const [method, id] of Object.entries(ops)) assert.equal(doc.paths[path][method].operationId, id, `${method} ${path}`)
    }
    assert.ok(doc.security.length > 0)
    for (const requirement of doc.security) {
      for (const name of Object.keys(requirement)) {
        const scheme = doc.components.securitySchemes[name]
        assert.equal(scheme.type, 'http', name)
        assert.equal(scheme.scheme.toLowerCase(), 'bearer', name)
      }
    }
    for (const [path, ops] of Object.entries(OPERATIONS)) {
      for (const method of Object.keys(ops)) {
        const op = doc.paths[path][method]
        const scope = SCOPE_OF[op.operationId]
        assert.deepEqual(op.security, [{ bearerAuth: scope === undefined ? [] : [scope] }], op.operationId)
        assert.equal(op.responses['401']?.content['application/json'].schema.$ref, ERROR_REF, `${op.operationId} 401`)
        if (scope === undefined) assert.equal(op.responses['403'], undefined, `${op.operationId} has no scope to lack`)
        else assert.equal(op.responses['403']?.content['application/json'].schema.$ref, ERROR_REF, `${op.operationId} 403`)
      }
    }
  })

  test('When placeOrder is read, then it is experimental, takes an optional Idempotency-Key and answers 201 with Location, 409 for conflicts', () => {
    const post = doc.paths['/store/orders'].post
    assert.equal(post['x-stability'], 'experimental')
    assert.match(post.description, /experimental/i)
    assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/OrderCreate')
    const key = post.parameters.find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key')
    assert.equal(key.required, false)
    assert.equal(key.schema.pattern, '^[\\x20-\\x7e]{1,255}$')
    assert.ok(post.responses['201'].headers.Location)
    assert.ok(post.responses['201'].headers['Idempotent-Replayed'])
    assert.match(post.responses['409'].description, /insufficient_stock/)
    assert.match(post.responses['409'].description, /idempotency_key_reused/)
    assert.match(doc.paths['/store/orders/{orderId}'].patch.responses['409'].description, /invalid_transition/)
  })

  test('When the paged listings are read, then they declare limit and after, and a Link header on their 200', () => {
    for (const op of [doc.paths['/store/orders'].get, doc.paths['/inventory/changes'].get]) {
      const query = Object.fromEntries(op.parameters.filter((p: any) => p.in === 'query').map((p: any) => [p.name, p.schema]))
      assert.deepEqual([query.limit.minimum, query.limit.maximum, query.limit.default], [1, 1000, 100], op.operationId)
      assert.equal(query.after.format, 'int64', op.operationId)
      assert.ok(op.responses['200'].headers.Link, `${op.operationId} declares Link`)
    }
  })

  test('When the change stream is read, then it answers text/event-stream, resumes by after or Last-Event-ID, names too_many_streams, and declares no 503 (EventSource gives up on one): it says how a refusal for now is answered', () => {
    const op = doc.paths['/inventory/changes/stream'].get
    assert.deepEqual(Object.keys(op.responses['200'].content), ['text/event-stream'])
    assert.equal(op.responses['503'], undefined)
    assert.match(op.description, /still a 200 text\/event-stream.*`retry:` \(from 2000 to 5000 ms/)
    assert.deepEqual(
      op.parameters.map((p: any) => [p.in, p.name, p.required, p.schema.format]),
      [
        ['query', 'after', false, 'int64'],
        ['query', 'petId', false, 'int64'],
        ['header', 'Last-Event-ID', false, undefined],
      ],
    )
    assert.match(op.responses['429'].description, /rate_limited/)
    assert.match(op.responses['429'].description, /too_many_streams/)
    assert.equal(op.responses['429'].content['application/json'].schema.$ref, ERROR_REF)
  })

  test('When the webhook operations are read, then only the answer to createWebhook holds a secret, with a Location', () => {
    const { schemas } = doc.components
    const post = doc.paths['/webhooks'].post
    assert.equal(post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookCreate')
    assert.deepEqual(schemas.WebhookCreate.required, ['url'])
    assert.equal(post.responses['201'].content['application/json'].schema.$ref, '#/components/schemas/NewWebhook')
    assert.ok(post.responses['201'].headers.Location)
    assert.ok(schemas.NewWebhook.required.includes('secret'))
    assert.equal(schemas.Webhook.properties.secret, undefined)
    assert.equal(schemas.Webhook.additionalProperties, false)
    for (const op of [doc.paths['/webhooks'].get, doc.paths['/webhooks/{id}'].get, doc.paths['/webhooks/{id}/enable'].post]) {
      assert.doesNotMatch(JSON.stringify(op.responses['200']), /NewWebhook/, op.operationId)
    }
    assert.equal(doc.paths['/webhooks/{id}'].delete.responses['204'].content, undefined)
  })

  test('When getPetById is read, then it is deprecated under the pets tag, and every response declares Deprecation, Sunset and Link', () => {
    const op = doc.paths['/pets/{petId}'].get
    assert.equal(op.deprecated, true)
    assert.deepEqual(op.tags, ['pets'])
    assert.ok(doc.tags.some((t: { name: string }) => t.name === 'pets'))
    assert.match(op.description, /Deprecation/)
    assert.match(op.description, /Sunset/)
    assert.match(op.description, /410/)
    assert.equal(op.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Pet')
    assert.deepEqual(Object.keys(op.responses), ['200', '400', '401', '403', '404', '405', '408', '410', '414', '429', '431', '500', '503'])
    for (const [status, response] of Object.entries<any>(op.responses)) {
      // 408 and 431 come from the HTTP server before any route (the shared responses): no deprecation headers.
      if (status === '408' || status === '431') continue
      for (const header of ['Deprecation', 'Sunset', 'Link']) assert.ok(response.headers?.[header], `${status} ${header}`)
    }
    assert.ok(op.responses['405'].headers.Allow)
    assert.equal(op.responses['410'].content['application/json'].schema.$ref, ERROR_REF)
  })

  test('When updateInventory is read, then it is marked experimental and documents its bodies and errors', () => {
    const patch = doc.paths['/inventory/{petId}'].patch
    assert.equal(patch['x-stability'], 'experimental')
    assert.match(patch.description, /experimental/i)
    assert.equal(patch.requestBody.content['application/json'].schema.$ref, '#/components/schemas/InventoryUpdate')
    assert.deepEqual(
      patch.parameters.map((p: any) => [p.in, p.name, p.required, p.schema.format]),
      [
        ['path', 'petId', true, 'int64'],
        ['header', 'If-Match', false, undefined],
      ],
    )
    assert.equal(patch.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/InventoryItem')
    for (const status of ['400', '401', '404', '412', '428']) {
      assert.equal(patch.responses[status]?.content['application/json'].schema.$ref, ERROR_REF, status)
    }
    const get = doc.paths['/inventory'].get
    assert.equal(get.responses['200'].content['application/json'].schema.items.$ref, '#/components/schemas/InventoryItem')
    assert.equal(get.responses['401']?.content['application/json'].schema.$ref, ERROR_REF)
  })

  test('When the GETs and the PATCH are read, then they declare their ETag, and the GETs If-None-Match and a bodiless 304', () => {
    const ops = [doc.paths['/inventory'].get, doc.paths['/inventory/{petId}'].get, doc.paths['/inventory/{petId}'].patch]
    for (const op of ops) assert.ok(op.responses['200'].headers.ETag, `${op.operationId} 200 ETag`)
    for (const op of ops.slice(0, 2)) {
      const header = op.parameters.find((p: any) => p.in === 'header')
      assert.deepEqual([header.name, header.required, header.schema.type], ['If-None-Match', false, 'string'])
      assert.ok(op.responses['304'].headers.ETag, `${op.operationId} 304 ETag`)
      assert.equal(op.responses['304'].content, undefined, `${op.operationId} 304 has no body`)
    }
  })

  test('When the query parameters are read, then each one with a default is optional, limit and after of the paged listings among them', async () => {
    let defaults = 0
    for (const { where, op } of operationsOf(doc)) {
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query' || p.schema.default === undefined) continue
        defaults++
        assert.equal(p.required, false, `${where} ${p.name}`)
      }
    }
    assert.ok(defaults >= 3)
    for (const op of [doc.paths['/store/orders'].get, doc.paths['/inventory/changes'].get]) {
      for (const name of ['limit', 'after']) {
        assert.equal(op.parameters.find((p: any) => p.name === name).required, false, `${op.operationId} ${name}`)
      }
    }
    // The ledger's `after` has none: a tool that sends defaults would add it to every `before` (a 400).
    const changes = doc.paths['/inventory/changes'].get.parameters
    assert.deepEqual(
      ['after', 'before'].map((name) => {
        const p = changes.find((q: any) => q.name === name)
        return [p.required, p.schema.default, p.schema.minimum, p.schema.format]
      }),
      [
        [false, undefined, 0, 'int64'],
        [false, undefined, 1, 'int64'],
      ],
    )
    // Left out, the defaults apply.
    for (const path of ['/v1/store/orders', '/v1/inventory/changes']) {
      assert.equal((await server.request('GET', path, { token: suite.token })).status, 200, path)
    }
  })

  test('When the header parameters are read, then they have their canonical names, and the service validates them by those names', async () => {
    const names = new Set(
      operationsOf(doc).flatMap(({ op }) => (op.parameters ?? []).filter((p: any) => p.in === 'header').map((p: any) => p.name)),
    )
    assert.deepEqual([...names].sort(), ['Idempotency-Key', 'If-Match', 'If-None-Match', 'Last-Event-ID'])
    const before = await server.request('GET', '/v1/store/orders', { token: suite.token })
    const res = await server.request('POST', '/v1/store/orders', {
      token: suite.token,
      body: { petId: 1, quantity: 1 },
      headers: { 'idempotency-key': 'x'.repeat(256) },
    })
    assert.equal(res.status, 400, res.text)
    assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'status'])
    assert.match(res.body.message, /idempotency-key/)
    assert.equal((await server.request('GET', '/v1/store/orders', { token: suite.token })).text, before.text, 'nothing was placed')
  })

  test('When the responses are read, then each declares X-Request-Id, each 401 and 403 WWW-Authenticate, and each operation 400 (an undeclared query parameter is refused everywhere), 405 with Allow, 408 and 431', () => {
    assert.equal(doc.components.headers['X-Request-Id'].schema.type, 'string')
    for (const { where, op } of operationsOf(doc)) {
      for (const [status, declared] of Object.entries<any>(op.responses)) {
        const response = resolve(doc, declared)
        assert.deepEqual(response.headers['X-Request-Id'], { $ref: '#/components/headers/X-Request-Id' }, `${where} ${status}`)
        if (status === '401' || status === '403') assert.ok(response.headers['WWW-Authenticate'], `${where} ${status}`)
      }
      for (const status of ['400', '405', '408', '431']) {
        const response = resolve(doc, op.responses[status])
        assert.equal(response?.content['application/json'].schema.$ref, ERROR_REF, `${where} ${status}`)
      }
      assert.ok(resolve(doc, op.responses['405']).headers.Allow, `${where} 405 Allow`)
      // Answered before authentication, by the 405 routes or the HTTP server: never counted by a rate limit.
      for (const status of ['405', '408', '414', '431']) {
        const response = op.responses[status] && resolve(doc, op.responses[status])
        assert.equal(response?.headers.RateLimit, undefined, `${where} ${status}`)
      }
    }
  })

  test('When every answer is read, then it carries the X-Request-Id the document declares, the client’s own when it is plain', async () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
    for (const [method, path] of [
      ['GET', '/v1/inventory'],
      ['PUT', '/v1/inventory'],
      ['GET', '/v1/inventory/%zz'],
      ['GET', `/v1/inventory/${'9'.repeat(9000)}`],
    ] as const) {
      const res = await server.request(method, path, { token: suite.token })
      assert.match(res.headers.get('x-request-id') ?? '', uuid, `${method} ${path.slice(0, 30)}: ${res.status}`)
      const own = await server.request(method, path, { token: suite.token, headers: { 'x-request-id': 'client-42' } })
      assert.equal(own.headers.get('x-request-id'), 'client-42', `${method} ${path.slice(0, 30)}: ${own.status}`)
    }
    assert.ok(new RegExp(doc.components.headers['X-Request-Id'].schema.pattern).test('client-42'))
  })

  test('When the examples are read, then bodies, main responses, id parameters and every Error response have them, each valid against its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) })
    ajv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/)
    ajv.addSchema(doc, 'openapi')
    const sites = exampleSites(doc)
    assert.ok(sites.length > 50, `${sites.length} examples`)
    for (const { at, schema, value } of sites) {
      const validate = ajv.compile({ $ref: `openapi#${fragment(schema)}` })
      assert.ok(validate(value), `${at}: ${ajv.errorsText(validate.errors)}`)
    }
    const exampled = (schema: any): boolean =>
      schema.examples?.length > 0 ||
      (schema.$ref !== undefined && exampled(doc.components.schemas[schema.$ref.split('/').pop()])) ||
      (schema.items !== undefined && exampled(schema.items))
    for (const { where, op } of operationsOf(doc)) {
      const body = op.requestBody?.content['application/json']
      if (body) assert.ok(body.examples || exampled(body.schema), `${where} request body`)
      for (const status of ['200', '201']) {
        const media = op.responses[status]?.content?.['application/json']
        if (media) assert.ok(media.examples || exampled(media.schema), `${where} ${status}`)
      }
      for (const p of op.parameters ?? []) if (p.in === 'path') assert.ok(p.example !== undefined, `${where} ${p.name}`)
      for (const [status, declared] of Object.entries<any>(op.responses)) {
        const media = resolve(doc, declared).content?.['application/json']
        if (media?.schema.$ref !== ERROR_REF) continue
        const examples = Object.entries<any>(media.examples ?? {})
        assert.ok(examples.length > 0, `${where} ${status} has Error examples`)
        for (const [code, { value }] of examples) {
          assert.equal(value.code, code, `${where} ${status}`)
          assert.equal(value.status, Number(status), `${where} ${status}`)
          assert.equal(ERROR_CODES[code as keyof typeof ERROR_CODES], Number(status), `${where} ${status} ${code}`)
        }
      }
    }
    // Every error status of ERROR_CODES has an example somewhere, and each code too.
    const codes = new Set(sites.map((s: any) => s.value?.code).filter(Boolean))
    assert.deepEqual([...codes].sort(), Object.keys(ERROR_CODES).sort())
    // petId 2^53 + 1, exact: JSON.parse would round it to 2^53.
    assert.match(docText, /"petId":9007199254740993[,}]/)
    assert.match(docText, /"example":9007199254740993[,}]/)
    assert.doesNotMatch(docText, /9007199254740992/)
  })

  test('When the int64 fields and parameters are read, then each says that it may exceed 2^53 and must be read exactly', () => {
    let seen = 0
    const walk = (node: any, description: string | undefined, at: string) => {
      if (node === null || typeof node !== 'object') return
      if (node.format === 'int64') {
        seen++
        assert.ok((node.description ?? description ?? '').includes(INT64_NOTE), at)
      }
      for (const [key, child] of Object.entries<any>(node)) {
        // A parameter's description is beside its schema.
        if (key !== 'examples' && key !== 'example') walk(child, key === 'schema' ? node.description : undefined, `${at}/${key}`)
      }
    }
    walk(doc, undefined, '')
    assert.ok(seen >= 20, `${seen} int64 schemas`)
  })

  test('When info is read, then it names a contact and the MIT license, and every operation has a summary and a description', () => {
    assert.ok(doc.info.contact.name && (doc.info.contact.email || doc.info.contact.url))
    assert.match(doc.info.contact.name, /placeholder/)
    assert.deepEqual(doc.info.license, { name: 'MIT', identifier: 'MIT' })
    assert.equal(JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).license, 'MIT')
    for (const { where, op } of operationsOf(doc)) {
      assert.ok(op.summary?.trim(), `${where} summary`)
      assert.ok(op.description?.trim(), `${where} description`)
    }
  })

  test('When the default servers are read, then the production and staging placeholders are marked for tools, and this server is not', () => {
    assert.deepEqual(
      doc.servers.map((s: any) => [s.url, s['x-placeholder']]),
      [
        ['/v1', undefined],
        ['https://petstore.example.com/v1', true],
        ['https://staging.petstore.example.com/v1', true],
      ],
    )
    for (const s of doc.servers.filter((s: any) => s['x-placeholder'])) assert.match(s.description, /a placeholder until the operator sets/)
  })

  test('When the docs page is opened without a key, then it is HTML whose assets all come from the service', async () => {
    const res = await fetch(`${server.baseUrl}/v1/docs`, { redirect: 'follow' })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
    const html = await res.text()
    const refs = [...html.matchAll(/<(script|img)\b[^>]*\ssrc\s*=\s*["']([^"']*)["']|<link\b[^>]*\shref\s*=\s*["']([^"']*)["']/gi)].map(
      (m) => (m[2] ?? m[3])!,
    )
    assert.ok(
      refs.some((r) => r.endsWith('.js')),
      `the page loads scripts: ${refs.join(' ')}`,
    )
    const origin = new URL(server.baseUrl).origin
    for (const ref of refs) {
      assert.ok(!ref.startsWith('//'), `protocol-relative asset ${ref}`)
      const url = new URL(ref, res.url)
      assert.equal(url.origin, origin, `asset from another origin: ${ref}`)
      const asset = await fetch(url)
      assert.equal(asset.status, 200, ref)
      await asset.arrayBuffer()
    }
  })

  test('When the docs page is opened, then its Content-Security-Policy allows this origin only', async () => {
    const res = await fetch(`${server.baseUrl}/v1/docs`)
    await res.text()
    const csp = res.headers.get('content-security-policy')
    assert.ok(csp, 'a Content-Security-Policy header')
    const directives = new Map(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .filter((d) => d[0])
        .map(([name, ...v]) => [name!, v]),
    )
    assert.ok(directives.has('default-src'), csp)
    for (const [name, sources] of directives) {
      for (const source of sources) {
        assert.ok(/^'(self|none|unsafe-inline|unsafe-eval)'$|^(data|blob):$/.test(source), `${name} allows ${source}`)
      }
    }
  })

  test('When any request fails, then the response is application/json', async () => {
    const token = suite.token
    const cases: [string, string, Parameters<TestServer['request']>[2]][] = [
      ['GET', '/v1/inventory', {}],
      ['GET', '/v1/inventory', { token: 'psk_wrong' }],
      ['GET', '/v1/inventory', { headers: { authorization: 'Basic dXNlcjpwYXNz' } }],
      ['PATCH', '/v1/inventory/1', { body: { quantity: 1 } }],
      ['PATCH', '/v1/inventory/abc', { token, body: { quantity: 1 } }],
      ['PATCH', '/v1/inventory/1', { token, rawBody: '{"quantity":', headers: { 'content-type': 'application/json' } }],
      ['PATCH', '/v1/inventory/1', { token, body: { quantity: -1 } }],
      ['PATCH', '/v1/inventory/404', { token, body: { quantity: 1 } }],
      ['PATCH', '/v1/inventory/1', { token, rawBody: 'x', headers: { 'content-type': 'text/plain' } }],
      ['PATCH', '/v1/inventory/1', { token, rawBody: `{"q":"${'x'.repeat(70_000)}"}`, headers: { 'content-type': 'application/json' } }],
      ['DELETE', '/v1/inventory', { token }],
      ['GET', '/v1/nope', {}],
      ['GET', '/v1/docs/static/nope.js', {}],
      ['GET', '/v1/inventory/%zz', { token }],
    ]
    for (const [method, path, options] of cases) {
      const res = await server.request(method, path, options)
      assert.ok(res.status >= 400, `${method} ${path}: ${res.status}`)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${method} ${path}`)
      assert.doesNotThrow(() => JSON.parse(res.text), `${method} ${path}`)
    }
    const raw = await rawRequest(server, 'PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n')
    assert.match(raw, /^HTTP\/1\.1 400 .*\r\n(.*\r\n)*content-type: application\/json/i)
  })

  test('When the URL or the HTTP framing is malformed, then the body is still an Error object', async () => {
    const res = await server.request('GET', '/v1/inventory/%zz')
    assert.deepEqual(Object.keys(res.body ?? {}).sort(), ['code', 'message', 'status'])
    const raw = await rawRequest(server, 'PATCH /v1/inventory/1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n')
    assert.match(raw, /\{"code":"invalid_request",/)
    assert.match(raw, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i)
  })

  test('When the request headers are too large, then 431 with an Error body and a request id', async () => {
    const raw = await rawRequest(server, `GET /v1/inventory HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`)
    assert.match(raw, /^HTTP\/1\.1 431 /)
    assert.match(raw, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i)
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))
    assert.deepEqual(body, { code: 'headers_too_large', message: body.message, status: 431 })
  })
})

describe('OpenAPI servers (sqlite, custom base URLs)', () => {
  const env = { PRODUCTION_BASE_URL: 'https://api.petstore.test', STAGING_BASE_URL: 'https://staging.petstore.test/inventory' }
  const suite = useAppSuite(sqlite, { env })

  test('When PRODUCTION_BASE_URL and STAGING_BASE_URL are set, then the servers list them, each ending in /v1', async () => {
    const doc = JSON.parse((await suite.server.request('GET', '/v1/openapi.json')).text)
    assert.deepEqual(
      doc.servers.find((s: any) => s.description === 'Production'),
      { url: 'https://api.petstore.test/v1', description: 'Production' },
    )
    assert.deepEqual(
      doc.servers.find((s: any) => s.description === 'Staging'),
      { url: 'https://staging.petstore.test/inventory/v1', description: 'Staging' },
    )
    // "This server" is the relative /v1 unless PUBLIC_BASE_URL is set; the others are absolute.
    assert.deepEqual(
      doc.servers.map((s: any) => s.url),
      ['/v1', 'https://api.petstore.test/v1', 'https://staging.petstore.test/inventory/v1'],
    )
    assert.deepEqual(Object.keys(doc.paths).sort(), PATHS)
  })

  test('When a base URL has a trailing slash or every base URL has a path, then the servers and paths still join to /v1/inventory', async () => {
    for (const [urls, servers] of [
      [
        { PRODUCTION_BASE_URL: 'https://api.petstore.test/', STAGING_BASE_URL: 'https://staging.petstore.test/' },
        ['/v1', 'https://api.petstore.test/v1', 'https://staging.petstore.test/v1'],
      ],
      [
        {
          PUBLIC_BASE_URL: 'https://api.petstore.test/api',
          PRODUCTION_BASE_URL: 'https://api.petstore.test/api',
          STAGING_BASE_URL: 'https://s.petstore.test/api',
        },
        // "This server" is Production's URL here, listed once.
        ['https://api.petstore.test/api/v1', 'https://s.petstore.test/api/v1'],
      ],
    ] as const) {
      const storage = SqliteStorage.open(':memory:')
      const app = await buildApp(loadConfig(urls), { storage, logger: false })
      await app.ready()
      const doc = app.swagger() as any
      await app.close()
      await storage.close()
      assert.deepEqual(
        doc.servers.map((s: any) => s.url),
        servers,
      )
      assert.deepEqual(Object.keys(doc.paths).sort(), PATHS)
    }
  })
})
