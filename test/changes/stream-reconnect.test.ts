// The change stream followed by a standard EventSource (the `eventsource` package, as a new user
// would) and by petstore-client, across what only passes: a restart of the only instance, a rolling
// restart of two behind one address, the database going away. The standard closes for good on any
// answer but a 200 text/event-stream, so the service answers what passes with a 200 that says when to
// come back; both clients must end following, with every row once, in seq order.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { Balancer } from '../support/balancer.js'
import { BACKENDS, createKey, type LogLine, seed, type TestServer, useResources } from '../support/helpers.js'
import { holdSqliteRecoveryLock } from '../support/sqlite-locks.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { assertEveryRowOnce, projectClient, StandardClient } from './followers.js'
import { feedEnd, until } from './sse.js'

const postgres = BACKENDS.find((b) => b.name === 'postgres')
const DRAIN_MS = 3000
/** Long enough for several reconnection waits (2–5 s each) and a process start on a loaded machine. */
const ARRIVAL_MS = 30_000

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

async function patch(baseUrl: string, token: string, petId: number, quantity: number, note: string): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/inventory/${petId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity, note }),
  })
  assert.equal(res.status, 200, await res.text())
}

/** What a routine refusal must look like in the log: once per request, at info (a drain) or warn, never with a stack; and nothing at error. */
function assertRefusalsLogged(server: TestServer, expected: { refusal: string; level: number }): LogLine[] {
  const logs = server.logs()
  assert.deepEqual(
    logs.filter((l) => Number(l.level) >= 50),
    [],
    'nothing logged at error',
  )
  const refusals = logs.filter((l) => l.msg === 'request refused')
  for (const line of refusals) {
    assert.deepEqual([line.level, line.refusal, 'err' in line, 'stack' in line], [expected.level, expected.refusal, false, false])
  }
  const ids = refusals.map((l) => l.reqId)
  assert.equal(new Set(ids).size, ids.length, 'once per request')
  return refusals
}

/** Makes the database unavailable to the server (PostgreSQL: behind `proxy`); resolves with what brings it back. */
async function takeAway(databaseUrl: string, proxy: TcpProxy | undefined): Promise<() => Promise<void>> {
  if (proxy) {
    await proxy.cut()
    return () => proxy.restore()
  }
  return (await holdSqliteRecoveryLock(databaseUrl.slice('sqlite:'.length))).release
}

for (const backend of BACKENDS) {
  describe(`a standard EventSource across a restart of the only instance (${backend.name})`, () => {
    const resources = useResources()

    test('When the only instance restarts (SIGTERM, a 3 s drain, a new process on the same port) while rows are written before, during and after, then an EventSource ends OPEN with every row once in seq order, and so does petstore-client', async (t) => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'restart')
      await seed(database.url, [
        { petId: 1, quantity: 1, status: 'available' },
        { petId: 2, quantity: 1, status: 'available' },
      ])
      const port = String(await freePort())
      const env = { PORT: port, SHUTDOWN_DRAIN_MS: String(DRAIN_MS) }
      const first = await resources.server(database.url, env)
      const start = await feedEnd(first.baseUrl, token)
      const standard = new StandardClient(`${first.baseUrl}/v1/inventory/changes/stream`, token, 'es')
      const project = projectClient(first.baseUrl, token, start)
      try {
        await until(() => standard.open, 5000, 'the EventSource opens')

        // Committed before the signal, not waited for on the stream: they must reach it before it ends.
        for (let i = 0; i < 4; i++) await patch(first.baseUrl, token, 1 + (i % 2), 10 + i, `before-${i}`)
        first.child.kill('SIGTERM')
        await until(() => !standard.open, 2000, 'the stream ends as the drain starts')
        assert.deepEqual(
          standard.events.map((e) => [JSON.parse(e.data).note, e.opened]),
          [0, 1, 2, 3].map((i) => [`before-${i}`, 1]),
          'the rows committed before the drain, on the stream it ended',
        )
        // During the drain (served in full), while no instance runs (as the CLI writes), after the restart.
        for (let i = 0; i < 2; i++) await patch(first.baseUrl, token, 1, 20 + i, `draining-${i}`)
        // The EventSource comes back 1 s after the end (retry: 1000) to the instance still draining.
        await first.waitForLog((l) => l.msg === 'request refused' && String(l.reqId).startsWith('es-'), DRAIN_MS)
        assert.equal(await first.waitForExit(), 0)
        await seed(database.url, [{ petId: 2, quantity: 7, status: 'available' }])
        const second = await resources.server(database.url, env)
        for (let i = 0; i < 2; i++) await patch(second.baseUrl, token, 2, 30 + i, `after-${i}`)

        const end = await feedEnd(second.baseUrl, token)
        await until(
          () => standard.events.at(-1)?.id === String(end) && project.rows.at(-1)?.seq === end,
          ARRIVAL_MS,
          `both clients reach seq ${end} (EventSource: ${standard.attempts.join(', ')})`,
        )
        assert.ok(standard.open, `the EventSource follows the new instance (readyState ${standard.source.readyState})`)
        const ledger = await assertEveryRowOnce(second.baseUrl, token, start, standard, project)
        assert.equal(ledger.length, 9)
        t.diagnostic(`EventSource requests: ${standard.attempts.join(', ')}`)
        assertRefusalsLogged(first, { refusal: 'draining', level: 30 })
        assertRefusalsLogged(second, { refusal: 'draining', level: 30 })
      } finally {
        standard.close()
        await project.stop()
      }
    })

    test('When the database is unavailable as a client connects, then it is told to come back, logged at warn without a stack, and it follows once the database is back', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'outage')
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      let serverUrl = database.url
      let proxy: TcpProxy | undefined
      if (backend.name === 'postgres') {
        const direct = new URL(database.url)
        proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
        const proxied = new URL(database.url)
        proxied.port = String(proxy.port)
        serverUrl = proxied.toString()
      }
      const server = await resources.server(serverUrl, { DB_TIMEOUT_MS: '500' })
      const start = await feedEnd(server.baseUrl, token)
      const url = `${server.baseUrl}/v1/inventory/changes/stream?after=${start}`
      const before = new StandardClient(url, token, 'before')
      await until(() => before.open, 5000, 'the first EventSource opens')
      const bringBack = await takeAway(database.url, proxy)
      let back: Promise<void> | undefined
      const release = () => (back ??= bringBack())
      let during: StandardClient | undefined
      let project: ReturnType<typeof projectClient> | undefined
      try {
        during = new StandardClient(url, token, 'during')
        project = projectClient(server.baseUrl, token, start)
        const refused = await server.waitForLog((l) => l.msg === 'request refused' && l.reqId === 'during-1')
        assert.equal(refused.refusal, 'database')
        assert.ok(!during.closedForGood, 'the EventSource will come back')
        await release()
        await until(() => during!.open, ARRIVAL_MS, `the EventSource follows once the database is back (${during.attempts.join(', ')})`)
        for (let i = 0; i < 3; i++) await patch(server.baseUrl, token, 1, 10 + i, `back-${i}`)
        const end = await feedEnd(server.baseUrl, token)
        await until(
          () => [before, during!].every((c) => c.events.at(-1)?.id === String(end)) && project!.rows.at(-1)?.seq === end,
          ARRIVAL_MS,
          `every client reaches seq ${end}`,
        )
        assert.ok(before.open && during.open)
        await assertEveryRowOnce(server.baseUrl, token, start, before, project)
        await assertEveryRowOnce(server.baseUrl, token, start, during, project)
        assert.ok(assertRefusalsLogged(server, { refusal: 'database', level: 40 }).length >= 1)
      } finally {
        await release()
        before.close()
        during?.close()
        await project?.stop()
        await proxy?.close()
      }
    })
  })
}

describe('a standard EventSource across a rolling restart of two instances behind one address (postgres)', {
  skip: !postgres && 'PostgreSQL is not reachable',
}, () => {
  const resources = useResources()

  test('When both instances restart one after the other under steady writes, then an EventSource through the balancer ends OPEN with every row once in seq order, and so does petstore-client', async (t) => {
    const database = await resources.database(postgres!)
    const token = await createKey(database.url, 'rolling')
    await seed(database.url, [
      { petId: 1, quantity: 1, status: 'available' },
      { petId: 2, quantity: 1, status: 'available' },
    ])
    const env = { SHUTDOWN_DRAIN_MS: String(DRAIN_MS) }
    const instances = await Promise.all([resources.server(database.url, env), resources.server(database.url, env)])
    // The instance to restart next comes first: the clients are on it, and come back to it while it drains.
    const balancer = await Balancer.start(instances.map((s) => s.port))
    const start = await feedEnd(balancer.url, token)
    const standard = new StandardClient(`${balancer.url}/v1/inventory/changes/stream`, token, 'es')
    const project = projectClient(balancer.url, token, start)
    let writing = true
    let written = 0
    // Steady writes through the balancer; one that meets an instance going away is simply not counted.
    const write = async () => {
      for (let i = 0; writing; i++) {
        await patch(balancer.url, token, 1 + (i % 2), i % 100, `w-${i}`).then(
          () => written++,
          () => {},
        )
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
    }
    let writer = Promise.resolve()
    const progress = async (what: string) => {
      const target = written + 10
      await until(() => written >= target, ARRIVAL_MS, `10 more writes ${what}`)
      const end = await feedEnd(balancer.url, token)
      await until(
        () => BigInt(standard.events.at(-1)?.id ?? start) >= end && (project.rows.at(-1)?.seq ?? start) >= end,
        ARRIVAL_MS,
        `both clients reach seq ${end} ${what} (EventSource: ${standard.attempts.slice(-5).join(', ')})`,
      )
    }
    const stopped: TestServer[] = []
    try {
      // The EventSource starts at the end it meets: the writes begin once it has.
      await until(() => standard.open, 5000, 'the EventSource opens')
      writer = write()
      await progress('before the restart')
      for (const i of [0, 1]) {
        const old = instances[i]!
        old.child.kill('SIGTERM')
        // Each client meets the drain: told to come back, then sent to the other instance once this one stops listening.
        await old.waitForLog((l) => l.msg === 'request refused' && String(l.reqId).startsWith('es-'), DRAIN_MS)
        assert.equal(await old.waitForExit(), 0)
        stopped.push(old)
        instances[i] = await resources.server(database.url, env)
        balancer.backends = [instances[1 - i]!.port, instances[i]!.port]
        await progress(`after instance ${i} restarted`)
      }
      writing = false
      await writer
      const end = await feedEnd(balancer.url, token)
      await until(
        () => standard.events.at(-1)?.id === String(end) && project.rows.at(-1)?.seq === end,
        ARRIVAL_MS,
        `both clients reach seq ${end}`,
      )
      assert.ok(standard.open, `the EventSource follows (readyState ${standard.source.readyState})`)
      const ledger = await assertEveryRowOnce(balancer.url, token, start, standard, project)
      t.diagnostic(`${ledger.length} rows; EventSource requests: ${standard.attempts.join(', ')}`)
      for (const server of [...stopped, ...instances]) assertRefusalsLogged(server, { refusal: 'draining', level: 30 })
    } finally {
      writing = false
      await writer
      standard.close()
      await project.stop()
      await balancer.close()
    }
  })
})
