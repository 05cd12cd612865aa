// PostgreSQL's faults provoked for real on a database of the test's own, under a running server: the
// database switched read-only with its sessions ended (as an old primary answers after a failover:
// SQLSTATE 25006), every session of the service terminated mid-load (57P01), and the database's
// connection limit taken (53300). For each: the answers, readiness, the log lines, nothing lost, and
// recovery without a restart once the cause is gone.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, test } from 'node:test'
import {
  assertInvariants,
  BACKENDS,
  createKey,
  type LogLine,
  POSTGRES_ADMIN_URL,
  type Response,
  seed,
  type TestServer,
  useResources,
} from '../support/helpers.js'
import { postgresAdmin } from '../support/databases.js'
import { holdInventoryWriteLock } from '../support/inventory-lock.js'
import { readAllChanges } from '../support/ledger-client.js'
import { scrape, startWithMetrics } from '../support/metrics-scrape.js'
import { Receiver, waitFor } from '../webhooks/receiver.js'

const postgres = BACKENDS.find((b) => b.name === 'postgres')

const MESSAGES = {
  read_only: 'The database accepts no writes: it is read-only (a standby, or a primary switched to read-only after a failover)',
  terminated: 'The database ended its connections (an administrator, or the server restarting)',
  connection_limit: 'The database refuses new connections: its connection limit is reached',
} as const

const admin = postgresAdmin

const nameOf = (url: string) => new URL(url).pathname.slice(1)

/** Ends every session on `database` but the caller's own (pg_terminate_backend: SQLSTATE 57P01 to each). */
const terminateSessions = (database: string) =>
  admin((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]))

/** Sends `request` until `done` accepts an answer; every answer must be a 200 or a 503, never a 500. */
async function until(what: string, request: () => Promise<Response>, done: (res: Response) => boolean, ms = 10_000): Promise<Response> {
  const deadline = Date.now() + ms
  for (;;) {
    const res = await request()
    assert.ok([200, 201, 503].includes(res.status), `${what}: ${res.status} ${res.text}`)
    if (done(res)) return res
    assert.ok(Date.now() < deadline, `${what}: not within ${ms} ms (last ${res.status} ${res.text})`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Waits until /readyz answers 200, at most `ms` after `since`. */
async function readyAgain(server: TestServer, since: number, ms = 5000): Promise<void> {
  for (;;) {
    if ((await server.request('GET', '/readyz')).status === 200) return
    assert.ok(Date.now() - since < ms, `ready again within ${ms} ms of the cause going away`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const faultLines = (server: TestServer) =>
  server
    .logs()
    .filter((l: LogLine) => String(l.msg).startsWith('database fault'))
    .map((l) => [l.level, l.fault, String(l.msg).startsWith('database fault ended')])

/** Nothing at error, and no stack, whatever the fault: each passes by itself or by an operator's hand. */
const assertNothingAtError = (server: TestServer) =>
  assert.deepEqual(
    server.logs().filter((l) => Number(l.level) >= 50 || 'err' in l),
    [],
  )

describe('PostgreSQL faults under a running server', { skip: !postgres && 'PostgreSQL is not reachable' }, () => {
  const resources = useResources()

  test('When the database turns read-only and its sessions end, then writes answer 503 naming it, reads are served, /readyz fails, one warn line; once writable again it recovers within 5 s without a restart, one info line', async () => {
    const database = await resources.database(postgres!)
    const name = nameOf(database.url)
    const token = await createKey(database.url, 'read-only')
    await seed(database.url, [
      { petId: 1, quantity: 10, status: 'available' },
      { petId: 2, quantity: 1000, status: 'available' },
    ])
    const { server, metricsUrl } = await startWithMetrics(resources, database.url, {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
    })
    // A webhook subscription whose cursor writes meet the fault too: no row of it may be skipped.
    const receiver = await Receiver.start()
    after(() => receiver.close())
    const subscribed = await server.request('POST', '/v1/webhooks', { token, body: { url: receiver.url } })
    assert.equal(subscribed.status, 201, subscribed.text)
    const patch = (quantity: number) => server.request('PATCH', '/v1/inventory/1', { token, body: { quantity } })
    assert.equal((await patch(11)).status, 200)
    const firstSeq = (await readAllChanges(server, token)).at(-1)!.seq

    await admin((c) => c.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`))
    await terminateSessions(name)
    try {
      // A connection the termination ended may answer first (57P01); then a new one, read-only.
      let quantity = 100
      const refused = await until(
        'a PATCH refused as read-only',
        () => patch(quantity++),
        (res) => res.status === 503 && (res.body as { message: string }).message === MESSAGES.read_only,
      )
      assert.equal(refused.headers.get('retry-after'), '2')
      const order = await server.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 3 } })
      assert.equal(order.status, 503, order.text)
      const entry = await server.request('GET', '/v1/inventory/1', { token })
      assert.equal(entry.status, 200)
      assert.equal((entry.body as { quantity: number }).quantity, 11)
      assert.equal((await server.request('GET', '/v1/inventory', { token })).status, 200)
      assert.equal((await server.request('GET', '/healthz')).status, 200)
      const ready = await server.request('GET', '/readyz')
      assert.equal(ready.status, 503)
      assert.equal((ready.body as { message: string }).message, MESSAGES.read_only)
      assert.equal((await scrape(metricsUrl)).value('petstore_database_fault', { cause: 'read_only' }), 1)
    } finally {
      await admin((c) => c.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`))
    }
    // Sessions opened while it was read-only stay so for their life: the pool must not reuse them.
    await readyAgain(server, Date.now())
    for (let i = 0; i < 20; i++) assert.equal((await patch(200 + i)).status, 200)
    assert.equal((await server.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 3 } })).status, 201)
    assert.equal((await scrape(metricsUrl)).value('petstore_database_fault', { cause: 'read_only' }), 0)

    const lines = faultLines(server)
    assert.deepEqual(lines.at(-1), [30, 'read_only', true], 'one info line when it ended')
    assert.deepEqual(lines.at(-2), [40, 'read_only', false], 'one warn line when it began')
    // Before it, at most the terminated sessions' own, which the probe ended at once.
    assert.ok(lines.length === 2 || (lines.length === 3 && lines[0]![1] === 'terminated'), JSON.stringify(lines))
    assert.equal(server.logs().filter((l) => l.msg === 'request refused').length, 0, 'no line per refusal')
    assertNothingAtError(server)
    // Nothing half-written: the refused order placed nothing; pet 2 lost only the order placed after.
    const pet2 = await server.request('GET', '/v1/inventory/2', { token })
    assert.equal((pet2.body as { quantity: number }).quantity, 997)
    const ledger = (await readAllChanges(server, token, { petId: 1n })).filter((c) => c.reason !== 'import').map((c) => c.quantity)
    assert.deepEqual(ledger, [11, ...Array.from({ length: 20 }, (_, i) => 200 + i)])
    // Every row since the subscription reached the receiver (at least once, in seq order).
    const rows = (await readAllChanges(server, token)).map((c) => c.seq).filter((seq) => seq > firstSeq - 1)
    await waitFor(
      () => rows.every((seq) => receiver.messages().some((m) => m.seq === seq)),
      10_000,
      () => `every row delivered: ${rows.join(',')} against ${receiver.messages().map((m) => m.seq)}`,
    )
    assert.equal(await server.stop(), 0)
    await assertInvariants(database.url, 'after the read-only spell')
  })

  test('When every session of the service is terminated mid-load, then no answer is a 500, every acknowledged PATCH is kept, and it serves again within 5 s, with one warn and one info line', async (t) => {
    const database = await resources.database(postgres!)
    const token = await createKey(database.url, 'terminated')
    await seed(database.url, [{ petId: 1, quantity: 0, status: 'available' }])
    const server = await resources.server(database.url)
    let next = 1
    let stop = false
    const acknowledged: number[] = []
    const answers = new Map<number, number>()
    let lastRefusal = 0
    const worker = async () => {
      while (!stop) {
        const quantity = next++
        const res = await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity } })
        answers.set(res.status, (answers.get(res.status) ?? 0) + 1)
        if (res.status === 200) acknowledged.push(quantity)
        else {
          assert.equal(res.status, 503, res.text)
          assert.ok(
            (Object.values(MESSAGES) as string[]).includes((res.body as { message: string }).message) || /unavailable/.test(res.text),
            res.text,
          )
          lastRefusal = Date.now()
        }
      }
    }
    const load = Array.from({ length: 8 }, worker)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    // The writes then wait on a lock another session holds, their statements in flight, when every
    // session of the service's pool is ended.
    const release = await holdInventoryWriteLock(postgres!, database.url)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const ended = (
      await admin((c) =>
        c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'petstore'", [
          nameOf(database.url),
        ]),
      )
    ).rowCount
    const terminatedAt = Date.now()
    await release()
    await new Promise((resolve) => setTimeout(resolve, 3000))
    stop = true
    await Promise.all(load)
    assert.ok((ended ?? 0) > 0, 'the service had sessions to end')
    assert.ok(lastRefusal === 0 || lastRefusal - terminatedAt < 5000, 'every refusal within 5 s of the termination')
    assert.ok((answers.get(200) ?? 0) > 0, JSON.stringify([...answers]))
    await readyAgain(server, terminatedAt)

    const ledger = new Set((await readAllChanges(server, token, { petId: 1n })).map((c) => c.quantity))
    const lost = acknowledged.filter((q) => !ledger.has(q))
    assert.deepEqual(lost, [], 'every acknowledged PATCH is in the ledger')
    const lines = faultLines(server)
    t.diagnostic(`answers ${JSON.stringify([...answers])}`)
    assert.ok((answers.get(503) ?? 0) > 0, 'the writes in flight were refused')
    assert.deepEqual(
      lines,
      [
        [40, 'terminated', false],
        [30, 'terminated', true],
      ],
      'said once when it began and once when it ended',
    )
    assertNothingAtError(server)
    assert.equal(await server.stop(), 0)
    await assertInvariants(database.url, 'after the sessions were terminated')
  })

  test('When the database’s connection limit is taken, then requests answer 503 naming it, /readyz fails, one warn line; once lifted it recovers within 5 s, one info line', async () => {
    // A database's CONNECTION LIMIT binds roles that are not superusers: the service logs in as one.
    const role = `petstore_limited_${randomBytes(4).toString('hex')}`
    const name = `petstore_limit_${process.pid}_${randomBytes(4).toString('hex')}`
    await admin(async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN`)
      await c.query(`CREATE DATABASE ${name} OWNER ${role}`)
    })
    after(() =>
      admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await c.query(`DROP ROLE IF EXISTS ${role}`)
      }),
    )
    const url = new URL(POSTGRES_ADMIN_URL)
    url.username = role
    url.pathname = `/${name}`
    const token = await createKey(url.toString(), 'limited')
    await seed(url.toString(), [{ petId: 1, quantity: 10, status: 'available' }])
    const server = await resources.server(url.toString(), { DB_TIMEOUT_MS: '2000' })
    const patch = (quantity: number) => server.request('PATCH', '/v1/inventory/1', { token, body: { quantity } })
    assert.equal((await patch(11)).status, 200)

    await admin((c) => c.query(`ALTER DATABASE ${name} CONNECTION LIMIT 0`))
    await terminateSessions(name)
    let liftedAt = 0
    try {
      let quantity = 100
      await until(
        'a PATCH refused for the connection limit',
        () => patch(quantity++),
        (res) => res.status === 503 && (res.body as { message: string }).message === MESSAGES.connection_limit,
      )
      assert.equal((await server.request('GET', '/healthz')).status, 200)
      const ready = await server.request('GET', '/readyz')
      assert.equal(ready.status, 503)
      assert.equal((ready.body as { message: string }).message, MESSAGES.connection_limit)
    } finally {
      await admin((c) => c.query(`ALTER DATABASE ${name} CONNECTION LIMIT -1`))
      liftedAt = Date.now()
    }
    await readyAgain(server, liftedAt)
    assert.equal((await patch(12)).status, 200)
    const lines = faultLines(server)
    assert.deepEqual(lines.at(-1), [30, 'connection_limit', true], 'one info line when it ended')
    assert.deepEqual(lines.at(-2), [40, 'connection_limit', false], 'one warn line when it began')
    assert.ok(lines.length === 2 || (lines.length === 3 && lines[0]![1] === 'terminated'), JSON.stringify(lines))
    assertNothingAtError(server)
    assert.equal(await server.stop(), 0)
    await assertInvariants(url.toString(), 'after the connection limit')
  })
})
