import assert from 'node:assert/strict'
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { connect, createServer } from 'node:net'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, runCli, seed, sqliteDatabase, useResources, type TestServer } from '../support/helpers.js'
import { METRICS_LISTENING, scrape, startWithMetrics } from '../support/metrics-scrape.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
/** The TCP ports a process listens on, from /proc: its socket inodes, found in the LISTEN rows of the tables. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => {
        try {
          return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]
        } catch {
          return undefined
        }
      })
      .filter((inode) => inode !== undefined),
  )
  const ports = ['tcp', 'tcp6'].flatMap((table) =>
    readFileSync(`/proc/net/${table}`, 'utf8')
      .split('\n')
      .slice(1)
      .map((row) => row.trim().split(/\s+/))
      .filter((cols) => cols[3] === '0A' && inodes.has(cols[9]!))
      .map((cols) => parseInt(cols[1]!.split(':')[1]!, 16)),
  )
  return [...new Set(ports)].sort((a, b) => a - b)
}

/** Resolves once the server has logged `count` request lines (written by the hook after the metrics one). */
async function requestsLogged(server: TestServer, count: number) {
  await server.waitForLog(() => server.logs().filter((l) => l.msg === 'request').length >= count)
}

/** A GET on a connection of its own (no keep-alive), so that node:cluster hands each to a worker anew. */
function getOnFreshConnection(server: TestServer, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.baseUrl}${path}`, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end()
  })
}

for (const backend of BACKENDS) {
  describe(`metrics (${backend.name})`, () => {
    const resources = useResources()

    test('When requests of every kind are answered, then one scrape counts each by method, route template and status, exactly, and times the routed ones', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'metrics')
      await seed(
        database.url,
        [1, 2, 3].map((petId) => ({ petId, quantity: 1, status: 'available' })),
      )
      const { server, metricsUrl } = await startWithMetrics(resources, database.url, { MAX_HEADER_BYTES: '2048' })
      assert.deepEqual(
        listeningPorts(server.child.pid!),
        [server.port, Number(new URL(metricsUrl).port)].sort((a, b) => a - b),
      )

      const statuses = [
        (await server.request('GET', '/v1/inventory', { token })).status,
        (await server.request('GET', '/v1/inventory', { token })).status,
        (await server.request('GET', '/v1/inventory/1', { token })).status,
        ...(
          await Promise.all([1, 2, 3].map((petId) => server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity: 9 } })))
        ).map((r) => r.status),
        (await server.request('GET', '/v1/inventory/12345', { token })).status,
        (await server.request('GET', '/v1/inventory')).status,
        (await server.request('GET', '/no/such/path/98765', { token })).status,
        (await server.request('GET', '/v1/inventory/%zz', { token })).status,
        (await fetch(`${server.baseUrl}/healthz`, { headers: { 'x-big': 'b'.repeat(3000) } })).status,
      ]
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 404, 401, 404, 400, 431])
      // Requests answered before routing (the malformed URL, the oversized headers) write no request line.
      await requestsLogged(server, 9)

      const scraped = await scrape(metricsUrl)
      const counted = scraped.matching('http_requests_total').map((s) => [s.labels.method, s.labels.route, s.labels.status_code, s.value])
      assert.deepEqual(
        counted.sort(),
        [
          ['GET', '/v1/inventory', '200', 2],
          ['GET', '/v1/inventory', '401', 1],
          ['GET', '/v1/inventory/:petId', '200', 1],
          ['GET', '/v1/inventory/:petId', '404', 1],
          ['GET', 'unmatched', '400', 1],
          ['GET', 'unmatched', '404', 1],
          ['PATCH', '/v1/inventory/:petId', '200', 3],
          ['unknown', 'unmatched', '431', 1],
        ].sort(),
      )
      assert.equal(scraped.value('http_requests_total', { method: 'PATCH', route: '/v1/inventory/:petId', status_code: '200' }), 3)
      // In the labels: a number such as a heap size may hold the same digits by chance.
      const labels = scraped.samples.flatMap((s) => Object.values(s.labels))
      assert.ok(labels.length > 20, `${labels.length} label values`)
      for (const raw of ['12345', '98765', '/no/such', '%zz']) {
        assert.ok(!labels.some((value) => value.includes(raw)), `the raw path ${raw} appears in a label`)
      }

      // Routed requests are timed: cumulative buckets up to +Inf, which equals the count.
      const patch = { method: 'PATCH', route: '/v1/inventory/:petId', status_code: '200' }
      const buckets = scraped.matching('http_request_duration_seconds_bucket', patch)
      assert.ok(buckets.length > 10, `${buckets.length} buckets`)
      assert.deepEqual(
        buckets.map((b) => b.value),
        buckets.map((b) => b.value).sort((a, b) => a - b),
        'cumulative',
      )
      assert.equal(scraped.value('http_request_duration_seconds_bucket', { ...patch, le: '+Inf' }), 3)
      assert.equal(scraped.value('http_request_duration_seconds_count', patch), 3)
      assert.ok(scraped.value('http_request_duration_seconds_sum', patch)! > 0)
      assert.equal(
        scraped.matching('http_request_duration_seconds_count', { route: 'unmatched', status_code: '431' }).length,
        0,
        'counted, not timed',
      )
      assert.equal(scraped.value('http_requests_in_flight'), 0)

      // The three PATCHes went through the group commit: every write in some batch, every batch timed.
      const commits = { backend: backend.name }
      assert.equal(scraped.value('petstore_commit_batch_size_sum', commits), 3)
      const batches = scraped.value('petstore_commit_batch_size_count', commits)!
      assert.ok(batches >= 1 && batches <= 3, `${batches} batches`)
      assert.equal(scraped.value('petstore_commit_duration_seconds_count', commits), batches)
      assert.ok(scraped.value('petstore_commit_duration_seconds_sum', commits)! > 0)

      if (backend.name === 'postgres') {
        const total = scraped.value('petstore_db_pool_connections', { state: 'total' })!
        assert.ok(total >= 1 && total <= 10, `${total} connections`)
        assert.ok(scraped.value('petstore_db_pool_connections', { state: 'idle' })! <= total)
        assert.equal(scraped.value('petstore_db_pool_connections', { state: 'waiting' }), 0)
        assert.ok(scraped.value('petstore_db_query_duration_seconds_count')! >= 5, 'the requests ran statements')
        assert.ok(scraped.value('petstore_db_query_duration_seconds_sum')! > 0)
      } else {
        assert.equal(scraped.matching('petstore_db_pool_connections').length, 0, 'no pool on SQLite')
        assert.equal(scraped.value('petstore_db_query_duration_seconds_count'), 0)
      }

      // prom-client's default metrics: the process, and the event loop's delay.
      assert.ok(scraped.value('process_resident_memory_bytes')! > 10_000_000)
      assert.ok(scraped.value('process_cpu_seconds_total')! > 0)
      assert.ok(scraped.value('nodejs_heap_size_used_bytes')! > 1_000_000)
      for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds']) {
        const value = scraped.value(name)
        // Present, and a delay in seconds (the p99 covers startup, which can block the loop a second or two).
        assert.ok(value !== undefined && value >= 0 && value < 30, `${name} = ${value}`)
      }

      // The metrics listener serves GET /metrics alone; the scrapes are not counted as requests.
      assert.equal((await fetch(`${metricsUrl}/v1/inventory`)).status, 404)
      assert.equal((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status, 404)
      const again = await scrape(metricsUrl)
      assert.equal(again.sum('http_requests_total'), scraped.sum('http_requests_total'))
    })
  })
}

describe('metrics (sqlite): the listener', () => {
  const resources = useResources()

  test('When METRICS_PORT is unset, then nothing listens besides the API port and the API has no /metrics', async () => {
    const database = await resources.database(sqlite)
    const server = await resources.server(database.url)
    assert.deepEqual(listeningPorts(server.child.pid!), [server.port])
    const res = await server.request('GET', '/metrics')
    assert.equal(res.status, 404)
    assert.equal(res.body.code, 'not_found')
    assert.ok(!server.logs().some((l) => /metrics/i.test(String(l.msg))), 'no metrics address logged')
  })

  test('When a request is being handled, then http_requests_in_flight counts it, and not once it is answered', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'in-flight')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const { server, metricsUrl } = await startWithMetrics(resources, database.url)
    // A PATCH whose body is held back: admitted (and counted) as its headers arrive.
    const socket = connect(server.port, '127.0.0.1')
    let response = ''
    socket.on('data', (d) => (response += d))
    const body = '{"quantity": 4}'
    socket.write(
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n{`,
    )
    for (let tries = 0; (await scrape(metricsUrl)).value('http_requests_in_flight') !== 1; tries++) {
      assert.ok(tries < 50, 'the held request was never counted in flight')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    socket.write(body.slice(1))
    await new Promise((resolve) => socket.on('close', resolve))
    assert.match(response, /^HTTP\/1\.1 200 /)
    await requestsLogged(server, 1)
    assert.equal((await scrape(metricsUrl)).value('http_requests_in_flight'), 0)
  })

  test('When SIGTERM drains the service, then the metrics stay up through the drain and close before the exit', async () => {
    const database = await resources.database(sqlite)
    const { server, metricsUrl } = await startWithMetrics(resources, database.url, { SHUTDOWN_DRAIN_MS: '1500' })
    await server.request('GET', '/healthz')
    server.child.kill('SIGTERM')
    await server.waitForLog((l) => String(l.msg).startsWith('draining'))
    assert.equal((await scrape(metricsUrl)).value('http_requests_total', { method: 'GET', route: '/healthz', status_code: '200' }), 1)
    assert.equal(await server.waitForExit(), 0)
    await assert.rejects(fetch(`${metricsUrl}/metrics`), 'nothing listens after the exit')
  })

  test('When METRICS_PORT is invalid or PORT itself, then serve refuses to start with one line naming it', async () => {
    const database = sqliteDatabase()
    try {
      for (const env of [{ METRICS_PORT: '70000' }, { METRICS_PORT: 'nine' }, { PORT: '9464', METRICS_PORT: '9464' }]) {
        const { code, stdout, stderr } = await runCli(['serve'], { DATABASE_URL: database.url, PORT: '0', ...env, LOG_LEVEL: 'info' })
        assert.equal(code, 2, stderr)
        assert.match(stderr, new RegExp(`^Invalid configuration:\\nMETRICS_PORT="${env.METRICS_PORT}" is invalid: expected [^\\n]+\\n$`))
        assert.doesNotMatch(stdout, /listening/i)
      }
    } finally {
      await database.drop()
    }
  })

  test('When METRICS_PORT is taken, then serve exits 1 naming the address instead of serving without metrics', async () => {
    const database = await resources.database(sqlite)
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    try {
      const port = (taken.address() as { port: number }).port
      const { code, stderr } = await runCli(['serve'], { DATABASE_URL: database.url, PORT: '0', METRICS_PORT: String(port) })
      assert.equal(code, 1)
      assert.match(stderr, new RegExp(`EADDRINUSE.*127\\.0\\.0\\.1:${port}`))
    } finally {
      taken.close()
    }
  })
})

describe('metrics (sqlite): serve --workers 2', () => {
  const resources = useResources()

  test("When two workers serve, then one scrape of the primary sums both workers' figures exactly", async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'workers')
    await seed(
      database.url,
      [1, 2, 3, 4, 5].map((petId) => ({ petId, quantity: 1, status: 'available' })),
    )
    const { server, metricsUrl } = await startWithMetrics(resources, database.url, { WORKERS: '2' })
    const gets = 50
    const patches = 10
    for (let i = 0; i < gets; i += 10) {
      const statuses = await Promise.all(
        Array.from({ length: 10 }, (_, j) => getOnFreshConnection(server, `/v1/inventory/${((i + j) % 5) + 1}`, token)),
      )
      assert.deepEqual(statuses, Array(10).fill(200))
    }
    for (let petId = 1; petId <= patches; petId++) {
      assert.equal((await server.request('PATCH', `/v1/inventory/${(petId % 5) + 1}`, { token, body: { quantity: petId } })).status, 200)
    }
    await requestsLogged(server, gets + patches)
    const servedBy = new Set(
      server
        .logs()
        .filter((l) => l.msg === 'request')
        .map((l) => l.pid),
    )
    assert.equal(servedBy.size, 2, 'both workers served requests')

    const scraped = await scrape(metricsUrl)
    assert.equal(scraped.sum('http_requests_total', { method: 'GET', route: '/v1/inventory/:petId' }), gets)
    assert.equal(scraped.value('http_requests_total', { method: 'GET', route: '/v1/inventory/:petId', status_code: '200' }), gets)
    assert.equal(
      scraped.value('http_request_duration_seconds_count', { method: 'GET', route: '/v1/inventory/:petId', status_code: '200' }),
      gets,
    )
    assert.equal(scraped.value('petstore_commit_batch_size_sum', { backend: 'sqlite' }), patches)
    assert.ok(scraped.value('process_resident_memory_bytes')! > 0)
    // Only the primary listens for metrics; each worker keeps its own, sent when the primary asks.
    const announced = server.logs().filter((l) => METRICS_LISTENING.test(String(l.msg)))
    assert.deepEqual(
      announced.map((l) => l.role),
      ['primary'],
    )
    // The primary closes the listener once its workers have stopped, and exits.
    assert.equal(await server.stop(), 0)
  })
})
