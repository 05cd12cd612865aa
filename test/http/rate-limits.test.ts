import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { describe, test } from 'node:test'
import { startApp } from '../support/app.js'
import { BACKENDS, createKey, seed, type Served, useResources, type Response } from '../support/helpers.js'
import { scrape, startWithMetrics } from '../support/metrics-scrape.js'
import { holdSqliteRecoveryLock } from '../support/sqlite-locks.js'
import { TcpProxy } from '../support/tcp-proxy.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Why Redis cannot be used here, or undefined when it can. In CI it is required (.ci/run starts it). */
async function redisUnavailable(): Promise<string | undefined> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.ping()
    return undefined
  } catch (error) {
    return `Redis at ${REDIS_URL} is unreachable (${(error as Error).message})`
  } finally {
    client.disconnect()
  }
}
const noRedis = await redisUnavailable()
const skipRedis = !process.env.CI && noRedis

/** A Redis key prefix of its own, so tests never share counters. */
const freshPrefix = () => `petstore-test:${randomBytes(6).toString('hex')}:`

// Counting tests use a day-long window: one that rolled over mid-test would reset the counts.
const WINDOW_S = 86_400
const WINDOW = { RATE_LIMIT_WINDOW_S: String(WINDOW_S) }

/** The parameters of one policy's item in a RateLimit or RateLimit-Policy header. */
function item(header: string | null, policy: string): Record<'q' | 'w' | 'r' | 't', number> | undefined {
  const found = (header ?? '').split(/,\s*/).find((part) => part.startsWith(`"${policy}";`))
  if (!found) return undefined
  return Object.fromEntries(
    found
      .split(';')
      .slice(1)
      .map((kv) => [kv.split('=')[0]!, Number(kv.split('=')[1])]),
  ) as Record<'q' | 'w' | 'r' | 't', number>
}

const get = (server: Served, token: string) => server.request('GET', '/v1/inventory/1', { token })

function assertLimited(res: Response, policy: string, quota: number, remaining: number) {
  assert.deepEqual(item(res.headers.get('ratelimit-policy'), policy), { q: quota, w: WINDOW_S })
  const left = item(res.headers.get('ratelimit'), policy)
  assert.equal(left?.r, remaining)
  assert.ok(left !== undefined && left.t >= 1 && left.t <= WINDOW_S, `t=${left?.t}`)
}

describe('rate limits, counted in one process', () => {
  const resources = useResources()

  test('When a key makes more requests than RATE_LIMIT_PER_KEY in a window, then each answer carries the RateLimit headers and the extra ones get 429 with Retry-After, while another key is unaffected', async () => {
    const database = await resources.database(sqlite)
    const [first, second] = [await createKey(database.url, 'first'), await createKey(database.url, 'second')]
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const { server, metricsUrl } = await startWithMetrics(resources, database.url, {
      ...WINDOW,
      RATE_LIMIT_PER_KEY: '5',
      RATE_LIMIT_PER_ADDRESS: '0',
    })
    for (let i = 1; i <= 5; i++) {
      const res = await get(server, first)
      assert.equal(res.status, 200)
      assertLimited(res, 'per-key', 5, 5 - i)
      assert.equal(item(res.headers.get('ratelimit'), 'per-address'), undefined)
    }
    for (let i = 0; i < 2; i++) {
      const refused = await get(server, first)
      assert.equal(refused.status, 429)
      assert.equal(refused.body.code, 'rate_limited')
      assert.equal(refused.body.status, 429)
      assert.match(refused.body.message, /^Rate limit exceeded: 5 requests per 86400 s for this API key; retry in \d+ s$/)
      assertLimited(refused, 'per-key', 5, 0)
      assert.equal(Number(refused.headers.get('retry-after')), item(refused.headers.get('ratelimit'), 'per-key')!.t)
    }
    const other = await get(server, second)
    assert.equal(other.status, 200)
    assertLimited(other, 'per-key', 5, 4)
    // A refused PATCH changes nothing.
    assert.equal((await server.request('PATCH', '/v1/inventory/1', { token: first, body: { quantity: 9 } })).status, 429)
    assert.equal((await get(server, second)).body.quantity, 1)
    const metrics = await scrape(metricsUrl)
    assert.equal(metrics.value('petstore_rate_limited_total', { policy: 'per-key' }), 3)
    assert.equal(metrics.sum('http_requests_total', { status_code: '429' }), 3)
  })

  test('When an address sends more unverified keys than RATE_LIMIT_PER_ADDRESS, then it gets 429 without the database being asked, and a verified key is counted per key only', async (t) => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'good')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const server = await startApp(database.url, {
      ...WINDOW,
      RATE_LIMIT_PER_KEY: '100',
      RATE_LIMIT_PER_ADDRESS: '4',
      DB_TIMEOUT_MS: '3000',
    })
    t.after(() => server.close())
    // Its first use is counted per address too, until this process has verified it.
    const firstUse = await get(server, token)
    assert.equal(firstUse.status, 200)
    assertLimited(firstUse, 'per-address', 4, 3)
    assertLimited(firstUse, 'per-key', 100, 99)
    const again = await get(server, token)
    assert.equal(item(again.headers.get('ratelimit'), 'per-address'), undefined)
    assertLimited(again, 'per-key', 100, 98)

    const guesses = [`psk_${'a'.repeat(43)}`, `psk_${'b'.repeat(43)}`, 'not-a-key']
    for (const [i, guess] of guesses.entries()) {
      const res = await get(server, guess)
      assert.equal(res.status, 401)
      assertLimited(res, 'per-address', 4, 2 - i)
    }
    // The database is now locked for reads: a request that reached it would wait DB_TIMEOUT_MS, then 503.
    const path = database.url.slice('sqlite:'.length)
    const lock = await holdSqliteRecoveryLock(path)
    try {
      const started = Date.now()
      for (let i = 0; i < 20; i++) {
        const res = await get(server, `psk_${randomBytes(32).toString('base64url').slice(0, 43)}`)
        assert.equal(res.status, 429)
        assert.equal(res.body.code, 'rate_limited')
        assertLimited(res, 'per-address', 4, 0)
      }
      assert.ok(Date.now() - started < 2000, `20 refusals took ${Date.now() - started} ms`)
    } finally {
      await lock.release()
    }
    // The verified key is not held back by its address's guesses.
    assert.equal((await get(server, token)).status, 200)
  })

  test('When TRUST_PROXY names the proxy, then addresses come from X-Forwarded-For; otherwise a forged one is ignored', async (t) => {
    const database = await resources.database(sqlite)
    const limited = { ...WINDOW, RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '1' }
    // In-process requests come from 127.0.0.1, as the proxy's would.
    const trusting = await startApp(database.url, { ...limited, TRUST_PROXY: '127.0.0.1' })
    const plain = await startApp(database.url, limited)
    t.after(() => Promise.all([trusting.close(), plain.close()]))
    const from = (server: Served, address: string) =>
      server.request('GET', '/v1/inventory', { token: 'nope', headers: { 'x-forwarded-for': address } })
    assert.equal((await from(trusting, '203.0.113.1')).status, 401)
    assert.equal((await from(trusting, '203.0.113.2')).status, 401)
    assert.equal((await from(trusting, '203.0.113.1')).status, 429)
    assert.equal((await from(plain, '203.0.113.1')).status, 401)
    assert.equal((await from(plain, '203.0.113.2')).status, 429)
  })
})

describe('rate limits shared in Redis', { skip: skipRedis }, () => {
  const resources = useResources()
  /** A limit of 10 per key, shared in Redis under a prefix of this test's own. */
  const sharedLimit = () => ({
    ...WINDOW,
    RATE_LIMIT_PER_KEY: '10',
    RATE_LIMIT_PER_ADDRESS: '0',
    REDIS_URL,
    REDIS_KEY_PREFIX: freshPrefix(),
  })
  /** 16 requests against one shared limit of 10: the first 10 pass, the rest are refused. */
  const TEN_THEN_REFUSED = [...Array(10).fill(200), ...Array(6).fill(429)]

  // The deployment this is for: many instances over one PostgreSQL (and, on one machine, SQLite).
  for (const backend of BACKENDS) {
    test(`When two instances share REDIS_URL, then a key has one limit across both (${backend.name})`, async () => {
      assert.equal(noRedis, undefined, noRedis)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'shared')
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      const env = sharedLimit()
      const servers = [await resources.server(database.url, env), await resources.server(database.url, env)]
      const statuses: number[] = []
      for (let i = 0; i < 16; i++) {
        const res = await get(servers[i % 2]!, token)
        statuses.push(res.status)
        if (res.status === 200) assertLimited(res, 'per-key', 10, 10 - statuses.length)
      }
      assert.deepEqual(statuses, TEN_THEN_REFUSED)
    })
  }

  test('When the workers of one instance share REDIS_URL, then a key has one limit across them', async () => {
    assert.equal(noRedis, undefined, noRedis)
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'workers')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const server = await resources.server(database.url, { ...sharedLimit(), WORKERS: '2' })
    // A new connection each time, so the primary deals them to both workers in turn.
    const statuses: number[] = []
    for (let i = 0; i < 16; i++) {
      statuses.push((await server.request('GET', '/v1/inventory/1', { token, headers: { connection: 'close' } })).status)
    }
    assert.deepEqual(statuses, TEN_THEN_REFUSED)
  })

  test('When Redis goes away, then the service keeps serving, counting in each process, says so once, and shares the count again when Redis is back', async () => {
    assert.equal(noRedis, undefined, noRedis)
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'outage')
    await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
    const redis = new URL(REDIS_URL)
    const proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) })
    try {
      const through = new URL(REDIS_URL)
      through.port = String(proxy.port)
      const { server, metricsUrl } = await startWithMetrics(resources, database.url, {
        ...WINDOW,
        RATE_LIMIT_PER_KEY: '1000',
        RATE_LIMIT_PER_ADDRESS: '0',
        REDIS_URL: through.toString(),
        REDIS_KEY_PREFIX: freshPrefix(),
      })
      const storeErrors = async () => (await scrape(metricsUrl)).value('petstore_rate_limit_store_errors_total') ?? 0
      assert.equal(await storeErrors(), 0)
      for (let i = 1; i <= 3; i++) assertLimited(await get(server, token), 'per-key', 1000, 1000 - i)

      await proxy.cut()
      const started = Date.now()
      for (let i = 1; i <= 5; i++) {
        const res = await get(server, token)
        assert.equal(res.status, 200)
        // Counted in this process from zero while Redis is away.
        assertLimited(res, 'per-key', 1000, 1000 - i)
      }
      assert.ok(Date.now() - started < 3000, `5 requests during the outage took ${Date.now() - started} ms`)
      const unavailable = server.logs().filter((l) => String(l.msg).startsWith('rate limit store (Redis) unavailable'))
      assert.equal(unavailable.length, 1)
      assert.equal(await storeErrors(), 5, 'each count Redis missed is in the metrics')

      await proxy.restore()
      // The client reconnects on its own (within about 2 s); until then it counts locally, from 6 on.
      const deadline = Date.now() + 10_000
      let res = await get(server, token)
      while (item(res.headers.get('ratelimit'), 'per-key')!.r < 1000 - 5 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200))
        res = await get(server, token)
      }
      // Back on Redis: the count goes on from the 3 it held before the outage.
      assertLimited(res, 'per-key', 1000, 1000 - 4)
      await server.waitForLog((l) => l.msg === 'rate limit store (Redis) available again')
    } finally {
      await proxy.close()
    }
  })
})

test('Redis is available for the rate-limit suites', { skip: !process.env.CI && noRedis }, () => {
  assert.equal(noRedis, undefined, noRedis)
})
