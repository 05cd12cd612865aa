import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BACKENDS, createKey, seed, useResources, type TestServer } from '../support/helpers.js'
import { TcpProxy } from '../support/tcp-proxy.js'

const TIMEOUT_MS = 1000
/** What "within a bounded time" means here: the configured timeout plus slack for a loaded machine. */
const BOUND_MS = TIMEOUT_MS + 2000

const postgres = BACKENDS.find((b) => b.name === 'postgres')

describe('PostgreSQL going away', { skip: !postgres && 'PostgreSQL is not reachable' }, () => {
  const resources = useResources()
  let proxy: TcpProxy
  let server: TestServer
  let token: string

  before(async () => {
    const database = await resources.database(postgres!)
    const direct = new URL(database.url)
    proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
    const proxied = new URL(database.url)
    proxied.port = String(proxy.port)
    token = await createKey(database.url, 'outage')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    server = await resources.server(proxied.toString(), { DB_TIMEOUT_MS: String(TIMEOUT_MS) })
  })
  after(() => proxy.close())

  let sent = 0
  const timed = async (method: string, path: string, body?: unknown) => {
    const started = Date.now()
    const requestId = `outage-${++sent}`
    const res = await server.request(method, path, { token, body, headers: { 'x-request-id': requestId } })
    return { res, ms: Date.now() - started, requestId }
  }

  async function expectUnavailable() {
    for (const [method, path, body] of [
      ['GET', '/v1/inventory', undefined],
      ['PATCH', '/v1/inventory/1', { quantity: 99 }],
      ['GET', '/readyz', undefined],
    ] as const) {
      const { res, ms, requestId } = await timed(method, path, body)
      assert.equal(res.status, 503, `${method} ${path}: ${res.text}`)
      assert.deepEqual(res.body, { code: 'service_unavailable', message: res.body.message, status: 503 })
      assert.ok(ms < BOUND_MS, `${method} ${path} took ${ms} ms`)
      // An outage passes by itself: each refusal once, at warn, without a stack, and never at error.
      await server.waitForLog((l) => l.reqId === requestId && l.msg === 'request')
      const lines = server.logs().filter((l) => l.reqId === requestId && l.msg !== 'request')
      assert.deepEqual(
        lines.map((l) => [l.level, l.msg, l.refusal, 'err' in l]),
        [[40, 'request refused', 'database', false]],
        `${method} ${path}`,
      )
    }
    const live = await server.request('GET', '/healthz')
    assert.equal(live.status, 200, 'liveness does not depend on the database')
  }

  /** `before` is the quantity stored before the outage: the PATCH that got 503 never reached the database. */
  async function expectRecovered(before: number) {
    const deadline = Date.now() + 15_000
    for (;;) {
      const ready = await server.request('GET', '/readyz')
      if (ready.status === 200) break
      assert.ok(Date.now() < deadline, 'the service did not recover within 15 s')
      await new Promise((r) => setTimeout(r, 200))
    }
    const unchanged = await server.request('GET', '/v1/inventory', { token })
    assert.deepEqual(unchanged.body, [{ petId: 1n, quantity: before, status: 'available' }])
    const patch = await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 5 } })
    assert.equal(patch.status, 200)
    const list = await server.request('GET', '/v1/inventory', { token })
    assert.deepEqual(list.body, [{ petId: 1n, quantity: 5, status: 'available' }])
  }

  test('When the connection to PostgreSQL is reset, then requests get 503 quickly and the service recovers by itself', async () => {
    assert.equal((await server.request('GET', '/readyz')).status, 200)
    await proxy.cut()
    await expectUnavailable()
    await proxy.restore()
    await expectRecovered(1)
  })

  test('When the network to PostgreSQL hangs, then requests get 503 within the timeout and the service recovers by itself', async () => {
    await proxy.blackhole()
    await expectUnavailable()
    await proxy.restore()
    await expectRecovered(5)
    assert.equal(server.child.exitCode, null, 'the server never restarted')
  })
})
