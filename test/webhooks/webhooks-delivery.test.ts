// Webhook delivery in this process (the app of `petstore serve`, built in-process), to receivers of
// the test's own on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE=true, except where the point is the refusal):
// each ledger row after a subscription's start is one signed Standard Webhooks message, in seq order;
// failures are retried with the same webhook-id, then the subscription is disabled and enable resumes
// it from its cursor; one failing receiver holds back no other; redirects are failures, a huge answer
// is not read to its end; nothing is lost across a restart or a database outage.
import assert from 'node:assert/strict'
import type http from 'node:http'
import { after, before, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { startApp, type TestApp, useAppSuite } from '../support/app.js'
import { BACKENDS, createKey, runCliInProcess, seed } from '../support/helpers.js'
import { holdSqliteRecoveryLock } from '../support/sqlite-locks.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { assertInOrder, assertMessage, Receiver, rowTexts, waitFor } from './receiver.js'

const DELIVERY_ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_LEASE_MS: '1000',
}
const WAIT_MS = 10_000
const PETS = [1, 2, 3].map((petId) => ({ petId, quantity: 10, status: 'available' }))

/** The service as a test drives it: subscriptions, PATCHes, the feed and each subscription's state. */
function client(server: () => TestApp, token: () => string) {
  const request = (method: string, path: string, body?: unknown) =>
    server().request(method, path, { token: token(), ...(body === undefined ? {} : { body }) })
  let quantity = 100
  const api = {
    request,
    async subscribe(url: string): Promise<{ id: number; secret: string }> {
      const res = await request('POST', '/v1/webhooks', { url })
      assert.equal(res.status, 201, res.text)
      return { id: res.body.id, secret: res.body.secret }
    },
    async state(id: number) {
      const res = await request('GET', `/v1/webhooks/${id}`)
      assert.equal(res.status, 200, res.text)
      return res.body
    },
    /** Writes one ledger row per PATCH; resolves with their seqs. */
    async patch(count: number, petId = 1): Promise<number[]> {
      const seqs: number[] = []
      for (let i = 0; i < count; i++) {
        const res = await request('PATCH', `/v1/inventory/${petId}`, { quantity: quantity++ })
        assert.equal(res.status, 200, res.text)
        seqs.push(await api.end())
      }
      return seqs
    },
    async end(): Promise<number> {
      const all = await request('GET', '/v1/inventory/changes?after=0&limit=1000')
      assert.equal(all.status, 200, all.text)
      return (all.body as { seq: number }[]).at(-1)?.seq ?? 0
    },
    async feed(after: number): Promise<Map<number, string>> {
      const res = await request('GET', `/v1/inventory/changes?after=${after}&limit=1000`)
      assert.equal(res.status, 200, res.text)
      return rowTexts(res.text)
    },
    async remove(id: number) {
      assert.equal((await request('DELETE', `/v1/webhooks/${id}`)).status, 204)
    },
  }
  return api
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

for (const backend of BACKENDS) {
  describe(`webhook delivery (${backend.name})`, () => {
    const suite = useAppSuite(backend, { env: DELIVERY_ENV, seed: PETS })
    const api = client(
      () => suite.server,
      () => suite.token,
    )
    const receivers: Receiver[] = []
    const receiver = async () => {
      const r = await Receiver.start()
      receivers.push(r)
      return r
    }
    after(async () => {
      for (const r of receivers) await r.close()
    })

    test('When rows are written after a subscription is made, then each is one signed message, in seq order, from the ledger’s end on', async () => {
      const r1 = await receiver()
      const r2 = await receiver()
      await api.patch(2) // before the subscriptions: never sent
      const start = await api.end()
      const one = await api.subscribe(r1.url)
      const two = await api.subscribe(r2.url)
      const seqs = await api.patch(5, 2)
      assert.deepEqual(seqs, range(start + 1, start + 5))
      await waitFor(
        () => r1.requests.length >= 5 && r2.requests.length >= 5,
        WAIT_MS,
        () => `5 messages each (${r1.requests.length}, ${r2.requests.length})`,
      )
      const rows = await api.feed(start)
      for (const [r, sub] of [
        [r1, one],
        [r2, two],
      ] as const) {
        assert.deepEqual(r.seqs(), seqs, 'each row once, in seq order, none from before the subscription')
        for (const message of r.requests) assertMessage(message, sub.secret, rows.get(Number(JSON.parse(message.body).data.seq))!)
        assert.equal(new Set(r.messages().map((m) => m.id)).size, 5, 'a distinct webhook-id per row')
        assert.equal(r.requests[0]!.headers['user-agent'], 'petstore-webhooks/1')
      }
      const ids1 = new Set(r1.messages().map((m) => m.id))
      assert.ok(
        r2.messages().every((m) => !ids1.has(m.id)),
        'ids are distinct across subscriptions too',
      )
      const m = r2.requests[0]!
      assert.throws(
        () =>
          new Webhook(one.secret).verify(m.body, {
            'webhook-id': String(m.headers['webhook-id']),
            'webhook-timestamp': String(m.headers['webhook-timestamp']),
            'webhook-signature': String(m.headers['webhook-signature']),
          }),
        'signed under its own subscription’s secret only',
      )
      const state = await waitFor(
        async () => {
          const s = await api.state(one.id)
          return s.deliveredThrough === start + 5 && s
        },
        WAIT_MS,
        'the cursor at the last row',
      )
      assert.equal(state.state, 'active')
      assert.match(state.lastSuccessAt, /^\d{4}-\d\d-\d\dT/)
      assert.deepEqual([state.failedAttempts, state.lastError, state.failingSince, state.nextAttemptAt], [0, null, null, null])
      await api.remove(one.id)
      await api.remove(two.id)
    })

    test('When an attempt fails, then it is retried along the schedule with the same webhook-id, shown as failing, and later rows follow', async () => {
      const r = await receiver()
      r.answer = (_, n) => (n <= 2 ? 503 : 200)
      const sub = await api.subscribe(r.url)
      const seen = new Set<string>()
      const polling = (async () => {
        for (const deadline = Date.now() + WAIT_MS; Date.now() < deadline && r.requests.length < 5; ) {
          const s = await api.state(sub.id)
          if (s.state === 'failing') {
            assert.equal(s.lastError, 'HTTP 503')
            assert.ok(s.failedAttempts === 1 || s.failedAttempts === 2, `failedAttempts ${s.failedAttempts}`)
            assert.match(s.nextAttemptAt, /^\d{4}-/)
            assert.match(s.failingSince, /^\d{4}-/)
            seen.add(`failing ${s.failedAttempts}`)
          }
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      })()
      const seqs = await api.patch(3)
      await waitFor(
        () => r.requests.length >= 5,
        WAIT_MS,
        () => `5 requests (${r.requests.length})`,
      )
      await polling
      const messages = r.messages()
      assert.deepEqual(
        messages.map((m) => m.seq),
        [seqs[0], seqs[0], seqs[0], seqs[1], seqs[2]],
      )
      assert.equal(new Set(messages.slice(0, 3).map((m) => m.id)).size, 1, 'the same webhook-id on every attempt')
      const rows = await api.feed(seqs[0]! - 1)
      for (const message of r.requests) assertMessage(message, sub.secret, rows.get(Number(JSON.parse(message.body).data.seq))!)
      for (const i of [1, 2]) {
        const gap = r.requests[i]!.at - r.requests[i - 1]!.at
        assert.ok(gap >= 170, `retry ${i} waited its 200 ms (±10 %): ${gap} ms`)
      }
      assert.ok(seen.size > 0, 'seen as failing while retried')
      const state = await waitFor(
        async () => {
          const s = await api.state(sub.id)
          return s.deliveredThrough === seqs[2] && s
        },
        WAIT_MS,
        'delivered',
      )
      assert.deepEqual(
        [state.state, state.failedAttempts, state.lastError, state.failingSince, state.nextAttemptAt],
        ['active', 0, null, null, null],
      )
      await api.remove(sub.id)
    })

    test('When every attempt fails, then the subscription is disabled (shown so) and enabling it over HTTP resumes from its cursor', async () => {
      const r = await receiver()
      r.answer = () => 500
      const start = await api.end()
      const sub = await api.subscribe(r.url)
      const seqs = await api.patch(2)
      const disabled = await waitFor(
        async () => {
          const s = await api.state(sub.id)
          return s.state === 'disabled' && s
        },
        WAIT_MS,
        'disabled',
      )
      assert.equal(disabled.deliveredThrough, start, 'the cursor stays')
      assert.equal(disabled.failedAttempts, 3)
      assert.equal(disabled.nextAttemptAt, null)
      assert.equal(disabled.disabledReason, '3 attempts failed; the last: HTTP 500')
      assert.equal(disabled.lastError, disabled.disabledReason)
      assert.match(disabled.disabledAt, /^\d{4}-\d\d-\d\dT/)
      assert.match(disabled.failingSince, /^\d{4}-\d\d-\d\dT/)
      const listed = (await api.request('GET', '/v1/webhooks')).body.find((w: { id: number }) => w.id === sub.id)
      assert.deepEqual(listed, disabled)
      const cli = await suite.server.cli(['webhooks', 'list'])
      assert.match(cli.stdout, new RegExp(`^${sub.id}\\tdisabled\\t${start}\\t`, 'm'))
      assert.equal(r.requests.length, 3, 'the first attempt and the two retries')
      assert.equal(new Set(r.messages().map((m) => m.id)).size, 1)
      assert.deepEqual(new Set(r.seqs()), new Set([seqs[0]]))
      // Disabled: nothing more is sent, rows written meanwhile included.
      seqs.push(...(await api.patch(1)))
      await new Promise((resolve) => setTimeout(resolve, 600))
      assert.equal(r.requests.length, 3, 'nothing sent while disabled')

      r.answer = () => 204
      const enabled = await api.request('POST', `/v1/webhooks/${sub.id}/enable`)
      assert.equal(enabled.status, 200, enabled.text)
      assert.deepEqual(
        [
          enabled.body.state,
          enabled.body.disabledAt,
          enabled.body.disabledReason,
          enabled.body.failedAttempts,
          enabled.body.deliveredThrough,
        ],
        ['active', null, null, 0, start],
      )
      await waitFor(
        () => r.requests.length >= 6,
        WAIT_MS,
        () => `resumed (${r.requests.length})`,
      )
      assert.deepEqual(r.seqs().slice(3), seqs, 'from the cursor, the failed message first, in order')
      assert.equal(r.messages()[3]!.id, r.messages()[0]!.id, 'the failed message keeps its webhook-id')
      await waitFor(async () => (await api.state(sub.id)).deliveredThrough === seqs[2], WAIT_MS, 'delivered through the last')
      assert.equal((await api.state(sub.id)).state, 'active')
      await api.remove(sub.id)
    })

    test('When a receiver times out or refuses connections, then that is the reason it is disabled; the CLI enables it again', async () => {
      const hanging = await receiver()
      hanging.answer = () => () => {} // never answers
      const gone = await receiver()
      const goneUrl = gone.url
      await gone.close()
      receivers.splice(receivers.indexOf(gone), 1)
      const start = await api.end()
      const slow = await api.subscribe(hanging.url)
      const refused = await api.subscribe(goneUrl)
      const seqs = await api.patch(2)
      const disabledReason = async (id: number) =>
        waitFor(
          async () => {
            const s = await api.state(id)
            return s.state === 'disabled' && s.disabledReason
          },
          WAIT_MS,
          `subscription ${id} disabled`,
        )
      assert.equal(await disabledReason(slow.id), '3 attempts failed; the last: no answer within 500 ms')
      assert.equal(await disabledReason(refused.id), '3 attempts failed; the last: connection refused')
      assert.equal(hanging.requests.length, 3)
      assert.equal(new Set(hanging.messages().map((m) => m.id)).size, 1)

      hanging.answer = () => 200
      const enabled = await suite.server.cli(['webhooks', 'enable', String(slow.id)])
      assert.equal(enabled.code, 0, enabled.stderr)
      assert.match(enabled.stderr, new RegExp(`delivery resumes after seq ${start}`))
      // The CLI's process tells no server: this one takes the subscription up at its next lease renewal.
      await waitFor(async () => (await api.state(slow.id)).deliveredThrough === seqs[1], WAIT_MS, 'resumed after the CLI enabled it')
      assert.deepEqual(r(hanging).slice(3), seqs)
      assert.equal((await api.state(refused.id)).state, 'disabled', 'the other stays disabled')
      await api.remove(slow.id)
      await api.remove(refused.id)
    })

    test('When one receiver fails and another is healthy, then the healthy one gets every row while the other is still retried', async () => {
      const failing = await receiver()
      failing.answer = () => () => {} // hangs: each attempt takes the whole timeout
      const healthy = await receiver()
      const bad = await api.subscribe(failing.url)
      const good = await api.subscribe(healthy.url)
      const seqs = await api.patch(10, 3)
      await waitFor(
        () => healthy.requests.length >= 10,
        WAIT_MS,
        () => `the healthy receiver's 10 (${healthy.requests.length})`,
      )
      const failingState = await api.state(bad.id)
      assert.notEqual(failingState.state, 'disabled', 'the healthy one did not wait for the failing one’s schedule to run out')
      assert.equal(failingState.deliveredThrough, seqs[0]! - 1)
      assert.deepEqual(healthy.seqs(), seqs)
      assert.ok(
        failing.requests.every((m) => Number(JSON.parse(m.body).data.seq) === seqs[0]),
        'the failing one is held at its first row',
      )
      await api.remove(bad.id)
      await api.remove(good.id)
    })

    test('When a receiver answers 302, then the redirect is not followed: a failed attempt', async () => {
      const target = await receiver()
      const redirecting = await receiver()
      redirecting.answer = () => (_req: http.IncomingMessage, res: http.ServerResponse) =>
        res.writeHead(302, { location: target.url }).end()
      const sub = await api.subscribe(redirecting.url)
      await api.patch(1)
      const s = await waitFor(
        async () => {
          const state = await api.state(sub.id)
          return state.lastError !== null && state
        },
        WAIT_MS,
        'a failed attempt',
      )
      assert.equal(s.lastError, 'HTTP 302 (redirects are not followed)')
      assert.equal(s.state, 'failing')
      await waitFor(async () => (await api.state(sub.id)).state === 'disabled', WAIT_MS, 'disabled')
      assert.equal(target.requests.length, 0, 'the redirect’s target got nothing')
      assert.equal(redirecting.requests.length, 3)
      await api.remove(sub.id)
    })

    test('When a receiver answers 200 with an endless body, then the message counts as delivered and the next ones follow', async () => {
      const r = await receiver()
      let written = 0
      r.answer = () => (_req: http.IncomingMessage, res: http.ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' })
        const chunk = Buffer.alloc(64 * 1024, 'x')
        const pump = () => {
          // Up to 200 MB, as fast as the connection takes it, until the sender hangs up.
          while (!res.destroyed && written < 200 * 1024 * 1024) {
            written += chunk.length
            if (!res.write(chunk)) return res.once('drain', pump)
          }
          if (!res.destroyed) res.end()
        }
        res.on('close', () => res.removeAllListeners('drain'))
        pump()
      }
      const sub = await api.subscribe(r.url)
      const started = Date.now()
      const seqs = await api.patch(3)
      const s = await waitFor(
        async () => {
          const state = await api.state(sub.id)
          return state.deliveredThrough === seqs[2] && state
        },
        WAIT_MS,
        () => `delivered despite the endless answers (${r.requests.length} requests)`,
      )
      assert.deepEqual(r.seqs(), seqs, 'each once: none counted as failed')
      assert.deepEqual([s.state, s.lastError, s.failedAttempts], ['active', null, 0])
      assert.ok(written < 3 * 200 * 1024 * 1024, 'no answer was read to its end')
      assert.ok(Date.now() - started < WAIT_MS)
      await api.remove(sub.id)
    })

    test('When a subscription is deleted, then nothing more is sent to it, rows written right after included', async () => {
      const r = await receiver()
      const sub = await api.subscribe(r.url)
      await api.patch(1)
      await waitFor(() => r.requests.length >= 1, WAIT_MS, 'the first message')
      await api.remove(sub.id)
      await api.patch(3)
      // Long enough for the loop to have sent, and for a lease renewal (WEBHOOK_LEASE_MS / 3) to have passed.
      await new Promise((resolve) => setTimeout(resolve, 600))
      assert.equal(r.requests.length, 1, `nothing after the DELETE's 204 (got seqs ${r.seqs()})`)
    })

    test('When the service restarts, then rows written while it was down are delivered, none lost or repeated', async () => {
      const r = await receiver()
      const sub = await api.subscribe(r.url)
      const first = await api.patch(3)
      await waitFor(() => r.requests.length >= 3, WAIT_MS, 'the first rows')
      await suite.server.close()
      // While no service runs: an import writes a row per entry.
      await seed(suite.database.url, [
        { petId: 1, quantity: 1, status: 'available' },
        { petId: 2, quantity: 2, status: 'available' },
      ])
      suite.server = await startApp(suite.database.url, DELIVERY_ENV)
      const end = await api.end()
      assert.equal(end, first[2]! + 2)
      await waitFor(
        () => r.requests.length >= 5,
        WAIT_MS,
        () => `after the restart (${r.requests.length})`,
      )
      const more = await api.patch(1)
      await waitFor(() => r.requests.length >= 6, WAIT_MS, 'the row written after the restart')
      assertInOrder(r.seqs(), [...first, end - 1, end, ...more], 0, 'across a graceful restart')
      const rows = await api.feed(first[0]! - 1)
      for (const message of r.requests) assertMessage(message, sub.secret, rows.get(Number(JSON.parse(message.body).data.seq))!)
      await api.remove(sub.id)
    })
  })

  describe(`webhook delivery through a database outage (${backend.name})`, () => {
    let proxy: TcpProxy | undefined
    let app: TestApp | undefined
    let database: Awaited<ReturnType<typeof backend.create>>
    let r: Receiver
    let token: string
    before(async () => {
      database = await backend.create()
      token = await createKey(database.url, 'outage')
      await seed(database.url, PETS)
      let url = database.url
      if (backend.name === 'postgres') {
        const direct = new URL(database.url)
        proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
        const proxied = new URL(database.url)
        proxied.port = String(proxy.port)
        url = proxied.toString()
      }
      app = await startApp(url, { ...DELIVERY_ENV, DB_TIMEOUT_MS: '500', WEBHOOK_RETRY_SCHEDULE: '200ms,1s,1s,1s' })
      r = await Receiver.start()
    })
    after(async () => {
      await app?.close()
      await proxy?.close()
      await r?.close()
      await database?.drop()
    })

    test('When the database goes away mid-delivery and comes back, then every row is delivered in order, none repeated beyond the unrecorded ones', async () => {
      const api = client(
        () => app!,
        () => token,
      )
      // Each answer takes a while, so the outage falls while messages are being sent.
      r.answer = () => (_req: http.IncomingMessage, res: http.ServerResponse) => {
        setTimeout(() => res.writeHead(200).end(), 40)
      }
      const start = await api.end()
      const sub = await api.subscribe(r.url)
      await seed(
        database.url,
        range(1, 20).map((petId) => ({ petId, quantity: petId, status: 'available' })),
      )
      const expected = range(start + 1, start + 20)
      await waitFor(() => r.requests.length >= 4, WAIT_MS, 'the first messages')
      let outage: { end: () => Promise<void> }
      if (proxy) {
        await proxy.cut()
        // Rows committed during the outage (directly, not through the cut-off service).
        await seed(database.url, [{ petId: 1, quantity: 77, status: 'available' }])
        expected.push(start + 21)
        outage = { end: () => proxy!.restore() }
      } else {
        const lock = await holdSqliteRecoveryLock(database.url.slice('sqlite:'.length))
        outage = { end: () => lock.release() }
      }
      const during = r.requests.length
      let sentMeanwhile: number
      try {
        // Longer than the lease and several database timeouts.
        await new Promise((resolve) => setTimeout(resolve, 1500))
        sentMeanwhile = r.requests.length - during
      } finally {
        // Ended whatever happens: a lock left held would keep the app's close, and this file, waiting.
        await outage.end()
      }
      // At most what was in flight, and what the unrecorded answers allow (a send waits for the cursor's
      // write once an answer has waited 100 ms for it: here 40 ms answers, so three) went out meanwhile.
      assert.ok(sentMeanwhile <= 4, `at most what was in flight went out while the database was away (${sentMeanwhile})`)
      await waitFor(
        () => new Set(r.seqs()).size >= expected.length,
        20_000,
        () => `every row after the outage (${new Set(r.seqs()).size}/${expected.length})`,
      )
      const more = await api.patch(1)
      expected.push(...more)
      await waitFor(() => r.seqs().includes(more[0]!), WAIT_MS, 'a row written after the outage')
      assertInOrder(r.seqs(), expected, 2, 'through the outage')
      const s = await waitFor(
        async () => {
          const state = await api.state(sub.id)
          return state.deliveredThrough === more[0] && state
        },
        WAIT_MS,
        'the cursor at the end',
      )
      assert.equal(s.state, 'active')
    })
  })

  describe(`webhook delivery refuses non-public addresses at connection time (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      env: { WEBHOOK_RETRY_SCHEDULE: '200ms,200ms', WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_LEASE_MS: '1000' },
      seed: PETS,
    })
    let r: Receiver
    before(async () => {
      r = await Receiver.start()
    })
    after(() => r.close())

    test('When a subscription to localhost or 127.0.0.1 was made where private addresses were allowed, then this instance refuses to deliver, naming the address', async () => {
      const api = client(
        () => suite.server,
        () => suite.token,
      )
      const permissive = { ...suite.server.env, WEBHOOK_ALLOW_PRIVATE: 'true' }
      const ids: Record<string, number> = {}
      for (const url of [`http://localhost:${r.port}/hook`, `http://127.0.0.1:${r.port}/hook`, `http://[::1]:${r.port}/hook`]) {
        const added = await runCliInProcess(['webhooks', 'add', url], permissive)
        assert.equal(added.code, 0, added.stderr)
        ids[url] = Number(/Created webhook (\d+)/.exec(added.stderr)![1])
      }
      const [seq] = await api.patch(1)
      const failed = async (id: number) =>
        waitFor(
          async () => {
            const s = await api.state(id)
            return s.lastError !== null && s
          },
          WAIT_MS,
          `a failed attempt of ${id}`,
        )
      const byName = await failed(ids[`http://localhost:${r.port}/hook`]!)
      assert.match(byName.lastError, /^localhost resolves to (127\.0\.0\.1|::1), which is not public$/)
      assert.equal(byName.deliveredThrough, seq! - 1)
      const literal = await failed(ids[`http://127.0.0.1:${r.port}/hook`]!)
      assert.match(literal.lastError, /^(3 attempts failed; the last: )?address 127\.0\.0\.1 is not public$/)
      const v6 = await failed(ids[`http://[::1]:${r.port}/hook`]!)
      assert.match(v6.lastError, /^(3 attempts failed; the last: )?address ::1 is not public$/)
      for (const id of Object.values(ids)) {
        await waitFor(async () => (await api.state(id)).state === 'disabled', WAIT_MS, `${id} disabled`)
      }
      const disabled = await api.state(ids[`http://localhost:${r.port}/hook`]!)
      assert.match(disabled.disabledReason, /^3 attempts failed; the last: localhost resolves to (127\.0\.0\.1|::1), which is not public$/)
      assert.equal(r.requests.length, 0, 'nothing reached the receiver')
    })
  })
}

/** The seqs a receiver got. */
const r = (receiver: Receiver) => receiver.seqs()
