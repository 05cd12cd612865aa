// Webhook delivery by real `petstore serve` processes: killed with SIGKILL mid-delivery, a fresh one
// resumes from the durable cursor (nothing lost; a repeat only of the message in flight); and with two
// instances on PostgreSQL, one delivers each subscription at a time and the other takes over within
// seconds when the deliverer is killed.
import assert from 'node:assert/strict'
import type http from 'node:http'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { assertInvariants, BACKENDS, createKey, seed, type TestServer, useResources } from '../support/helpers.js'
import { assertInOrder, assertMessage, Receiver, rowTexts, waitFor } from './receiver.js'

const ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_LEASE_MS: '1000',
}
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const items = (from: number, to: number, quantity = 1) =>
  range(from, to).map((petId) => ({ petId, quantity: quantity + petId, status: 'available' }))

async function ledgerEnd(server: TestServer, token: string): Promise<number> {
  const res = await server.request('GET', '/v1/inventory/changes?after=0&limit=1000', { token })
  assert.equal(res.status, 200, res.text)
  return (res.body as { seq: number }[]).at(-1)?.seq ?? 0
}

async function subscribe(server: TestServer, token: string, url: string): Promise<{ id: number; secret: string }> {
  const res = await server.request('POST', '/v1/webhooks', { token, body: { url } })
  assert.equal(res.status, 201, res.text)
  return { id: res.body.id, secret: res.body.secret }
}

/** Answers each message after `ms`, so that a kill falls while one is in flight. */
const slowly = (ms: number) => () => (_req: http.IncomingMessage, res: http.ServerResponse) => {
  setTimeout(() => res.writeHead(200).end(), ms)
}

for (const backend of BACKENDS) {
  describe(`webhook delivery across kill -9 (${backend.name})`, () => {
    const resources = useResources()
    const receivers: Receiver[] = []
    after(async () => {
      for (const r of receivers) await r.close()
    })

    test('When the delivering process is killed with SIGKILL mid-delivery, then the next one resumes from the cursor: nothing lost, at most the in-flight message repeated', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'crash')
      await seed(database.url, items(1, 3))
      const r = await Receiver.start()
      receivers.push(r)
      r.answer = slowly(30)
      const first = await resources.server(database.url, ENV)
      const start = await ledgerEnd(first, token)
      const sub = await subscribe(first, token, r.url)
      await seed(database.url, items(1, 30)) // one row per entry: start+1 … start+30
      await waitFor(
        () => r.requests.length >= 8,
        10_000,
        () => `the first messages (${r.requests.length})`,
      )
      await first.stop('SIGKILL')
      const atKill = r.requests.length
      await assertInvariants(database.url, 'after the deliverer was killed')
      assert.ok(atKill < 30, `killed mid-delivery (${atKill} sent)`)
      // While no process runs: more rows.
      await seed(database.url, items(31, 35))
      const expected = range(start + 1, start + 35)
      const killedAt = Date.now()
      const second = await resources.server(database.url, ENV)
      await waitFor(
        () => new Set(r.seqs()).size >= expected.length,
        15_000,
        () => `every row after the restart (${new Set(r.seqs()).size}/${expected.length})`,
      )
      assertInOrder(r.seqs(), expected, 1, 'across kill -9')
      // Each answer is recorded before the next message goes, so the only message that may come twice
      // is the last one the receiver had before the kill (in flight: answered or not, not recorded).
      const repeated = r.seqs().filter((seq, i, all) => all.indexOf(seq) !== i)
      const inFlight = r.seqs()[atKill - 1]
      assert.ok(
        repeated.length <= 1 && repeated.every((seq) => seq === inFlight),
        `only the message in flight at the kill (${inFlight}) may come twice, once (repeated: ${repeated}; ${atKill} received before)`,
      )
      // Each repeat carries the same webhook-id, so a receiver can drop it.
      const ids = new Map<number, string>()
      for (const m of r.messages()) {
        if (ids.has(m.seq)) assert.equal(m.id, ids.get(m.seq), 'a repeat has the same webhook-id')
        ids.set(m.seq, m.id)
      }
      const feed = await second.request('GET', `/v1/inventory/changes?after=${start}&limit=1000`, { token })
      const rows = rowTexts(feed.text)
      for (const message of r.requests) assertMessage(message, sub.secret, rows.get(Number(JSON.parse(message.body).data.seq))!)
      const state = await waitFor(
        async () => {
          const s = (await second.request('GET', `/v1/webhooks/${sub.id}`, { token })).body
          return s.deliveredThrough === start + 35 && s
        },
        10_000,
        'the cursor at the end',
      )
      assert.equal(state.state, 'active')
      assert.ok(Date.now() - killedAt < 30_000)
      await second.stop()
    })
  })
}

const postgres = BACKENDS.find((b) => b.name === 'postgres')

describe('two instances on PostgreSQL deliver each subscription once', { skip: !postgres && 'PostgreSQL is not reachable' }, () => {
  const resources = useResources()
  const receivers: Receiver[] = []
  after(async () => {
    for (const r of receivers) await r.close()
  })

  test('When both run, then one delivers at a time (no repeats); when it is killed with SIGKILL, the other takes over within seconds', async () => {
    const database = await resources.database(postgres!)
    const token = await createKey(database.url, 'two')
    await seed(database.url, items(1, 4))
    const rA = await Receiver.start()
    const rB = await Receiver.start()
    receivers.push(rA, rB)
    const owners = async (): Promise<string[]> => {
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      try {
        return (await client.query('SELECT DISTINCT lease_owner FROM webhooks')).rows.map((row) => String(row.lease_owner))
      } finally {
        await client.end()
      }
    }

    // The first instance takes both subscriptions as they are made; the second starts after.
    const a = await resources.server(database.url, ENV)
    const start = await ledgerEnd(a, token)
    const subA = await subscribe(a, token, rA.url)
    const subB = await subscribe(a, token, rB.url)
    assert.equal((await a.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 50 } })).status, 200)
    await waitFor(() => rA.requests.length >= 1 && rB.requests.length >= 1, 10_000, 'the first row')
    const b = await resources.server(database.url, ENV)
    const [deliverer] = await owners()
    assert.equal((await owners()).length, 1, 'one instance holds both')

    // Steady state: writes through both instances, for several lease periods.
    let quantity = 100
    for (let i = 0; i < 30; i++) {
      const via = i % 2 ? a : b
      const res = await via.request('PATCH', `/v1/inventory/${(i % 4) + 1}`, { token, body: { quantity: quantity++ } })
      assert.equal(res.status, 200, res.text)
      await new Promise((resolve) => setTimeout(resolve, 60))
    }
    const steady = range(start + 1, start + 31)
    await waitFor(
      () => rA.requests.length >= steady.length && rB.requests.length >= steady.length,
      10_000,
      () => `every row to both (${rA.requests.length}, ${rB.requests.length})`,
    )
    // A little longer, for a repeat to show up if one were coming.
    await new Promise((resolve) => setTimeout(resolve, 700))
    assert.deepEqual(rA.seqs(), steady, 'receiver A: each row exactly once, in order')
    assert.deepEqual(rB.seqs(), steady, 'receiver B: each row exactly once, in order')
    assert.deepEqual(await owners(), [deliverer], 'the lease never moved while its holder lived')

    // The deliverer (the first instance) dies; rows keep coming through the second.
    await a.stop('SIGKILL')
    const killedAt = Date.now()
    const later = await (async () => {
      const seqs: number[] = []
      for (let i = 0; i < 5; i++) {
        assert.equal((await b.request('PATCH', '/v1/inventory/2', { token, body: { quantity: quantity++ } })).status, 200)
        seqs.push(start + 32 + i)
      }
      return seqs
    })()
    await waitFor(() => rA.seqs().includes(later[0]!) && rB.seqs().includes(later[0]!), 10_000, 'the survivor delivering')
    const tookOver = Date.now() - killedAt
    assert.ok(tookOver < 5000, `taken over within seconds (${tookOver} ms; lease 1000 ms)`)
    await waitFor(() => rA.seqs().includes(later[4]!) && rB.seqs().includes(later[4]!), 10_000, 'every row after the kill')
    const [survivor] = await owners()
    assert.notEqual(survivor, deliverer, 'the lease moved to the survivor')
    assertInOrder(rA.seqs(), [...steady, ...later], 1, 'receiver A')
    assertInOrder(rB.seqs(), [...steady, ...later], 1, 'receiver B')
    await assertInvariants(database.url, 'after one of two instances was killed (the other serving)')
    for (const [r, sub] of [
      [rA, subA],
      [rB, subB],
    ] as const) {
      const feed = await b.request('GET', `/v1/inventory/changes?after=${start}&limit=1000`, { token })
      const rows = rowTexts(feed.text)
      for (const message of r.requests) assertMessage(message, sub.secret, rows.get(Number(JSON.parse(message.body).data.seq))!)
    }
    await b.stop()
  })
})
