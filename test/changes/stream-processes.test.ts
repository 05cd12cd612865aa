// GET /v1/inventory/changes/stream across real `petstore serve` processes: a change committed
// through one instance, a worker or the CLI reaches the streams open on the others within a second;
// streams end when the drain starts, with the rows committed before it, and new ones are told to
// reconnect meanwhile. (stream-metrics.test.ts: the gauge, and a client that stops reading in a real
// process; stream-reconnect.test.ts: EventSource clients across restarts and outages.)
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, inventoryFile, runCli, seed, useResources } from '../support/helpers.js'
import { openStream, type SseClient, until } from './sse.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const PETS = [1, 2, 3, 4]

/** Resolves with performance.now() when every client has an event whose data has `marker`. */
async function arrival(clients: SseClient[], marker: string, ms: number): Promise<number> {
  return until(() => (clients.every((c) => c.events.some((e) => e.data.includes(marker))) ? performance.now() : undefined), ms, marker)
}

async function patch(baseUrl: string, token: string, petId: number, quantity: number, note: string): Promise<void> {
  // A connection of its own, so that with workers the cluster hands it to either of them.
  const res = await fetch(`${baseUrl}/v1/inventory/${petId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ quantity, note }),
  })
  assert.equal(res.status, 200, await res.text())
}

/** Imports one entry with the real CLI (a process of its own); resolves with performance.now() at its exit. */
async function importWithCli(databaseUrl: string, petId: number, quantity: number): Promise<number> {
  const file = inventoryFile([{ petId, quantity, status: 'available' }])
  const result = await runCli(['import', 'inventory', file], { DATABASE_URL: databaseUrl })
  assert.equal(result.code, 0, result.stderr)
  return performance.now()
}

for (const backend of BACKENDS) {
  describe(`change streams across processes (${backend.name})`, () => {
    const resources = useResources()

    test('When two servers share the database, then a change through one, or through the CLI, reaches a stream open on the other within 1 second', async (t) => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'instances')
      await seed(
        database.url,
        PETS.map((petId) => ({ petId, quantity: 10, status: 'available' })),
      )
      const [a, b] = await Promise.all([resources.server(database.url), resources.server(database.url)])
      const onA = await openStream(a!.baseUrl, { token })
      const onB = await openStream(b!.baseUrl, { token })
      try {
        assert.equal(onA.status, 200)
        assert.equal(onB.status, 200)
        await until(() => onA.blocks.length > 0 && onB.blocks.length > 0, 5000, 'both preambles')
        const latencies: string[] = []
        for (let round = 0; round < 3; round++) {
          const sent = performance.now()
          await patch(a!.baseUrl, token, 1, 20 + round, `through-a-${round}`)
          latencies.push(`A→B ${Math.round((await arrival([onB], `through-a-${round}`, 1000)) - sent)} ms`)
          const sentB = performance.now()
          await patch(b!.baseUrl, token, 2, 30 + round, `through-b-${round}`)
          latencies.push(`B→A ${Math.round((await arrival([onA], `through-b-${round}`, 1000)) - sentB)} ms`)
        }
        const exited = await importWithCli(database.url, 777, 7)
        const cli = await arrival([onA, onB], '"petId":777,', 1000)
        latencies.push(`CLI→A,B ${Math.round(cli - exited)} ms after its exit`)
        t.diagnostic(latencies.join(', '))
        // Both saw the same rows, in the same order.
        await until(() => onA.events.length === onB.events.length, 1000, 'the same rows on both')
        assert.deepEqual(onA.events, onB.events)
        assert.equal(onA.events.length, 7)
      } finally {
        await Promise.all([onA.close(), onB.close()])
      }
    })
  })
}

describe('change streams across workers (sqlite, --workers 2)', () => {
  const resources = useResources()

  test('When a server runs two workers, then a change through either, or through the CLI, reaches every open stream within 1 second', async (t) => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'workers')
    await seed(
      database.url,
      PETS.map((petId) => ({ petId, quantity: 10, status: 'available' })),
    )
    const server = await resources.server(database.url, { STREAM_MAX_PER_KEY: '20' }, { args: ['--workers', '2'] })
    // Connections of their own: the cluster hands them to the workers in turn.
    const clients = await Promise.all(Array.from({ length: 4 }, () => openStream(server.baseUrl, { token })))
    try {
      assert.deepEqual(
        clients.map((c) => c.status),
        [200, 200, 200, 200],
      )
      await until(() => clients.every((c) => c.blocks.length > 0), 5000, 'every preamble')
      const latencies: number[] = []
      for (let round = 0; round < 4; round++) {
        const sent = performance.now()
        await patch(server.baseUrl, token, 1 + (round % PETS.length), 50 + round, `worker-round-${round}`)
        latencies.push(Math.round((await arrival(clients, `worker-round-${round}`, 1000)) - sent))
      }
      const exited = await importWithCli(database.url, 888, 8)
      const cli = await arrival(clients, '"petId":888,', 1000)
      t.diagnostic(`PATCH→every stream ${latencies.join(', ')} ms; CLI→every stream ${Math.round(cli - exited)} ms after its exit`)
      for (const client of clients) assert.deepEqual(client.events, clients[0]!.events)
    } finally {
      await Promise.all(clients.map((c) => c.close()))
    }
  })
})

for (const backend of BACKENDS) {
  describe(`change streams and the process's life (${backend.name})`, () => {
    const resources = useResources()

    test('When SIGTERM starts a drain, then an open stream gets the rows committed before it and ends at once, well before the drain is over, and a new stream is told to reconnect, logged at info', async (t) => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'drain')
      await seed(
        database.url,
        PETS.map((petId) => ({ petId, quantity: 10, status: 'available' })),
      )
      const server = await resources.server(database.url, { SHUTDOWN_DRAIN_MS: '2000' })
      const client = await openStream(server.baseUrl, { token })
      assert.equal(client.status, 200)
      assert.equal(client.headers.connection, 'close', 'a stream ends only with its instance: its connection goes with it')
      await until(() => client.blocks.length > 0, 5000, 'the preamble')
      // Answered, so committed, before the signal, and not waited for on the stream: the tail may not have read them yet.
      for (const [i, petId] of PETS.entries()) await patch(server.baseUrl, token, petId, 40 + i, `before-drain-${i}`)
      const signalled = performance.now()
      server.child.kill('SIGTERM')
      await until(() => client.ended, 1500, 'the stream ending')
      const endedAfter = client.endedAt! - signalled
      assert.ok(client.endedByServer)
      assert.ok(client.complete, 'the response ended in full (its last chunk), not cut')
      assert.ok(endedAfter < 1000, `the stream ended ${Math.round(endedAfter)} ms after SIGTERM, in a 2000 ms drain`)
      assert.deepEqual(
        client.events.map((e) => JSON.parse(e.data).note),
        PETS.map((_, i) => `before-drain-${i}`),
        'every row committed before the drain, in the stream it ended',
      )

      const refused = await openStream(server.baseUrl, { token, lastEventId: client.lastId })
      assert.ok(server.child.exitCode === null, 'still draining')
      // A 503 would close an EventSource for good: a 200 stream that says when to come back, and ends.
      assert.equal(refused.status, 200, refused.raw)
      assert.match(String(refused.headers['content-type']), /^text\/event-stream/)
      assert.equal(refused.headers.connection, 'close')
      assert.equal(refused.headers['retry-after'], undefined)
      await refused.closed()
      assert.ok(refused.complete, 'the refusal ends in full')
      const reconnect = refused.reconnect
      assert.ok(reconnect, `a reconnect block: ${JSON.stringify(refused.raw)}`)
      assert.ok(reconnect.ms >= 2000 && reconnect.ms <= 5000, `retry: ${reconnect.ms}`)
      assert.equal(reconnect.id, client.lastId, 'the id it asked to resume after')
      assert.match(reconnect.reason, /shutting down/)
      assert.equal(await server.waitForExit(), 0)
      const exitedAfter = performance.now() - signalled
      t.diagnostic(`stream ended ${Math.round(endedAfter)} ms after SIGTERM; the process exited after ${Math.round(exitedAfter)} ms`)
      assert.ok(exitedAfter >= 1900, 'the drain lasted its 2000 ms')

      // Routine: once, at info, without a stack; nothing at error.
      const refusals = server.logs().filter((l) => l.msg === 'request refused')
      assert.deepEqual(
        refusals.map((l) => [l.level, l.refusal, l.retryMs, 'err' in l]),
        [[30, 'draining', reconnect.ms, false]],
      )
      assert.deepEqual(
        server.logs().filter((l) => Number(l.level) >= 50),
        [],
      )
    })
  })
}
