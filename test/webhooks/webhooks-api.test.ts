// Webhook subscriptions as an admin manages them, over HTTP and with the CLI: admin only; a new one
// answered with its secret once (and never after), starting at the ledger's end; listed with where its
// delivery stands; deleted; enabled. Bad input and refused destinations change nothing.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey, runCliInProcess } from '../support/helpers.js'

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const STATE_FIELDS = [
  'id',
  'url',
  'description',
  'createdAt',
  'state',
  'deliveredThrough',
  'lastSuccessAt',
  'failingSince',
  'failedAttempts',
  'nextAttemptAt',
  'lastError',
  'disabledAt',
  'disabledReason',
]
// Not delivered to in this file: no ledger row is written after a subscription is made.
const PUBLIC = 'https://hooks.example.invalid/petstore'

for (const backend of BACKENDS) {
  describe(`webhook subscriptions over HTTP and the CLI (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      seed: [
        { petId: 1, quantity: 5, status: 'available' },
        { petId: 2, quantity: 0, status: 'sold' },
      ],
    })
    let token: string
    let reader: string
    before(async () => {
      token = suite.token
      reader = await createKey(suite.database.url, 'not-admin', [
        'inventory:read',
        'inventory:write',
        'orders:read',
        'orders:write',
        'pets:read',
      ])
    })
    const request = (
      method: string,
      path: string,
      options: { body?: unknown; rawBody?: string; headers?: Record<string, string>; token?: string } = {},
    ) => suite.server.request(method, path, { token, ...options })
    const rawList = async () => {
      const res = await request('GET', '/v1/webhooks')
      assert.equal(res.status, 200)
      return res.text
    }
    /**
     * The subscriptions as their admin made them, for the checks that nothing changed: their delivery
     * state moves by itself (the suite's subscriptions point at hosts that do not resolve, and any row
     * committed after one was made is tried), and a refused request must change the rest.
     */
    const listText = async () =>
      JSON.stringify(
        JSON.parse(await rawList()).map((w: Record<string, unknown>) => [w.id, w.url, w.description, w.createdAt, w.deliveredThrough]),
      )
    const ledgerEnd = async () => {
      const res = await request('GET', '/v1/inventory/changes?after=0&limit=1000')
      assert.equal(res.status, 200)
      return (res.body as { seq: number }[]).at(-1)?.seq ?? 0
    }
    const removeAll = async () => {
      for (const w of (await request('GET', '/v1/webhooks')).body)
        assert.equal((await request('DELETE', `/v1/webhooks/${w.id}`)).status, 204)
    }

    test('When a key without admin (or no key) asks, then every webhook route answers 401 or 403 and nothing changes', async () => {
      const before = await listText()
      const routes: [string, string, unknown?][] = [
        ['GET', '/v1/webhooks'],
        ['POST', '/v1/webhooks', { url: PUBLIC }],
        ['GET', '/v1/webhooks/1'],
        ['DELETE', '/v1/webhooks/1'],
        ['POST', '/v1/webhooks/1/enable'],
      ]
      for (const [method, path, body] of routes) {
        const anonymous = await suite.server.request(method, path, body === undefined ? {} : { body })
        assert.equal(anonymous.status, 401, `${method} ${path} without a key`)
        const denied = await suite.server.request(method, path, { token: reader, ...(body === undefined ? {} : { body }) })
        assert.equal(denied.status, 403, `${method} ${path} without admin: ${denied.text}`)
        assert.equal(denied.body.code, 'insufficient_scope')
        assert.doesNotMatch(denied.text, /whsec_/)
      }
      assert.equal(await listText(), before)
    })

    test('When an admin creates a subscription, then 201 with Location and the secret once; GET shows its state from the ledger’s end, never the secret', async () => {
      await removeAll()
      const end = await ledgerEnd()
      assert.ok(end >= 2, 'the seed wrote ledger rows')
      const created = await request('POST', '/v1/webhooks', { body: { url: PUBLIC, description: 'stock mirror' } })
      assert.equal(created.status, 201, created.text)
      const { id, secret } = created.body
      assert.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'deliveredThrough', 'description', 'id', 'secret', 'url'])
      assert.equal(BigInt(created.body.deliveredThrough), BigInt(end), 'it says where it starts: the ledger’s end')
      assert.ok(Number.isInteger(id) && id >= 1)
      assert.equal(created.headers.get('location'), `/v1/webhooks/${id}`)
      assert.equal(created.body.url, PUBLIC)
      assert.equal(created.body.description, 'stock mirror')
      assert.match(created.body.createdAt, ISO)
      assert.match(secret, SECRET)
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
      assert.ok(key.length >= 24 && key.length <= 64, `the key is 24 to 64 bytes (${key.length})`)

      const one = await request('GET', `/v1/webhooks/${id}`)
      assert.equal(one.status, 200)
      assert.deepEqual(Object.keys(one.body), STATE_FIELDS)
      assert.deepEqual(one.body, {
        id,
        url: PUBLIC,
        description: 'stock mirror',
        createdAt: created.body.createdAt,
        state: 'active',
        deliveredThrough: end,
        lastSuccessAt: null,
        failingSince: null,
        failedAttempts: 0,
        nextAttemptAt: null,
        lastError: null,
        disabledAt: null,
        disabledReason: null,
      })
      const list = await request('GET', '/v1/webhooks')
      assert.deepEqual(list.body, [one.body])
      for (const text of [one.text, list.text, (await suite.server.cli(['webhooks', 'list', '--json'])).stdout]) {
        assert.ok(!text.includes(secret) && !text.includes(secret.slice(6)) && !/whsec_|"secret"/.test(text), 'never the secret')
      }

      const second = await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/2` } })
      assert.equal(second.status, 201)
      assert.equal(second.body.description, null, 'no description: null')
      assert.notEqual(second.body.secret, secret, 'each has its own secret')
      assert.ok(second.body.id > id)
      assert.deepEqual(
        (await request('GET', '/v1/webhooks')).body.map((w: { id: number }) => w.id),
        [id, second.body.id],
        'by id',
      )
      // A row written now moves the ledger's end: the next subscription starts there.
      assert.equal((await request('PATCH', '/v1/inventory/1', { body: { quantity: 6 } })).status, 200)
      const third = await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/3` } })
      assert.equal((await request('GET', `/v1/webhooks/${third.body.id}`)).body.deliveredThrough, end + 1)
    })

    test('When the body or URL is bad, then 400 and the subscriptions are exactly as they were', async () => {
      const before = await listText()
      const bad: [string, { body?: unknown; rawBody?: string; headers?: Record<string, string> }, number, string?][] = [
        ['no body', {}, 400],
        ['no url', { body: { description: 'x' } }, 400],
        ['empty url', { body: { url: '' } }, 400],
        ['url not a string', { body: { url: 42 } }, 400],
        ['url null', { body: { url: null } }, 400],
        ['a relative url', { body: { url: '/hook' } }, 400, 'destination_refused'],
        ['not a URL', { body: { url: 'not a url' } }, 400, 'destination_refused'],
        ['ftp', { body: { url: 'ftp://hooks.example.com/x' } }, 400, 'destination_refused'],
        ['javascript', { body: { url: 'javascript:alert(1)' } }, 400, 'destination_refused'],
        ['credentials', { body: { url: 'https://user:pass@hooks.example.com/x' } }, 400, 'destination_refused'],
        ['url too long', { body: { url: `https://hooks.example.com/${'a'.repeat(2049)}` } }, 400],
        ['description too long', { body: { url: PUBLIC, description: 'd'.repeat(501) } }, 400],
        ['description not a string', { body: { url: PUBLIC, description: 7 } }, 400],
        ['an unknown field', { body: { url: PUBLIC, secret: 'whsec_AAAA' } }, 400],
        ['an array', { body: [{ url: PUBLIC }] }, 400],
        ['broken JSON', { rawBody: '{"url":', headers: { 'content-type': 'application/json' } }, 400],
        ['not JSON', { rawBody: `url=${PUBLIC}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 415],
      ]
      for (const [what, options, status, code] of bad) {
        const res = await request('POST', '/v1/webhooks', options)
        assert.equal(res.status, status, `${what}: ${res.text}`)
        if (code) assert.equal(res.body.code, code, what)
        assert.equal(res.body.status, status, what)
        assert.doesNotMatch(res.text, /whsec_/)
      }
      assert.equal(await listText(), before)
    })

    test('When a URL names a loopback, private, link-local or unique-local address or localhost, then 400 destination_refused and nothing is made', async () => {
      const before = await listText()
      const refused = [
        'http://127.0.0.1/hook',
        'http://127.1.2.3:8080/hook',
        'https://localhost/hook',
        'http://LOCALHOST:3000/hook',
        'http://api.localhost/hook',
        'http://[::1]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://10.0.0.5/hook',
        'http://172.16.3.4/hook',
        'http://192.168.1.1/hook',
        'http://169.254.169.254/latest/meta-data',
        'http://[fe80::1]/hook',
        'http://[fd12:3456::1]/hook',
        'http://100.64.0.1/hook',
        'http://0.0.0.0/hook',
        'http://2130706433/hook',
        'http://0x7f.1/hook',
      ]
      for (const url of refused) {
        const res = await request('POST', '/v1/webhooks', { body: { url } })
        assert.equal(res.status, 400, `${url}: ${res.text}`)
        assert.deepEqual(res.body, { code: 'destination_refused', message: res.body.message, status: 400 }, url)
        assert.match(res.body.message, /non-public|public/, url)
      }
      assert.equal(await listText(), before)
      // A public literal is accepted.
      const ok = await request('POST', '/v1/webhooks', { body: { url: 'https://93.184.215.14/hook' } })
      assert.equal(ok.status, 201, ok.text)
      assert.equal((await request('DELETE', `/v1/webhooks/${ok.body.id}`)).status, 204)
      assert.equal(await listText(), before)
    })

    test('When a URL names localhost with a trailing dot (the same host), then 400 destination_refused too', async () => {
      const before = await listText()
      for (const url of ['http://localhost./hook', 'http://LOCALHOST.:8080/hook', 'http://api.localhost./hook']) {
        const res = await request('POST', '/v1/webhooks', { body: { url } })
        if (res.status === 201) await request('DELETE', `/v1/webhooks/${res.body.id}`)
        assert.equal(res.status, 400, `${url}: ${res.text}`)
        assert.equal(res.body.code, 'destination_refused')
      }
      assert.equal(await listText(), before)
    })

    test('When an id names no subscription or is not an id, then 404 or 400 and nothing changes', async () => {
      const before = await listText()
      for (const method of ['GET', 'DELETE'] as const) {
        for (const [id, status] of [
          ['999999', 404],
          ['2147483648', 404],
          ['9223372036854775807', 404],
          ['0', 404],
          ['abc', 400],
          ['1.5', 400],
          ['-1x', 400],
          ['99999999999999999999', 400],
        ] as const) {
          const res = await request(method, `/v1/webhooks/${id}`)
          assert.equal(res.status, status, `${method} ${id}: ${res.text}`)
        }
      }
      assert.equal((await request('POST', '/v1/webhooks/999999/enable')).status, 404)
      assert.equal((await request('POST', '/v1/webhooks/abc/enable')).status, 400)
      assert.equal(await listText(), before)
    })

    test('When a subscription is deleted, then 204 and it is gone: GET, DELETE and enable answer 404', async () => {
      const created = await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/gone` } })
      const { id } = created.body
      // The others as their admin made them (listText): their delivery state moves by itself meanwhile.
      const others = JSON.stringify(JSON.parse(await listText()).filter(([other]: [number]) => other !== id))
      const deleted = await request('DELETE', `/v1/webhooks/${id}`)
      assert.equal(deleted.status, 204)
      assert.equal(deleted.text, '')
      assert.equal((await request('GET', `/v1/webhooks/${id}`)).status, 404)
      assert.equal((await request('DELETE', `/v1/webhooks/${id}`)).status, 404)
      assert.equal((await request('POST', `/v1/webhooks/${id}/enable`)).status, 404)
      assert.equal(await listText(), others)
    })

    test('When an active subscription is enabled, then 200 with its state, unchanged', async () => {
      const created = await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/enable` } })
      const before = await request('GET', `/v1/webhooks/${created.body.id}`)
      const enabled = await request('POST', `/v1/webhooks/${created.body.id}/enable`)
      assert.equal(enabled.status, 200, enabled.text)
      assert.deepEqual(enabled.body, before.body)
      assert.equal((await request('DELETE', `/v1/webhooks/${created.body.id}`)).status, 204)
    })

    test('When 100 subscriptions exist, then another is refused with 409 webhook_limit_reached', async () => {
      await removeAll()
      for (let i = 0; i < 100; i++) assert.equal((await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/${i}` } })).status, 201)
      const before = await listText()
      const refused = await request('POST', '/v1/webhooks', { body: { url: `${PUBLIC}/101` } })
      assert.equal(refused.status, 409, refused.text)
      assert.equal(refused.body.code, 'webhook_limit_reached')
      const cli = await suite.server.cli(['webhooks', 'add', `${PUBLIC}/102`])
      assert.equal(cli.code, 1, cli.stderr)
      assert.equal(cli.stdout, '')
      assert.equal(await listText(), before)
      await removeAll()
    })

    test('When the CLI adds, lists, enables and removes, then stdout holds the secret alone and the HTTP API agrees', async () => {
      await removeAll()
      const end = await ledgerEnd()
      const added = await suite.server.cli(['webhooks', 'add', `${PUBLIC}/cli`, '--description', 'from the CLI'])
      assert.equal(added.code, 0, added.stderr)
      assert.match(added.stdout, /^whsec_[A-Za-z0-9+/]+={0,2}\n$/, 'the secret alone on stdout')
      const secret = added.stdout.trim()
      assert.match(added.stderr, /Created webhook \d+/)
      const [listed] = (await request('GET', '/v1/webhooks')).body
      assert.equal(listed.url, `${PUBLIC}/cli`)
      assert.equal(listed.description, 'from the CLI')
      assert.equal(listed.deliveredThrough, end)
      assert.equal(listed.state, 'active')

      const json = await suite.server.cli(['webhooks', 'list', '--json'])
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.stdout, `${await rawList()}\n`, 'list --json writes what GET /v1/webhooks does')
      assert.ok(!json.stdout.includes(secret))
      const table = await suite.server.cli(['webhooks', 'list'])
      assert.equal(table.code, 0)
      const [header, row, ...rest] = table.stdout.trimEnd().split('\n')
      assert.deepEqual(header!.split('\t'), [
        'ID',
        'STATE',
        'DELIVERED THROUGH',
        'LAST SUCCESS',
        'NEXT ATTEMPT',
        'LAST ERROR',
        'URL',
        'DESCRIPTION',
      ])
      assert.deepEqual(row!.split('\t'), [String(listed.id), 'active', String(end), '-', '-', '-', `${PUBLIC}/cli`, 'from the CLI'])
      assert.deepEqual(rest, [])
      assert.ok(!table.stdout.includes(secret))

      const enabled = await suite.server.cli(['webhooks', 'enable', String(listed.id)])
      assert.equal(enabled.code, 0, enabled.stderr)
      assert.equal(enabled.stdout, '')
      assert.match(enabled.stderr, new RegExp(`Enabled webhook ${listed.id}`))

      const removed = await suite.server.cli(['webhooks', 'remove', String(listed.id)])
      assert.equal(removed.code, 0, removed.stderr)
      assert.equal((await request('GET', `/v1/webhooks/${listed.id}`)).status, 404)
      const again = await suite.server.cli(['webhooks', 'remove', String(listed.id)])
      assert.equal(again.code, 1, 'nothing to remove')
      assert.match(again.stderr, /No webhook subscription numbered/)
      const enableGone = await suite.server.cli(['webhooks', 'enable', String(listed.id)])
      assert.equal(enableGone.code, 1)
    })

    test('When the CLI is given bad input or a refused destination, then it fails without output on stdout and nothing changes', async () => {
      const before = await listText()
      for (const [args, code] of [
        [['webhooks'], 2],
        [['webhooks', 'add'], 2],
        [['webhooks', 'list', 'extra'], 2],
        [['webhooks', 'remove'], 2],
        [['webhooks', 'remove', 'abc'], 2],
        [['webhooks', 'enable', '1.5'], 2],
        [['webhooks', 'frobnicate', '1'], 2],
        [['webhooks', 'add', PUBLIC, 'extra'], 2],
        [['webhooks', 'add', PUBLIC, '--bogus'], 2],
        [['webhooks', 'add', 'http://127.0.0.1:9/hook'], 1],
        [['webhooks', 'add', 'http://localhost:9/hook'], 1],
        [['webhooks', 'add', 'http://[::1]:9/hook'], 1],
        [['webhooks', 'add', 'ftp://hooks.example.com/x'], 1],
      ] as const) {
        const res = await suite.server.cli([...args])
        assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`)
        assert.equal(res.stdout, '', args.join(' '))
        assert.notEqual(res.stderr, '', args.join(' '))
      }
      assert.equal(await listText(), before)
      // With WEBHOOK_ALLOW_PRIVATE=true the CLI accepts a loopback URL.
      const allowed = await runCliInProcess(['webhooks', 'add', 'http://127.0.0.1:9/hook'], {
        ...suite.server.env,
        WEBHOOK_ALLOW_PRIVATE: 'true',
      })
      assert.equal(allowed.code, 0, allowed.stderr)
      assert.match(allowed.stdout, /^whsec_/)
      const id = (await request('GET', '/v1/webhooks')).body.find((w: { url: string }) => w.url === 'http://127.0.0.1:9/hook').id
      assert.equal((await request('DELETE', `/v1/webhooks/${id}`)).status, 204)
      assert.equal(await listText(), before)
    })
  })
}
