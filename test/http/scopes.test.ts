import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { SCOPES, type Scope } from '../../src/domain.js'
import { startApp, type TestApp, useAppSuite } from '../support/app.js'
import { BACKENDS, createKey } from '../support/helpers.js'

/**
 * One request per operation that succeeds with the right scope; a key holding every scope but the
 * one needed must get 403 before anything is read or changed. `body` is sent as given, even invalid,
 * to show the scope is decided before validation.
 */
const OPERATIONS: { id: string; scope: Scope | null; method: string; path: string; body?: unknown }[] = [
  { id: 'listInventory', scope: 'inventory:read', method: 'GET', path: '/v1/inventory' },
  { id: 'getInventoryItem', scope: 'inventory:read', method: 'GET', path: '/v1/inventory/1' },
  { id: 'listInventoryChanges', scope: 'inventory:read', method: 'GET', path: '/v1/inventory/changes' },
  // A stream that opened would never end: after=x is refused (400) once the scope has let it through.
  { id: 'streamInventoryChanges', scope: 'inventory:read', method: 'GET', path: '/v1/inventory/changes/stream?after=x' },
  { id: 'updateInventory', scope: 'inventory:write', method: 'PATCH', path: '/v1/inventory/1', body: { quantity: 'lots' } },
  { id: 'adjustInventory', scope: 'inventory:write', method: 'POST', path: '/v1/inventory/1/adjustments', body: { delta: 'lots' } },
  { id: 'applyInventoryBatch', scope: 'inventory:write', method: 'POST', path: '/v1/inventory/batch', body: { changes: [] } },
  { id: 'placeOrder', scope: 'orders:write', method: 'POST', path: '/v1/store/orders', body: { petId: 1, quantity: 0 } },
  { id: 'listOrders', scope: 'orders:read', method: 'GET', path: '/v1/store/orders' },
  { id: 'getOrder', scope: 'orders:read', method: 'GET', path: '/v1/store/orders/1' },
  { id: 'updateOrder', scope: 'orders:write', method: 'PATCH', path: '/v1/store/orders/1', body: { status: 'lost' } },
  { id: 'createReservation', scope: 'orders:write', method: 'POST', path: '/v1/store/reservations', body: { lines: [] } },
  { id: 'listReservations', scope: 'orders:read', method: 'GET', path: '/v1/store/reservations' },
  { id: 'getReservation', scope: 'orders:read', method: 'GET', path: '/v1/store/reservations/1' },
  {
    id: 'extendReservation',
    scope: 'orders:write',
    method: 'POST',
    path: '/v1/store/reservations/1/extend',
    body: { expiresInSeconds: 1 },
  },
  { id: 'releaseReservation', scope: 'orders:write', method: 'POST', path: '/v1/store/reservations/424242/release' },
  { id: 'confirmReservation', scope: 'orders:write', method: 'POST', path: '/v1/store/reservations/424242/confirm' },
  { id: 'getPetById', scope: 'pets:read', method: 'GET', path: '/v1/pets/1' },
  { id: 'listDeprecatedCalls', scope: 'admin', method: 'GET', path: '/v1/deprecations' },
  { id: 'listKeys', scope: 'admin', method: 'GET', path: '/v1/keys' },
  { id: 'createKey', scope: 'admin', method: 'POST', path: '/v1/keys', body: { name: '1 bad name' } },
  { id: 'getKey', scope: 'admin', method: 'GET', path: '/v1/keys/424242' },
  { id: 'revokeKey', scope: 'admin', method: 'DELETE', path: '/v1/keys/424242' },
  { id: 'listWebhooks', scope: 'admin', method: 'GET', path: '/v1/webhooks' },
  { id: 'createWebhook', scope: 'admin', method: 'POST', path: '/v1/webhooks', body: { url: '' } },
  { id: 'getWebhook', scope: 'admin', method: 'GET', path: '/v1/webhooks/424242' },
  { id: 'deleteWebhook', scope: 'admin', method: 'DELETE', path: '/v1/webhooks/424242' },
  { id: 'enableWebhook', scope: 'admin', method: 'POST', path: '/v1/webhooks/424242/enable' },
  { id: 'getCurrentKey', scope: null, method: 'GET', path: '/v1/keys/current' },
  { id: 'listLocations', scope: 'inventory:read', method: 'GET', path: '/v1/locations' },
  { id: 'getLocation', scope: 'inventory:read', method: 'GET', path: '/v1/locations/1' },
  { id: 'listLocationInventory', scope: 'inventory:read', method: 'GET', path: '/v1/locations/1/inventory' },
  { id: 'getInventoryLocations', scope: 'inventory:read', method: 'GET', path: '/v1/inventory/1/locations' },
  { id: 'transferInventory', scope: 'inventory:write', method: 'POST', path: '/v1/inventory/1/transfers', body: { quantity: 'lots' } },
  { id: 'createLocation', scope: 'admin', method: 'POST', path: '/v1/locations', body: { name: '' } },
  { id: 'updateLocation', scope: 'admin', method: 'PATCH', path: '/v1/locations/424242', body: { active: false } },
]

const KEY_FIELDS = ['createdAt', 'id', 'lastUsedAt', 'name', 'scopes']

for (const backend of BACKENDS) {
  describe(`scoped keys (${backend.name})`, () => {
    const suite = useAppSuite(backend, { seed: [{ petId: 1, quantity: 5, status: 'available' }] })
    /** What a refused request must not change: the stock, orders, ledger, keys (but when a key was last used) and webhooks. */
    const state = async () => {
      const { server, token } = suite
      const read = async (path: string) => (await server.request('GET', path, { token })).body
      const keys = (await read('/v1/keys')).map(({ lastUsedAt: _, ...key }: { lastUsedAt: unknown }) => key)
      return [
        await read('/v1/inventory'),
        await read('/v1/store/orders'),
        await read('/v1/inventory/changes'),
        keys,
        await read('/v1/webhooks'),
      ]
    }

    test('When the document is read, then every operation is listed here with the scope it declares', async () => {
      const doc = (await suite.server.request('GET', '/v1/openapi.json')).body
      const declared = Object.values(doc.paths as Record<string, Record<string, { operationId: string; security: unknown }>>)
        .flatMap((ops) => Object.values(ops))
        .map((op) => [op.operationId, op.security])
        .sort()
      const here = OPERATIONS.map((op) => [op.id, [{ bearerAuth: op.scope ? [op.scope] : [] }]]).sort()
      assert.deepEqual(declared, here)
    })

    for (const op of OPERATIONS.filter((o) => o.scope !== null)) {
      test(`When a key with every scope but ${op.scope} calls ${op.id}, then 403 insufficient_scope with the challenge, before the body is read, and nothing changes`, async () => {
        const token = await createKey(
          suite.server.env.DATABASE_URL!,
          `lacks-${op.id}`,
          SCOPES.filter((s) => s !== op.scope),
        )
        const before = await state()
        const res = await suite.server.request(op.method, op.path, { token, ...(op.body === undefined ? {} : { body: op.body }) })
        assert.equal(res.status, 403, res.text)
        assert.deepEqual(res.body, { code: 'insufficient_scope', message: res.body.message, status: 403 })
        assert.match(res.body.message, new RegExp(op.scope!))
        assert.equal(res.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="${op.scope}"`)
        assert.deepEqual(await state(), before)
        // The same request with a key of that scope alone is not refused for its scope.
        const only = await createKey(suite.server.env.DATABASE_URL!, `only-${op.id}`, [op.scope!])
        const allowed = await suite.server.request(op.method, op.path, { token: only, ...(op.body === undefined ? {} : { body: op.body }) })
        assert.notEqual(allowed.status, 403, allowed.text)
        assert.notEqual(allowed.status, 401, allowed.text)
      })
    }

    test('When a request has no key or an unknown one, then it stays 401 whatever the scope', async () => {
      for (const op of OPERATIONS) {
        assert.equal((await suite.server.request(op.method, op.path)).status, 401, op.id)
        assert.equal((await suite.server.request(op.method, op.path, { token: `psk_${'A'.repeat(43)}` })).status, 401, op.id)
      }
    })

    test('When a key reads itself, then it gets its id, name and scopes, whatever its scopes', async () => {
      const token = await createKey(suite.server.env.DATABASE_URL!, 'pets-only', ['pets:read'])
      const res = await suite.server.request('GET', '/v1/keys/current', { token })
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(Object.keys(res.body).sort(), KEY_FIELDS)
      assert.equal(res.body.name, 'pets-only')
      assert.deepEqual(res.body.scopes, ['pets:read'])
    })

    test('When an admin creates a key over HTTP, then 201 with its token once and a Location, the key works at once with exactly its scopes, and listings never show a secret', async () => {
      const { server, token } = suite
      const res = await server.request('POST', '/v1/keys', { token, body: { name: 'reporter', scopes: ['orders:read', 'inventory:read'] } })
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(Object.keys(res.body).sort(), [...KEY_FIELDS, 'token'].sort())
      assert.deepEqual(res.body.scopes, ['inventory:read', 'orders:read'], 'in the fixed order')
      assert.equal(res.body.lastUsedAt, null)
      assert.match(res.body.token, /^psk_[A-Za-z0-9_-]{43}$/)
      assert.equal(res.headers.get('location'), `/v1/keys/${res.body.id}`)
      const created = res.body.token as string
      assert.equal((await server.request('GET', '/v1/inventory', { token: created })).status, 200)
      assert.equal((await server.request('GET', '/v1/store/orders', { token: created })).status, 200)
      assert.equal((await server.request('PATCH', '/v1/inventory/1', { token: created, body: { quantity: 1 } })).status, 403)
      const one = await server.request('GET', res.headers.get('location')!, { token })
      assert.equal(one.status, 200)
      const { token: _secret, ...withoutToken } = res.body
      assert.deepEqual({ ...one.body, lastUsedAt: null }, withoutToken)
      const list = await server.request('GET', '/v1/keys', { token })
      assert.equal(list.status, 200)
      assert.ok(list.body.some((k: { name: string }) => k.name === 'reporter'))
      for (const key of list.body) assert.deepEqual(Object.keys(key).sort(), KEY_FIELDS)
      assert.ok(!list.text.includes(created.slice(4, 20)), 'no part of the token is listed')
    })

    for (const [label, body] of [
      ['an unknown scope', { name: 'x1', scopes: ['inventory:read', 'everything'] }],
      ['no scope', { name: 'x2', scopes: [] }],
      ['a repeated scope', { name: 'x3', scopes: ['admin', 'admin'] }],
      ['a wildcard', { name: 'x4', scopes: ['*'] }],
      ['a name that breaks the CLI rules', { name: '1starts-with-digit', scopes: ['admin'] }],
      ['no scopes field', { name: 'x5' }],
      ['an unknown field', { name: 'x6', scopes: ['admin'], admin: true }],
    ] as const) {
      test(`When a key is created with ${label}, then 400 and no key is made`, async () => {
        const before = await state()
        const res = await suite.server.request('POST', '/v1/keys', { token: suite.token, body })
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.code, 'invalid_request')
        assert.deepEqual(await state(), before)
      })
    }

    test('When a key is created with the name of an active key, then 409 key_name_taken and nothing is made', async () => {
      const before = await state()
      const res = await suite.server.request('POST', '/v1/keys', { token: suite.token, body: { name: 'suite', scopes: ['admin'] } })
      assert.equal(res.status, 409, res.text)
      assert.deepEqual(res.body, { code: 'key_name_taken', message: "An active key named 'suite' already exists", status: 409 })
      assert.deepEqual(await state(), before)
    })

    test('When a key is revoked over HTTP, then 204, a second instance refuses it on its next request, it leaves the list, and a second DELETE is 404', async () => {
      const { server, token } = suite
      const second: TestApp = await startApp(server.env.DATABASE_URL!)
      try {
        const made = await server.request('POST', '/v1/keys', { token, body: { name: 'doomed', scopes: ['inventory:read'] } })
        assert.equal(made.status, 201)
        const doomed = made.body.token as string
        assert.equal((await second.request('GET', '/v1/inventory', { token: doomed })).status, 200, 'the second instance knows it')
        const res = await server.request('DELETE', `/v1/keys/${made.body.id}`, { token })
        assert.equal(res.status, 204)
        assert.equal(res.text, '')
        const refused = await second.request('GET', '/v1/inventory', { token: doomed })
        assert.equal(refused.status, 401)
        assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="petstore", error="invalid_token"')
        assert.ok(!(await server.request('GET', '/v1/keys', { token })).body.some((k: { name: string }) => k.name === 'doomed'))
        assert.equal((await server.request('GET', `/v1/keys/${made.body.id}`, { token })).status, 404)
        assert.equal((await server.request('DELETE', `/v1/keys/${made.body.id}`, { token })).status, 404)
      } finally {
        await second.close()
      }
    })

    test('When a key id beyond 32 bits is asked for or revoked, over HTTP or the CLI, then 404 / exit 1, never a database error', async () => {
      const { server, token } = suite
      for (const id of ['2147483648', '3000000000', '9223372036854775807']) {
        for (const method of ['GET', 'DELETE']) {
          const res = await server.request(method, `/v1/keys/${id}`, { token })
          assert.equal(res.status, 404, `${method} ${id}: ${res.text}`)
          assert.equal(res.body.code, 'not_found')
        }
        const cli = await server.cli(['keys', 'revoke', id])
        assert.equal(cli.code, 1, cli.stderr)
        assert.match(cli.stderr, /^Error: No active key named or numbered/m)
      }
    })

    test('When the deprecated lookup is called, then the admin report over HTTP shows the same rows as the CLI', async () => {
      const { server, token } = suite
      const caller = await createKey(server.env.DATABASE_URL!, 'old-client', ['pets:read'])
      assert.equal((await server.request('GET', '/v1/pets/1', { token: caller })).status, 404)
      // The counts are flushed on close: a second app on the same database sees them once the first closes.
      await server.close()
      suite.server = await startApp(suite.database.url)
      const res = await suite.server.request('GET', '/v1/deprecations', { token })
      assert.equal(res.status, 200, res.text)
      const cli = await suite.server.cli(['deprecations', '--json'])
      assert.equal(cli.code, 0, cli.stderr)
      assert.deepEqual(res.body, JSON.parse(cli.stdout))
      assert.equal(res.body.find((r: { name: string }) => r.name === 'old-client')?.calls, 1)
    })
  })

  describe(`scoped keys from the CLI (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const cli = (...args: string[]) => suite.server.cli(args)

    test('When a key is created with --scopes, then keys list shows exactly those, and without --scopes every scope, never a wildcard', async () => {
      const limited = await cli('keys', 'create', '--name', 'limited', '--scopes', 'orders:read,inventory:read')
      assert.equal(limited.code, 0, limited.stderr)
      assert.match(limited.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/, 'the token is the last and only line on stdout')
      const full = await cli('keys', 'create', '--name', 'full')
      assert.equal(full.code, 0, full.stderr)
      const list = await cli('keys', 'list')
      const rows = list.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'))
      assert.deepEqual(rows[0], ['ID', 'NAME', 'SCOPES', 'CREATED', 'LAST USED', 'REVOKED', 'LOCATIONS'])
      assert.equal(rows.find((r) => r[1] === 'limited')?.[2], 'inventory:read,orders:read')
      assert.equal(rows.find((r) => r[1] === 'full')?.[2], SCOPES.join(','))
      assert.doesNotMatch(list.stdout, /\*/)
      const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: limited.stdout.trim(), body: { quantity: 1 } })
      assert.equal(res.status, 403)
    })

    for (const scopes of ['inventory:read,everything', '', 'admin,admin', '*']) {
      test(`When a key is created with --scopes '${scopes}', then it fails naming the problem and makes no key`, async () => {
        const result = await cli('keys', 'create', '--name', 'refused', '--scopes', scopes)
        assert.equal(result.code, 1, result.stderr)
        assert.equal(result.stdout, '')
        assert.match(result.stderr, /scope/)
        assert.doesNotMatch((await cli('keys', 'list')).stdout, /\trefused\t/)
      })
    }
  })
}

describe('keys made before scopes existed', () => {
  const opened: TestApp[] = []
  after(() => Promise.all(opened.map((app) => app.close())))

  for (const backend of BACKENDS) {
    test(`When a database from before the scopes migration is opened (${backend.name}), then its keys, the first one included, keep every scope`, async () => {
      const database = await backend.create()
      try {
        const token = await createKey(database.url, 'old')
        // Take the schema back to before the migration, as an older release left it.
        await rollBackScopes(backend.name, database.url)
        const app = await startApp(database.url)
        opened.push(app)
        const me = await app.request('GET', '/v1/keys/current', { token })
        assert.equal(me.status, 200, me.text)
        assert.deepEqual(me.body.scopes, [...SCOPES])
        for (const path of ['/v1/inventory', '/v1/store/orders', '/v1/keys', '/v1/deprecations']) {
          assert.equal((await app.request('GET', path, { token })).status, 200, path)
        }
        await app.close()
        opened.pop()
      } finally {
        await database.drop()
      }
    })
  }
})

/** Drops the scopes column and forgets its migration, as if the database predated it. */
async function rollBackScopes(backend: 'sqlite' | 'postgres', url: string): Promise<void> {
  if (backend === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(url.slice('sqlite:'.length))
    try {
      db.exec(`ALTER TABLE api_keys DROP COLUMN scopes; DELETE FROM schema_migrations WHERE name = '005_key_scopes'`)
    } finally {
      db.close()
    }
    return
  }
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP TRIGGER keys_changed ON api_keys;
      ALTER TABLE api_keys DROP COLUMN scopes;
      CREATE TRIGGER keys_changed AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, key_hash, revoked_at ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION bump_keys_version();
      DELETE FROM schema_migrations WHERE name = '006_key_scopes'`)
  } finally {
    await client.end()
  }
}
