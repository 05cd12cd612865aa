// Issue 38: webhook subscriptions that publish into the brokers a store runs, against the real NATS
// (JetStream) and RabbitMQ servers of this machine, on both storage backends: the exact bodies and
// headers, every row once in seq order, a subscription waiting (failing, nothing skipped) while no
// stream covers its subjects, credentials never shown, and a broker host the operator did not list
// refused with 400 and nothing stored.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, runCli, useSuite } from '../support/helpers.js'
import { BROKER_ENV, TestExchange, TestStream } from './brokers.js'
import { rowTexts, waitFor } from './receiver.js'

const ENV = {
  ...BROKER_ENV,
  WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms',
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_LEASE_MS: '1000',
}
const WAIT_MS = 15_000
const PETS = [1, 2, 3, 9007199254740993n].map((petId) => ({ petId, quantity: 10, status: 'available' }))
const MSG_ID = /^msg_[0-9a-f]{16}_([1-9]\d*)$/

for (const backend of BACKENDS) {
  describe(`webhook subscriptions into brokers (${backend.name})`, () => {
    const suite = useAppSuite(backend, { env: ENV, seed: PETS })
    const closing: { close(): Promise<void> }[] = []
    after(async () => {
      for (const c of closing) await c.close()
    })
    const request = (method: string, path: string, body?: unknown) =>
      suite.server.request(method, path, { token: suite.token, ...(body === undefined ? {} : { body }) })
    let quantity = 100
    const patch = async (petId: bigint | number) => {
      const res = await request('PATCH', `/v1/inventory/${petId}`, { quantity: quantity++ })
      assert.equal(res.status, 200, res.text)
    }
    const end = async () =>
      BigInt(((await request('GET', '/v1/inventory/changes?after=0&limit=1000')).body as { seq: bigint }[]).at(-1)!.seq)
    const feed = async (after: bigint) => rowTexts((await request('GET', `/v1/inventory/changes?after=${after}&limit=1000`)).text)
    const subscribe = async (url: string) => {
      const res = await request('POST', '/v1/webhooks', { url })
      assert.equal(res.status, 201, res.text)
      return res.body as { id: number; url: string }
    }
    const body = (rowText: string) => `{"type":"inventory.changed","timestamp":${JSON.stringify(JSON.parse(rowText).at)},"data":${rowText}}`

    test('When rows are written after a nats:// subscription is made, then JetStream holds each once, in seq order, on <prefix>.<petId>, with the webhook body, Nats-Msg-Id and Content-Type', async () => {
      const stream = await TestStream.open()
      closing.push(stream)
      await patch(1) // before the subscription: never published
      const start = await end()
      await subscribe(stream.url())
      for (const pet of [1, 2, 3, 9007199254740993n, 2, 1]) await patch(pet)
      await waitFor(async () => (await stream.count()) >= 6, WAIT_MS, '6 messages in the stream')
      const rows = await feed(start)
      const messages = await stream.messages()
      assert.equal(messages.length, 6)
      const tags = new Set<string>()
      for (const [i, m] of messages.entries()) {
        const [, seq] = MSG_ID.exec(m.msgId ?? '') ?? assert.fail(`Nats-Msg-Id ${m.msgId}`)
        assert.equal(BigInt(seq!), start + BigInt(i) + 1n, 'in seq order, each once')
        tags.add(m.msgId!.split('_')[1]!)
        const row = rows.get(Number(seq))!
        assert.equal(m.body, body(row), 'the webhook body, exact')
        assert.equal(m.subject, `${stream.prefix}.${JSON.parse(row.replace(/"petId":(\d+)/, '"petId":"$1"')).petId}`)
        assert.equal(m.contentType, 'application/json')
      }
      assert.equal(tags.size, 1, "one subscription's tag")
      assert.equal(messages[3]!.subject, `${stream.prefix}.9007199254740993`, 'an int64 petId exact in the subject')
    })

    test('When no stream covers the subject, then the subscription is failing and says so; once one does, every row follows from the first, none skipped', async () => {
      const stream = await TestStream.open(false)
      closing.push(stream)
      const start = await end()
      const sub = await subscribe(stream.url())
      for (const pet of [1, 2, 3]) await patch(pet)
      const failing = await waitFor(
        async () => {
          const s = (await request('GET', `/v1/webhooks/${sub.id}`)).body
          return s.state === 'failing' && s
        },
        WAIT_MS,
        'a failing state',
      )
      assert.match(failing.lastError, new RegExp(`no JetStream stream covers the subject ${stream.prefix}\\.1\\b`))
      assert.equal(BigInt(failing.deliveredThrough), start, 'nothing skipped')
      await stream.create()
      await waitFor(async () => (await stream.count()) >= 3, WAIT_MS, '3 messages in the stream')
      const ids = (await stream.messages()).map((m) => BigInt(MSG_ID.exec(m.msgId!)![1]!))
      assert.deepEqual(ids, [start + 1n, start + 2n, start + 3n])
      // The stream acknowledges a message before the delivery records it: the state follows.
      const after = await waitFor(
        async () => {
          const s = (await request('GET', `/v1/webhooks/${sub.id}`)).body
          return s.state === 'active' && BigInt(s.deliveredThrough) === start + 3n && s
        },
        WAIT_MS,
        () => 'active again, delivered through the third row',
      )
      assert.equal(after.lastError ?? null, null, 'the error cleared')
    })

    test('When rows are written after an amqp:// subscription is made, then the queue gets each once, in seq order, persistent, with the webhook body, message_id and content type', async () => {
      const exchange = await TestExchange.open()
      closing.push(exchange)
      const start = await end()
      await subscribe(exchange.url())
      for (const pet of [3, 2, 1, 9007199254740993n]) await patch(pet)
      await waitFor(
        () => exchange.received.length >= 4,
        WAIT_MS,
        () => `4 messages (${exchange.received.length})`,
      )
      const rows = await feed(start)
      assert.equal(exchange.received.length, 4)
      for (const [i, m] of exchange.received.entries()) {
        const [, seq] = MSG_ID.exec(m.messageId ?? '') ?? assert.fail(`message_id ${m.messageId}`)
        assert.equal(BigInt(seq!), start + BigInt(i) + 1n)
        assert.equal(m.body, body(rows.get(Number(seq))!))
        assert.equal(m.contentType, 'application/json')
        assert.equal(m.deliveryMode, 2, 'persistent')
        assert.equal(m.routingKey, 'stock.changed')
      }
    })

    test('When a broker URL carries a password, then no listing, state or error shows it; a wrong one makes the subscription failing, still masked', async () => {
      const exchange = await TestExchange.open()
      closing.push(exchange)
      const good = await subscribe(exchange.url('guest'))
      assert.equal(good.url, exchange.url('***'), 'the answer masks it')
      const bad = await subscribe(exchange.url('not-the-Secret-pw'))
      await patch(1)
      const failing = await waitFor(
        async () => {
          const s = (await request('GET', `/v1/webhooks/${bad.id}`)).body
          return s.state === 'failing' && s
        },
        WAIT_MS,
        'the wrong password failing',
      )
      assert.ok(failing.lastError.length > 0)
      const list = await request('GET', '/v1/webhooks')
      for (const text of [list.text, JSON.stringify(failing)]) {
        assert.doesNotMatch(text, /not-the-Secret-pw/)
        assert.doesNotMatch(text, /guest:guest/)
      }
      assert.ok(list.text.includes(exchange.url('***')))
    })

    test('When a broker host is not in BROKER_ALLOWED_HOSTS, then 400 destination_refused and nothing is stored', async () => {
      // Their delivery state moves by itself: what an admin made is compared.
      const made = async () => ((await request('GET', '/v1/webhooks')).body as { id: number; url: string }[]).map((w) => `${w.id} ${w.url}`)
      const before = await made()
      for (const url of [
        'nats://127.0.0.1:4223/petstore.stock',
        'amqp://guest:guest@localhost:5672/%2F?exchange=x',
        'nats://127.0.0.1/petstore',
      ]) {
        const res = await request('POST', '/v1/webhooks', { url })
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.code, 'destination_refused')
        assert.doesNotMatch(res.text, /guest:guest/)
      }
      assert.deepEqual(await made(), before)
    })
  })
}

describe('broker credentials in a real process: the CLI, the logs (sqlite)', () => {
  const suite = useSuite(BACKENDS[0]!, { env: { ...ENV, LOG_LEVEL: 'info' }, seed: PETS })

  test('When `petstore webhooks add` is given an amqp URL with a wrong password, then neither the CLI, the listing nor the log lines of the failing deliveries show it', async () => {
    const exchange = await TestExchange.open()
    try {
      const env = { DATABASE_URL: suite.database.url, ...BROKER_ENV }
      const url = exchange.url('Wrong-Secret-pw')
      const added = await runCli(['webhooks', 'add', url], env)
      assert.equal(added.code, 0, added.stderr)
      assert.match(added.stderr, new RegExp(`Created webhook \\d+ to ${exchange.url('***').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`))
      const res = await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity: 5 } })
      assert.equal(res.status, 200)
      await suite.server.waitForLog((l) => l.msg === 'webhook delivery failed; it will be retried', 15_000)
      const listed = await runCli(['webhooks', 'list'], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.ok(listed.stdout.includes(exchange.url('***')))
      const logs = JSON.stringify(suite.server.logs())
      assert.match(logs, /could not connect to AMQP at amqp:\/\/guest:\*\*\*@/)
      for (const text of [added.stdout, added.stderr, listed.stdout, listed.stderr, logs]) assert.doesNotMatch(text, /Wrong-Secret-pw/)
    } finally {
      await exchange.close()
    }
  })
})
