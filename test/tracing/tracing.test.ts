// Issue 39: OpenTelemetry traces, off by default and on with the standard variables, with real
// `petstore serve` processes exporting to an OTLP/HTTP collector of the test's own.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import pg from 'pg'
import { BACKENDS, createKey, runCli, seed, useResources } from '../support/helpers.js'
import { scrape, startWithMetrics } from '../support/metrics-scrape.js'
import { waitFor } from '../webhooks/receiver.js'
import { TestCollector } from './collector.js'

const RECORDER = fileURLToPath(new URL('../support/record-imports.js', import.meta.url))
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const SERVER = 2

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

    test('When OTEL_EXPORTER_OTLP_ENDPOINT is set, then each request is one SERVER span named by its route, under the caller’s traceparent, with the HTTP attributes and no query, and its log line carries the trace and span ids', async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
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
      const feed = await server.request('GET', '/v1/inventory/changes?after=0&limit=1', { token })
      assert.equal(feed.status, 200)

      const patch = await waitFor(
        () => collector.spans.find((s) => s.name === 'PATCH /v1/inventory/:petId'),
        10_000,
        () => `the PATCH's span (${collector.spans.map((s) => s.name).join(', ')})`,
      )
      assert.equal(patch.kind, SERVER)
      assert.equal(patch.traceId, TRACEPARENT.split('-')[1], 'in the caller’s trace')
      assert.equal(patch.parentSpanId, TRACEPARENT.split('-')[2], 'under the caller’s span')
      assert.equal(patch.attributes['http.request.method'], 'PATCH')
      assert.equal(patch.attributes['http.route'], '/v1/inventory/:petId')
      assert.equal(patch.attributes['url.path'], '/v1/inventory/7')
      assert.equal(patch.attributes['http.response.status_code'], 200)
      assert.equal(patch.attributes['server.port'], server.port)
      assert.equal(patch.attributes['error.type'], undefined)
      assert.equal(patch.resource['service.name'], 'petstore')
      assert.equal(patch.resource['deployment.environment.name'], 'test')
      assert.equal(patch.resource.team, 'inventory ops')
      assert.ok(!JSON.stringify(patch).includes(token), 'no key in the span')

      const get = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory/:petId'), 10_000, 'the GET’s span')
      assert.notEqual(get.traceId, patch.traceId, 'a request without traceparent starts a trace of its own')
      assert.equal(get.attributes['http.response.status_code'], 404)
      assert.equal(get.attributes['error.type'], undefined, 'a 4xx is the client’s: no error.type on a SERVER span')

      const changes = await waitFor(() => collector.spans.find((s) => s.name === 'GET /v1/inventory/changes'), 10_000, 'the feed’s span')
      assert.equal(changes.attributes['url.path'], '/v1/inventory/changes', 'the path without its query')
      assert.ok(!JSON.stringify(changes).includes('after='), 'no query anywhere in the span')

      const line = await server.waitForLog((l) => l.msg === 'request' && l.method === 'PATCH')
      assert.equal(line.trace_id, patch.traceId)
      assert.equal(line.span_id, patch.spanId)
      assert.ok(typeof line.reqId === 'string', 'the request id stays')
      await server.stop()
    })

    test('When a request fails with a 5xx, then its SERVER span carries error.type (the status) and an error status', async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
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
      assert.ok(
        !JSON.stringify(span).includes('no such table') && !JSON.stringify(span).includes('does not exist'),
        'no internal message in the span',
      )
      await server.stop()
    })

    test('When tracing is on, then the CLI’s long commands (import, check) are spans of their own, exported before the command exits', async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const dir = mkdtempSync(join(tmpdir(), 'petstore-trace-cli-'))
      closing.push({ close: async () => rmSync(dir, { recursive: true, force: true }) })
      const database = await resources.database(backend)
      const env = { DATABASE_URL: database.url, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }
      const file = join(dir, 'inventory.json')
      writeFileSync(file, JSON.stringify([{ petId: 1, quantity: 2, status: 'available' }]))
      const imported = await runCli(['import', 'inventory', file], env)
      assert.equal(imported.code, 0, imported.stderr)
      const checked = await runCli(['check'], env)
      assert.equal(checked.code, 0, checked.stderr)
      const names = collector.spans.map((s) => s.name)
      assert.ok(names.includes('petstore import') && names.includes('petstore check'), `spans exported before exit: ${names.join(', ')}`)
      const check = collector.spans.find((s) => s.name === 'petstore check')!
      assert.equal(check.attributes['petstore.command'], 'check')
      assert.equal(check.resource['service.name'], 'petstore')
    })

    test('When the collector cannot be reached, then every request is answered as before and the server stops on SIGTERM', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
      // A port nothing listens on: every export is refused.
      const closed = await TestCollector.start()
      const endpoint = closed.endpoint
      await closed.close()
      const server = await resources.server(database.url, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' })
      for (let n = 0; n < 300; n++) {
        const res = await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: n } })
        assert.equal(res.status, 200, res.text)
      }
      await server.stop()
      assert.equal(server.child.exitCode, 0, server.stderr)
    })

    test('When METRICS_PORT is set, then the spans exported are counted, and those the full queue dropped while the collector was away', async () => {
      const collector = await TestCollector.start()
      closing.push(collector)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'tracing')
      await seed(database.url, [{ petId: 7, quantity: 3, status: 'available' }])
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
    })
    assert.equal(result.code, 2, result.stderr)
    for (const name of [
      'OTEL_TRACES_EXPORTER="zipkin"',
      'OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318"',
      'OTEL_EXPORTER_OTLP_PROTOCOL="grpc"',
      'OTEL_RESOURCE_ATTRIBUTES="novalue"',
      'OTEL_TRACES_SAMPLER="sometimes"',
      'OTEL_TRACES_SAMPLER_ARG="1.5"',
    ])
      assert.match(result.stderr, new RegExp(`\\n${name} is invalid: expected `), name)
    assert.doesNotMatch(result.stdout, /listening/i)
  })
})
