// Issue 39: OpenTelemetry traces, off by default and on with the standard variables, with real
// `petstore serve` processes exporting to an OTLP/HTTP collector of the test's own.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import pg from 'pg'
import { BACKENDS, createKey, runCli, seed, useResources } from '../support/helpers.js'
import { freePort, scrape, startWithMetrics } from '../support/metrics-scrape.js'
import { BROKER_ENV, TestExchange, TestStream } from '../webhooks/brokers.js'
import { Receiver, waitFor } from '../webhooks/receiver.js'
import { TestCollector } from './collector.js'

const RECORDER = fileURLToPath(new URL('../support/record-imports.js', import.meta.url))
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const SERVER = 2
const CLIENT = 3
const PRODUCER = 4

/** A GET on a connection of its own (closed after it): the status. */
const getOnNewConnection = (port: number, path: string, token: string) =>
  new Promise<number>((resolve, reject) =>
    get({ host: '127.0.0.1', port, path, agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    }).on('error', reject),
  )

/** The attributes whose names start with `prefix`. */
const pick = (attributes: Record<string, unknown>, prefix: string) =>
  Object.fromEntries(Object.entries(attributes).filter(([name]) => name.startsWith(prefix)))

/**
 * A trace's spans as `name < parent's name` (the parent's span id when it is not in the trace, ''
 * for a root), sorted, once `count` of them have arrived.
 */
async function waitForTree(collector: TestCollector, traceId: string, count: number): Promise<string[]> {
  const spans = () => collector.spans.filter((s) => s.traceId === traceId)
  await waitFor(
    () => spans().length >= count,
    10_000,
    () =>
      `${count} spans in the trace (${spans()
        .map((s) => s.name)
        .join(', ')})`,
  )
  const all = spans()
  const nameOf = (id: string) => all.find((s) => s.spanId === id)?.name ?? id
  return all.map((s) => `${s.name} < ${s.parentSpanId === '' ? '' : nameOf(s.parentSpanId)}`).sort()
}

/** Drops the orders' table, as a broken database would lose it: a read of an order then fails with a 500. */
async function breakOrders(url: string) {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    db.exec('DROP TABLE orders')
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('DROP TABLE orders CASCADE')
  await client.end()
}

for (const backend of BACKENDS) {
  describe(`tracing (${backend.name}, real processes)`, () => {
    const resources = useResources()
    const closing: { close(): Promise<void> }[] = []
    after(async () => {
      for (const c of closing) await c.close()
    })
    /** A collector of the test's own (closed after the suite), and a database with a key and pet 7 (3 in stock). */
    const traced = async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
      return { collector, database, token }
    }

    test('When OTEL_EXPORTER_OTLP_ENDPOINT is set, then each request is one SERVER span named by its route, under the caller’s traceparent, with the HTTP attributes and no query, and its log line carries the trace and span ids', async () => {
      const { collector, database, token } = await traced()
      const server = await resources.server(database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,team=inventory%20ops',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      })
      const patched = await server.request('PATCH', '/v1/inventory/7', {
        token,
        body: { quantity: 5 },
        headers: { traceparent: TRACEPARENT, tracestate: 'vendor=1' },
      })
      assert.equal(patched.status, 200, patched.text)
      const missing = await server.request('GET', '/v1/inventory/999', { token })
      assert.equal(missing.status, 404)
      // A client's X-Forwarded-Proto, with no proxy trusted (TRUST_PROXY unset): not the request's scheme.
      const feed = await server.request('GET', '/v1/inventory/changes?after=0&limit=1', {
        token,
        headers: { 'x-forwarded-proto': 'https' },
      })
      assert.equal(feed.status, 200)

      const patch = await waitFor(
        () => collector.spans.find((s) => s.name === 'PATCH /v1/inventory/:petId'),
        10_000,
        () => `the PATCH's span (${collector.spans.map((s) => s.name).join(', ')})`,
      )
      assert.equal(patch.kind, SERVER)
      assert.equal(patch.traceId, TRACEPARENT.split('-')[1], 'in the caller’s trace')
      assert.equal(patch.parentSpanId, TRACEPARENT.split('-')[2], 'under the caller’s span')
      assert.equal(patch.traceState, 'vendor=1', 'the caller’s tracestate carried on')
      assert.equal(patch.attributes['http.request.method'], 'PATCH')
      assert.equal(patch.attributes['http.route'], '/v1/inventory/:petId')
      assert.equal(patch.attributes['url.path'], '/v1/inventory/7')
      assert.equal(patch.attributes['http.response.status_code'], 200)
      assert.equal(patch.attributes['server.port'], server.port)
      assert.equal(patch.attributes['url.scheme'], 'http', 'url.scheme: Required on a SERVER span')
      assert.equal(patch.attributes['error.type'], undefined)
      assert.equal(patch.resource['service.name'], 'petstore')
      assert.equal(patch.resource['deployment.environment.name'], 'test')
      assert.equal(patch.resource.team, 'inventory ops')
      assert.ok(!JSON.stringify(patch).includes(token), 'no key in the span')

      // Under it: the key's lookup (its first use: not yet remembered), and the stock write, whose wait
      // for a batch ends at its event, and the batch's commit, as database spans of the backend.
      const system = backend.name === 'sqlite' ? 'sqlite' : 'postgresql'
      const tree = await waitForTree(collector, patch.traceId, 4)
      assert.deepEqual(
        tree,
        [
          `PATCH /v1/inventory/:petId < ${TRACEPARENT.split('-')[2]}`,
          'SELECT api_keys < PATCH /v1/inventory/:petId',
          'stock write < PATCH /v1/inventory/:petId',
          'BATCH < stock write',
        ].sort(),
      )
      const inTrace = (name: string) => collector.spans.find((s) => s.traceId === patch.traceId && s.name === name)!
      assert.equal(inTrace('SELECT api_keys').kind, CLIENT)
      assert.deepEqual(pick(inTrace('SELECT api_keys').attributes, 'db.'), {
        'db.system.name': system,
        'db.operation.name': 'SELECT',
        'db.collection.name': 'api_keys',
      })
      assert.equal(inTrace('stock write').attributes['petstore.stock_write.kind'], 'set')
      assert.deepEqual(inTrace('stock write').events, ['batch started'])
      assert.equal(inTrace('BATCH').kind, CLIENT)
      assert.deepEqual(pick(inTrace('BATCH').attributes, 'db.'), {
        'db.system.name': system,
        'db.operation.name': 'BATCH',
        'db.operation.batch.size': 1,
      })
      for (const span of collector.spans.filter((s) => s.traceId === patch.traceId))
        assert.ok(!JSON.stringify(span).includes(token.slice(-12)), `no key in ${span.name}`)

      const get = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory/:petId'), 10_000, 'the GET’s span')
      assert.deepEqual(
        await waitForTree(collector, get.traceId, 1),
        ['GET /v1/inventory/:petId < '],
        'a 404: the request alone (its key remembered)',
      )
      assert.notEqual(get.traceId, patch.traceId, 'a request without traceparent starts a trace of its own')
      assert.equal(get.attributes['http.response.status_code'], 404)
      assert.equal(get.attributes['error.type'], undefined, 'a 4xx is the client’s: no error.type on a SERVER span')

      const placed = await server.request('POST', '/v1/store/orders', { token, body: { petId: 7, quantity: 2 } })
      assert.equal(placed.status, 201, placed.text)
      const order = await waitFor(() => collector.spans.find((s) => s.name === 'POST /v1/store/orders'), 10_000, 'the order’s span')
      assert.deepEqual(
        await waitForTree(collector, order.traceId, 3),
        ['POST /v1/store/orders < ', 'stock write < POST /v1/store/orders', 'BATCH < stock write'].sort(),
      )
      assert.equal(
        collector.spans.find((s) => s.traceId === order.traceId && s.name === 'stock write')!.attributes['petstore.stock_write.kind'],
        'place',
      )

      const listed = await server.request('GET', '/v1/inventory', { token })
      assert.equal(listed.status, 200)
      const list = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory'), 10_000, 'the list’s span')
      assert.deepEqual(
        await waitForTree(collector, list.traceId, 2),
        ['GET /v1/inventory < ', 'build inventory list < GET /v1/inventory'].sort(),
      )
      const build = collector.spans.find((s) => s.traceId === list.traceId && s.name === 'build inventory list')!
      assert.equal(build.attributes['petstore.list.entries'], 1)
      assert.equal(build.attributes['petstore.list.bytes'], Buffer.byteLength(listed.text))

      const changes = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory/changes'), 10_000, 'the feed’s span')
      assert.equal(changes.attributes['url.path'], '/v1/inventory/changes', 'the path without its query')
      assert.equal(changes.attributes['url.scheme'], 'http', 'an untrusted X-Forwarded-Proto changes nothing')
      assert.ok(!JSON.stringify(changes).includes('after='), 'no query anywhere in the span')

      const line = await server.waitForLog((l) => l.msg === 'request' && l.method === 'PATCH')
      assert.equal(line.trace_id, patch.traceId)
      assert.equal(line.span_id, patch.spanId)
      assert.equal(line.trace_flags, '01')
      assert.ok(typeof line.reqId === 'string', 'the request id stays')
      await server.stop()
    })

    test('When a PATCH’s row is delivered to a webhook, JetStream and RabbitMQ, then each delivery is a span of its own trace linked to the PATCH’s, and its traceparent goes out with the message', async () => {
      const { collector, database, token } = await traced()
      const receiver = await Receiver.start()
      const stream = await TestStream.open()
      const exchange = await TestExchange.open()
      closing.push(receiver, stream, exchange)
      // The default protocol, http/protobuf.
      const server = await resources.server(database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        ...BROKER_ENV,
      })
      for (const url of [receiver.url, stream.url(), exchange.url()])
        assert.equal((await server.request('POST', '/v1/webhooks', { token, body: { url } })).status, 201)
      const patched = await server.request('PATCH', '/v1/inventory/7', {
        token,
        body: { quantity: 5 },
        headers: { traceparent: TRACEPARENT },
      })
      assert.equal(patched.status, 200, patched.text)
      const patch = await waitFor(() => collector.spans.find((s) => s.name === 'PATCH /v1/inventory/:petId'), 10_000, 'the PATCH’s span')
      const linkedToPatch = [{ traceId: patch.traceId, spanId: patch.spanId }]

      /** The span a delivered message's traceparent names: of a trace of its own, linked to the PATCH's. */
      const spanOf = async (traceparent: string | undefined, what: string) => {
        const [, traceId, spanId, flags] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent ?? '') ?? []
        assert.ok(traceId && spanId, `${what} carries a traceparent (${traceparent})`)
        assert.equal(flags, '01', 'sampled')
        const span = await waitFor(() => collector.spans.find((s) => s.spanId === spanId), 10_000, `${what}'s span`)
        assert.equal(span.traceId, traceId)
        assert.notEqual(span.traceId, patch.traceId, 'a trace of its own: no request waits for a delivery')
        assert.equal(span.parentSpanId, '')
        assert.deepEqual(span.links, linkedToPatch, 'linked to the PATCH that made the row')
        return span
      }

      const posted = await waitFor(() => receiver.requests[0], 10_000, 'the webhook POST')
      const post = await spanOf(posted.headers.traceparent as string | undefined, 'the webhook POST')
      assert.equal(post.name, 'POST')
      assert.equal(post.kind, CLIENT)
      assert.deepEqual(pick(post.attributes, 'http.'), { 'http.request.method': 'POST', 'http.response.status_code': 200 })
      assert.equal(post.attributes['url.full'], receiver.url)
      assert.equal(post.attributes['server.address'], '127.0.0.1')
      assert.equal(post.attributes['server.port'], receiver.port)

      await waitFor(async () => (await stream.count()) === 1, 10_000, 'the JetStream message')
      const [stored] = await stream.messages()
      const nats = await spanOf(stored!.traceparent, 'the JetStream message')
      assert.equal(nats.name, `publish ${stream.prefix}`)
      assert.equal(nats.kind, PRODUCER)
      assert.deepEqual(pick(nats.attributes, 'messaging.'), {
        'messaging.system': 'nats',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'publish',
        'messaging.destination.name': `${stream.prefix}.7`,
        'messaging.message.id': stored!.msgId,
      })

      const queued = await waitFor(() => exchange.received[0], 10_000, 'the RabbitMQ message')
      const amqp = await spanOf(queued.traceparent, 'the RabbitMQ message')
      assert.equal(amqp.name, `publish ${exchange.exchange}`)
      assert.equal(amqp.kind, PRODUCER)
      assert.equal(amqp.attributes['messaging.system'], 'rabbitmq')
      assert.equal(amqp.attributes['messaging.destination.name'], exchange.exchange)
      assert.equal(amqp.attributes['messaging.rabbitmq.destination.routing_key'], 'stock.changed')
      assert.equal(amqp.attributes['messaging.message.id'], queued.messageId)
      for (const span of [post, nats, amqp]) assert.ok(!JSON.stringify(span).includes('guest'), `no credential in ${span.name}`)
      await server.stop()
    })

    test('When a sampler says no, then nothing of the request is exported, and its log line still carries its trace id with trace_flags 00', async () => {
      const { collector, database, token } = await traced()
      const spansOf = (service: string) => collector.spans.filter((s) => s.resource['service.name'] === service)
      const UNSAMPLED = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'
      const SAMPLED = '00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
      /** A server with `env` that answers `requests`, then stops (its last spans exported before it exits). */
      const run = async (service: string, env: Record<string, string>, requests: { traceparent?: string }[]) => {
        const server = await resources.server(database.url, {
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
          OTEL_SERVICE_NAME: service,
          OTEL_BSP_SCHEDULE_DELAY: '50',
          ...env,
        })
        for (const [n, { traceparent }] of requests.entries()) {
          const headers: Record<string, string> = traceparent === undefined ? {} : { traceparent }
          const res = await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: n }, headers })
          assert.equal(res.status, 200, res.text)
        }
        await waitFor(() => server.logs().filter((l) => l.msg === 'request').length === requests.length, 10_000, 'every request’s line')
        const lines = server.logs().filter((l) => l.msg === 'request')
        await server.stop()
        assert.equal(server.child.exitCode, 0, server.stderr)
        return lines
      }

      // The default, parent-based always on: a caller's unsampled traceparent is followed, a sampled one too.
      const [unsampled, sampled] = await run('petstore-parent', {}, [{ traceparent: UNSAMPLED }, { traceparent: SAMPLED }])
      assert.equal(unsampled!.trace_id, UNSAMPLED.split('-')[1], 'the caller’s trace id, though not sampled')
      assert.match(String(unsampled!.span_id), /^[0-9a-f]{16}$/)
      assert.notEqual(unsampled!.span_id, UNSAMPLED.split('-')[2], 'a span of this service’s own')
      assert.equal(unsampled!.trace_flags, '00')
      assert.equal(sampled!.trace_flags, '01')
      const exported = spansOf('petstore-parent')
      assert.ok(
        exported.some((s) => s.spanId === sampled!.span_id),
        'the sampled request’s span is exported',
      )
      assert.deepEqual(
        exported.filter((s) => s.traceId === UNSAMPLED.split('-')[1]).map((s) => s.name),
        [],
        'nothing of the unsampled request',
      )

      // parentbased_traceidratio at 0: a sampled caller is followed, a request of its own is not sampled.
      const [followed, own] = await run(
        'petstore-ratio',
        { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
        [{ traceparent: SAMPLED }, {}],
      )
      assert.equal(followed!.trace_flags, '01')
      assert.equal(own!.trace_flags, '00')
      assert.deepEqual(
        [...new Set(spansOf('petstore-ratio').map((s) => s.traceId))],
        [SAMPLED.split('-')[1]],
        'only the sampled caller’s trace',
      )

      // always_off: not even a sampled caller's request.
      const [ignored] = await run('petstore-off', { OTEL_TRACES_SAMPLER: 'always_off' }, [{ traceparent: SAMPLED }])
      assert.equal(ignored!.trace_id, SAMPLED.split('-')[1])
      assert.equal(ignored!.trace_flags, '00')
      assert.deepEqual(spansOf('petstore-off'), [])
    })

    test('When the service runs --workers 2, then every worker traces its requests, each as an instance of its own', async () => {
      const { collector, database, token } = await traced()
      const server = await resources.server(
        database.url,
        { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' },
        { args: ['--workers', '2'] },
      )
      // A connection each (the cluster hands connections to the workers in turn): both workers answer some.
      for (let n = 0; n < 20; n++) assert.equal(await getOnNewConnection(server.port, '/v1/inventory', token), 200)
      await waitFor(() => collector.spans.filter((s) => s.name === 'GET /v1/inventory').length === 20, 10_000, 'the 20 requests’ spans')
      const instances = new Set(collector.spans.map((s) => s.resource['service.instance.id']))
      const pids = new Set(collector.spans.map((s) => s.resource['process.pid']))
      assert.equal(instances.size, 2, 'two instances')
      assert.equal(pids.size, 2, 'two processes')
      await server.stop()
    })

    test('When a request fails with a 5xx, then its SERVER span carries error.type (the status) and an error status', async () => {
      const { collector, database, token } = await traced()
      const server = await resources.server(database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      })
      // The key is verified (and remembered) first; then the orders' table goes, as a broken database would lose it.
      assert.equal((await server.request('GET', '/v1/inventory/7', { token })).status, 200)
      await breakOrders(database.url)
      const res = await server.request('GET', '/v1/store/orders/1', { token })
      assert.equal(res.status, 500, res.text)
      const span = await waitFor(
        () => collector.spans.find((s) => s.name === 'GET /v1/store/orders/:orderId'),
        10_000,
        () => `the failed request's span (${collector.spans.map((s) => s.name).join(', ')})`,
      )
      assert.equal(span.attributes['http.response.status_code'], 500)
      assert.equal(span.attributes['error.type'], '500')
      assert.equal(span.status?.code, 2, 'the span’s status is ERROR')
      assert.equal(span.status.message, '', 'an ERROR status without the error’s message')
      assert.deepEqual(span.events, [], 'no exception event')
      assert.ok(
        !JSON.stringify(span).includes('no such table') && !JSON.stringify(span).includes('does not exist'),
        'no internal message in the span',
      )
      await server.stop()
    })

    test('When a trusted proxy forwards a request with X-Forwarded-Proto https, then its SERVER span’s url.scheme is https', async () => {
      const { collector, database, token } = await traced()
      const server = await resources.server(database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        TRUST_PROXY: '127.0.0.1',
      })
      const res = await server.request('GET', '/v1/inventory/7', { token, headers: { 'x-forwarded-proto': 'https' } })
      assert.equal(res.status, 200, res.text)
      const span = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory/:petId'), 10_000, 'the GET’s span')
      assert.equal(span.attributes['url.scheme'], 'https', 'the scheme the client used, as the trusted proxy says')
      await server.stop()
    })

    test('When a route answers a 4xx (404, 409, 412, 400, 403, 429), then its SERVER span’s status stays unset, without error.type or any message; a 5xx stays an ERROR', async () => {
      const { collector, database, token } = await traced()
      const reader = await createKey(database.url, 'tracing-reader', ['inventory:read'])
      // Six requests per key per window: the key's seventh is refused with a 429.
      const server = await resources.server(database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        RATE_LIMIT_PER_KEY: '6',
      })
      /** Each request in a trace of its own (its caller's traceparent), so its SERVER span is found by the trace id. */
      let traces = 0
      const send = async (method: string, path: string, options: { token: string; body?: unknown; headers?: Record<string, string> }) => {
        const traceId = (++traces).toString(16).padStart(32, 'a')
        const headers = { ...options.headers, traceparent: `00-${traceId}-00f067aa0ba902b7-01` }
        return { traceId, res: await server.request(method, path, { ...options, headers }) }
      }
      const cases: [status: number, route: string, sent: { traceId: string; res: { status: number; text: string } }][] = []
      const expect = async (status: number, route: string, sent: ReturnType<typeof send>) => {
        const done = await sent
        assert.equal(done.res.status, status, `${route}: ${done.res.text}`)
        cases.push([status, route, done])
      }
      // The token's first four requests: a pet no entry has, an order past the stock, an If-Match no
      // entry matches, a body the schema refuses.
      await expect(404, 'GET /v1/inventory/:petId', send('GET', '/v1/inventory/123456789', { token }))
      await expect(409, 'POST /v1/store/orders', send('POST', '/v1/store/orders', { token, body: { petId: 7, quantity: 99 } }))
      await expect(
        412,
        'PATCH /v1/inventory/:petId',
        send('PATCH', '/v1/inventory/7', { token, body: { quantity: 1 }, headers: { 'if-match': '"nope"' } }),
      )
      await expect(400, 'PATCH /v1/inventory/:petId', send('PATCH', '/v1/inventory/7', { token, body: { quantity: 'many' } }))
      // A key without inventory:write.
      await expect(403, 'PATCH /v1/inventory/:petId', send('PATCH', '/v1/inventory/7', { token: reader, body: { quantity: 1 } }))
      // No route at all (the not-found handler's 404).
      await expect(404, 'GET', send('GET', '/v1/nowhere', { token: reader }))
      // The token's fifth and sixth, answered; its seventh, past the limit.
      assert.equal((await send('GET', '/v1/inventory', { token })).res.status, 200)
      assert.equal((await send('GET', '/v1/inventory', { token })).res.status, 200)
      await expect(429, 'GET /v1/inventory', send('GET', '/v1/inventory', { token }))

      // Every answer's SERVER span, side by side with what the conventions ask of it: status UNSET (the
      // client's error, not the server's), no error.type, no message, no exception event.
      const seen = []
      for (const [status, , { traceId }] of cases) {
        const span = await waitFor(
          () => collector.spans.find((s) => s.traceId === traceId && s.kind === SERVER),
          10_000,
          () => `the ${status}'s span (${collector.spans.map((s) => s.name).join(', ')})`,
        )
        const { name, attributes, status: spanStatus, events } = span
        seen.push({ status, name, code: attributes['http.response.status_code'], spanStatus, errorType: attributes['error.type'], events })
      }
      assert.deepEqual(
        seen,
        cases.map(([status, route]) => ({
          status,
          name: route,
          code: status,
          spanStatus: { code: 0, message: '' },
          errorType: undefined,
          events: [],
        })),
      )

      // A 5xx is the server's: ERROR, error.type, and still no message.
      // A key of its own: the token is past its limit.
      const orders = await createKey(database.url, 'tracing-orders', ['orders:read'])
      await breakOrders(database.url)
      const broken = await send('GET', '/v1/store/orders/1', { token: orders })
      assert.equal(broken.res.status, 500, broken.res.text)
      const span = await waitFor(
        () => collector.spans.find((s) => s.traceId === broken.traceId && s.kind === SERVER),
        10_000,
        'the 500’s span',
      )
      assert.deepEqual(span.status, { code: 2, message: '' }, 'the 500: ERROR, without the error’s message')
      assert.equal(span.attributes['error.type'], '500')

      // Not one span of these traces carries a message: no status message, no exception event.
      for (const s of collector.spans) {
        assert.equal(s.status.message, '', `no status message on ${s.name}`)
        assert.ok(!s.events.includes('exception'), `no exception event on ${s.name}`)
      }
      await server.stop()
    })

    test('When the collector is away, then one warn line names the endpoint (its password masked) and the cause, however many exports fail; when it is back, one info line says exports succeed again', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
      // A port nothing listens on yet: every export is refused. A collector's URL may carry credentials.
      const port = await freePort()
      const { server, metricsUrl } = await startWithMetrics(resources, database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://tracer:s3cret-pass@127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        // Each export gives up at once (its retries' back-off is longer than this).
        OTEL_EXPORTER_OTLP_TIMEOUT: '500',
      })
      const failedSpans = async () => (await scrape(metricsUrl)).value('petstore_trace_spans_total', { outcome: 'failed' }) ?? 0
      const patch = async (quantity: number) =>
        assert.equal((await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity } })).status, 200)
      // Three exports that fail, one after the other.
      for (let round = 1; round <= 3; round++) {
        const before = await failedSpans()
        await patch(round)
        await waitFor(async () => (await failedSpans()) > before, 10_000, `round ${round}'s export failing`)
      }
      const endpoint = `http://tracer:***@127.0.0.1:${port}/v1/traces`
      const warnings = server.logs().filter((l) => Number(l.level) >= 40)
      assert.equal(warnings.length, 1, `one line at warn or above: ${JSON.stringify(warnings)}`)
      assert.equal(warnings[0]!.level, 40)
      assert.equal(warnings[0]!.endpoint, endpoint)
      assert.match(String(warnings[0]!.cause), /ECONNREFUSED/)

      // The collector comes back where the service exports: the next export succeeds.
      const collector = await TestCollector.start(port)
      closing.push(collector)
      await patch(10)
      const back = await server.waitForLog((l) => l.level === 30 && l.endpoint === endpoint)
      await waitFor(() => collector.spans.some((s) => s.name === 'PATCH /v1/inventory/:petId'), 10_000, 'the PATCH exported')
      await patch(11)
      await waitFor(
        () => collector.spans.filter((s) => s.name === 'PATCH /v1/inventory/:petId').length === 2,
        10_000,
        'the second PATCH exported',
      )
      assert.equal(server.logs().filter((l) => l.endpoint === endpoint && l.level === 30).length, 1, 'one info line')
      assert.ok(Number(back.failedExports) >= 3, `the failed exports counted: ${JSON.stringify(back)}`)
      assert.equal(server.logs().filter((l) => Number(l.level) >= 40).length, 1, 'no other warning')
      assert.ok(!server.stdoutLines.join('\n').includes('s3cret-pass'), 'no password in the logs')
      await server.stop()
      assert.ok(!server.stderr.includes('s3cret-pass'), 'no password on stderr')
    })

    test('When OTEL_LOG_LEVEL is debug (any case), then the SDK’s own diagnostics are log lines of the service; at the default, info, its debug ones are not', async () => {
      const { collector, database, token } = await traced()
      /** The SDK's lines at debug of a server with `env` that answered a PATCH and exported its spans. */
      const diagnostics = async (service: string, env: Record<string, string>) => {
        const server = await resources.server(database.url, {
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
          OTEL_SERVICE_NAME: service,
          OTEL_BSP_SCHEDULE_DELAY: '50',
          LOG_LEVEL: 'debug',
          ...env,
        })
        assert.equal((await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: 1 } })).status, 200)
        await waitFor(() => collector.spans.some((s) => s.resource['service.name'] === service), 10_000, `${service}'s spans`)
        await server.stop()
        return server.logs().filter((l) => l.component === 'opentelemetry' && l.level === 20)
      }
      const debug = await diagnostics('petstore-debug', { OTEL_LOG_LEVEL: 'Debug' })
      assert.ok(debug.length > 0, 'the SDK’s debug lines')
      assert.deepEqual(await diagnostics('petstore-info', {}), [], 'none at the default level')
    })

    test('When tracing is on, then the CLI’s long commands (import, backup, check) are spans of their own, exported before the command exits', async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const dir = mkdtempSync(join(tmpdir(), 'petstore-trace-cli-'))
      closing.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
      const database = await resources.database(backend)
      // The traces URL itself, used as written (nothing appended: the collector takes /v1/traces alone).
      const env = {
        DATABASE_URL: database.url,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.endpoint}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }
      const file = join(dir, 'inventory.json')
      writeFileSync(file, JSON.stringify([{ petId: 1, quantity: 2, status: 'available' }]))
      const imported = await runCli(['import', 'inventory', file], env)
      assert.equal(imported.code, 0, imported.stderr)
      const checked = await runCli(['check'], env)
      assert.equal(checked.code, 0, checked.stderr)
      const expected = ['petstore import', 'petstore check']
      // backup copies an embedded database only.
      if (backend.name === 'sqlite') {
        const backedUp = await runCli(['backup', join(dir, 'copy.db')], env)
        assert.equal(backedUp.code, 0, backedUp.stderr)
        expected.push('petstore backup')
      }
      const names = collector.spans.map((s) => s.name)
      for (const name of expected) assert.ok(names.includes(name), `${name} exported before exit: ${names.join(', ')}`)
      const check = collector.spans.find((s) => s.name === 'petstore check')!
      assert.equal(check.attributes['petstore.command'], 'check')
      assert.equal(check.resource['service.name'], 'petstore')
    })

    for (const collector of ['cannot be reached', 'takes the connection and never answers'] as const)
      test(`When the collector ${collector}, then every request is answered as before and the server stops on SIGTERM`, async () => {
        const database = await resources.database(backend)
        const token = await createKey(database.url, 'tracing')
        await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
        // A port nothing listens on (every export refused), or a server that reads and holds each export.
        const hanging = createServer(() => {})
        await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
        const port = (hanging.address() as AddressInfo).port
        if (collector === 'cannot be reached') await new Promise((resolve) => hanging.close(resolve))
        const server = await resources.server(database.url, {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
          OTEL_BSP_SCHEDULE_DELAY: '50',
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
        })
        for (let n = 0; n < 300; n++) {
          const res = await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: n } })
          assert.equal(res.status, 200, res.text)
        }
        const stopping = performance.now()
        await server.stop()
        assert.equal(server.child.exitCode, 0, server.stderr)
        // The last spans are waited for at most 2 s (plus the process's own exit).
        assert.ok(performance.now() - stopping < 8_000, `stopped in ${Math.round(performance.now() - stopping)} ms`)
        hanging.closeAllConnections()
        hanging.close()
      })

    test('When METRICS_PORT is set, then the spans exported are counted, and those the full queue dropped while the collector was away', async () => {
      const { collector, database, token } = await traced()
      const patches = async (count: number) => {
        for (let n = 0; n < count; n++)
          assert.equal((await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: n } })).status, 200)
      }
      const { server, metricsUrl } = await startWithMetrics(resources, database.url, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_BSP_MAX_QUEUE_SIZE: '20',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
      })
      await patches(5)
      await waitFor(
        async () => (await scrape(metricsUrl)).value('petstore_trace_spans_total', { outcome: 'exported' })! >= 5,
        10_000,
        'five spans exported',
      )

      await collector.close()
      // A queue of 20 and no collector: the spans past it are dropped, never held.
      await patches(200)
      const after = await scrape(metricsUrl)
      assert.ok(
        after.value('petstore_trace_spans_total', { outcome: 'dropped' })! > 0,
        after
          .matching('petstore_trace_spans_total')
          .map((s) => `${s.labels.outcome} ${s.value}`)
          .join(', '),
      )
      await server.stop()
    })

    test('When no OTEL_* variable turns tracing on, then no OpenTelemetry SDK, exporter or instrumentation module is even loaded, and log lines carry no trace ids', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-imports-'))
      closing.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
      const record = join(dir, 'imports')
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      const server = await resources.server(database.url, {
        NODE_OPTIONS: `--import=${RECORDER}`,
        RECORD_IMPORTS: record,
        OTEL_SERVICE_NAME: 'set-but-not-on',
      })
      assert.equal((await server.request('GET', '/v1/inventory', { token })).status, 200)
      const line = await server.waitForLog((l) => l.msg === 'request')
      assert.equal(line.trace_id, undefined)
      const loaded = readFileSync(record, 'utf8').split('\n')
      assert.ok(
        loaded.some((url) => url.includes('/dist/src/app.js')),
        'the recorder saw the service load',
      )
      const otel = loaded.filter((url) => /@opentelemetry\/(?!api\/)|@fastify\/otel|\/tracing\/start-tracing/.test(url))
      assert.deepEqual(otel, [], 'nothing of the SDK loaded')
      await server.stop()
    })
  })
}

describe('tracing configuration', () => {
  test('When an OTEL_* variable is invalid, then serve exits 2 naming each of them, and never listens', async () => {
    const result = await runCli(['serve'], {
      DATABASE_URL: 'sqlite::memory:',
      PORT: '0',
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '1.5',
      OTEL_RESOURCE_ATTRIBUTES: 'novalue',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      OTEL_LOG_LEVEL: 'loud',
    })
    assert.equal(result.code, 2, result.stderr)
    for (const name of [
      'OTEL_TRACES_EXPORTER="zipkin"',
      'OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318"',
      'OTEL_EXPORTER_OTLP_PROTOCOL="grpc"',
      'OTEL_RESOURCE_ATTRIBUTES="novalue"',
      'OTEL_TRACES_SAMPLER="sometimes"',
      'OTEL_TRACES_SAMPLER_ARG="1.5"',
      'OTEL_LOG_LEVEL="loud"',
    ])
      assert.match(result.stderr, new RegExp(`\\n${name} is invalid: expected `), name)
    assert.doesNotMatch(result.stdout, /listening/i)
  })
})
