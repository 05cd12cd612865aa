// What an attacker or a slow network tries on the process itself (OWASP API Security Top 10, 2023):
// connections held open, files others could read, an open metrics listener. The HTTP parts are in
// test/http/hardening.test.ts.
import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, seed, useResources, type TestServer } from '../support/helpers.js'
import { startWithMetrics } from '../support/metrics-scrape.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A client that sends `text` and then neither reads (its socket is paused) nor closes (its side stays
 * open after the server's ends): what a hostile or broken client does to hold a connection.
 */
async function halfOpenClient(server: TestServer, text: string): Promise<Socket> {
  const socket = connect({ port: server.port, host: '127.0.0.1', allowHalfOpen: true })
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  socket.write(text)
  return socket
}

describe('connections held by clients that never read nor close', () => {
  const resources = useResources()

  test('When MAX_CONNECTIONS clients send half a request head and then wait, then each is cut at the headers timeout and new connections, /healthz included, are served', async () => {
    const database = await resources.database(sqlite)
    const server = await resources.server(database.url, { MAX_CONNECTIONS: '12', HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000' })
    const held = await Promise.all(Array.from({ length: 12 }, () => halfOpenClient(server, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n')))
    try {
      // The timeout is checked every second: by 3 s every held connection has had its 408.
      await sleep(3000)
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${server.baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) })
        assert.equal(res.status, 200)
      }
    } finally {
      for (const socket of held) socket.destroy()
    }
  })

  test('When MAX_IN_FLIGHT PATCHes send their body too slowly and then wait, then each is cut at the request timeout, its slot is freed, and nothing changed', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'slow-body')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const server = await resources.server(database.url, { MAX_IN_FLIGHT: '3', HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1500' })
    const head =
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 15\r\n\r\n{"quan`
    const held = await Promise.all(Array.from({ length: 3 }, () => halfOpenClient(server, head)))
    try {
      // While the three bodies are pending, their slots are taken: the bound works.
      await sleep(300)
      assert.equal((await server.request('GET', '/v1/inventory/1', { token })).status, 503)
      await sleep(3500)
      const after = await server.request('GET', '/v1/inventory/1', { token })
      assert.equal(after.status, 200, after.text)
      assert.equal(after.body.quantity, 1)
    } finally {
      for (const socket of held) socket.destroy()
    }
  })
})

describe('files the service creates (sqlite)', () => {
  const resources = useResources()

  test('When the service creates its database, then the folder is 0700 and the database, -wal and -shm are 0600', async () => {
    const database = await resources.database(sqlite)
    const folder = join(database.url.slice('sqlite:'.length, database.url.lastIndexOf('/')), 'private', 'nested')
    const path = join(folder, 'store.db')
    const server = await resources.server(`sqlite:${path}`)
    const token = /psk_\S+/.exec(await server.waitForStderr(/psk_\S+/))![0]
    assert.equal((await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 1 } })).status, 404)
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8)
    assert.equal(mode(folder), '700')
    assert.equal(mode(join(folder, '..')), '700')
    for (const file of [path, `${path}-wal`, `${path}-shm`]) assert.equal(mode(file), '600', file)
  })
})

describe('the metrics listener', () => {
  const resources = useResources()

  test('When METRICS_TOKEN is set, then a scrape without it, or with another, gets 401, and with it 200', async () => {
    const database = await resources.database(sqlite)
    const metricsToken = 'scrape-token-0123456789'
    const { metricsUrl } = await startWithMetrics(resources, database.url, { METRICS_TOKEN: metricsToken })
    const without = await fetch(`${metricsUrl}/metrics`)
    assert.equal(without.status, 401)
    assert.equal(without.headers.get('www-authenticate'), 'Bearer realm="metrics"')
    assert.equal((await fetch(`${metricsUrl}/metrics`, { headers: { authorization: 'Bearer scrape-token-0123456780' } })).status, 401)
    const right = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
    assert.equal(right.status, 200)
    assert.match(await right.text(), /^# HELP /m)
  })
})
