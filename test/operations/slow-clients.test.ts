import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, seed, useResources, type TestServer } from '../support/helpers.js'
import { holdInventoryWriteLock } from '../support/inventory-lock.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A raw connection; `ended` resolves with what the server sent once it closed the connection. */
function rawConnection(server: TestServer): { socket: Socket; ended: Promise<{ data: string; at: number }> } {
  const socket = connect(server.port, '127.0.0.1')
  let data = ''
  socket.on('data', (d) => (data += d))
  const ended = new Promise<{ data: string; at: number }>((resolve) => {
    socket.on('close', () => resolve({ data, at: Date.now() }))
    socket.on('error', () => {})
  })
  return { socket, ended }
}

/** The Error body of a raw HTTP response. */
const errorBody = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))

/** GETs /v1/inventory every 100 ms until stopped; returns each request's status and duration. */
function steadyReader(server: TestServer, token: string) {
  let stopped = false
  const results: { status: number; ms: number }[] = []
  const done = (async () => {
    while (!stopped) {
      const started = Date.now()
      const res = await server.request('GET', '/v1/inventory', { token })
      results.push({ status: res.status, ms: Date.now() - started })
      await sleep(100)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await done
      return results
    },
  }
}

describe('slow and abusive clients', () => {
  const resources = useResources()

  test('When clients send their headers one byte a second, then each is cut off (408) within 20 s while other clients are served normally', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'slow')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    // The defaults: HEADERS_TIMEOUT_MS 10 s, checked every second.
    const server = await resources.server(database.url)
    const reader = steadyReader(server, token)
    const startedAt = Date.now()
    const lorises = Array.from({ length: 20 }, () => rawConnection(server))
    const headers = `GET /v1/inventory HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nX-Padding: ${'a'.repeat(100)}\r\n\r\n`
    let sent = 0
    const dripOne = () => {
      for (const { socket } of lorises) if (!socket.destroyed) socket.write(headers[sent % headers.length]!)
      sent++
    }
    dripOne()
    const drip = setInterval(dripOne, 1000)
    try {
      const ends = await Promise.all(lorises.map((l) => l.ended))
      for (const { data, at } of ends) {
        assert.ok(at - startedAt < 20_000, `cut off after ${at - startedAt} ms`)
        assert.match(data, /^HTTP\/1\.1 408 /)
        assert.equal(errorBody(data).code, 'request_timeout')
      }
    } finally {
      clearInterval(drip)
    }
    const reads = await reader.stop()
    assert.ok(reads.length > 50, `only ${reads.length} reads`)
    assert.ok(
      reads.every((r) => r.status === 200),
      'every other client was served',
    )
    assert.ok(Math.max(...reads.map((r) => r.ms)) < 1000, `the slowest read took ${Math.max(...reads.map((r) => r.ms))} ms`)
  })

  test('When a body arrives too slowly, then the request is cut off (408) at REQUEST_TIMEOUT_MS and nothing changes', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'slow-body')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const server = await resources.server(database.url, { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' })
    const { socket, ended } = rawConnection(server)
    const startedAt = Date.now()
    socket.write(
      `PATCH /v1/inventory/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 15\r\n\r\n{"quan`,
    )
    const trickle = setInterval(() => !socket.destroyed && socket.write(' '), 500)
    try {
      const { data, at } = await ended
      assert.ok(at - startedAt < 4000, `cut off after ${at - startedAt} ms`)
      assert.match(data, /^HTTP\/1\.1 408 /)
      assert.equal(errorBody(data).code, 'request_timeout')
    } finally {
      clearInterval(trickle)
    }
    assert.equal((await server.request('GET', '/v1/inventory/1', { token })).body.quantity, 1)
  })

  test('When request headers exceed MAX_HEADER_BYTES, then 431 with an Error body', async () => {
    const database = await resources.database(sqlite)
    const server = await resources.server(database.url, { MAX_HEADER_BYTES: '2048' })
    const { socket, ended } = rawConnection(server)
    socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(3000)}\r\n\r\n`)
    const { data } = await ended
    assert.match(data, /^HTTP\/1\.1 431 /)
    assert.deepEqual(errorBody(data), { code: 'headers_too_large', message: 'Request headers are too large', status: 431 })
    assert.equal((await fetch(`${server.baseUrl}/healthz`, { headers: { 'x-small': 'b'.repeat(1000) } })).status, 200)
  })

  test('When MAX_IN_FLIGHT requests are being handled, then the next gets 503 with Retry-After, probes still answer, and the held ones finish', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'in-flight')
    await seed(
      database.url,
      [1, 2].map((petId) => ({ petId, quantity: 1, status: 'available' })),
    )
    const server = await resources.server(database.url, { MAX_IN_FLIGHT: '2', DB_TIMEOUT_MS: '10000' })
    const release = await holdInventoryWriteLock(sqlite, database.url)
    const held = [1, 2].map((petId) => server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity: 7 } }))
    await sleep(300)
    const refused = await server.request('GET', '/v1/inventory', { token })
    assert.equal(refused.status, 503)
    assert.equal(refused.headers.get('retry-after'), '1')
    assert.deepEqual(refused.body, { code: 'service_unavailable', message: 'Too many requests in progress; retry shortly', status: 503 })
    assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200)
    assert.equal((await fetch(`${server.baseUrl}/readyz`)).status, 200)
    await release()
    assert.deepEqual(
      (await Promise.all(held)).map((r) => r.status),
      [200, 200],
    )
    assert.equal((await server.request('GET', '/v1/inventory', { token })).status, 200)
  })

  test('When MAX_CONNECTIONS connections are open, then a further one is closed at once, and served again once one goes', async () => {
    const database = await resources.database(sqlite)
    const server = await resources.server(database.url, { MAX_CONNECTIONS: '3' })
    const open = Array.from({ length: 3 }, () => rawConnection(server))
    for (const { socket } of open) await new Promise((resolve) => socket.once('connect', resolve))
    await sleep(200)
    const extra = rawConnection(server)
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const { data } = await extra.ended
    assert.equal(data, '', 'closed before any response')
    open[0]!.socket.destroy()
    await open[0]!.ended
    await sleep(200)
    const again = rawConnection(server)
    again.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    assert.match((await again.ended).data, /^HTTP\/1\.1 200 /)
    for (const { socket } of open) socket.destroy()
  })
})
