// petstore-client's verifyWebhook: on messages signed here with node:crypto exactly as Standard
// Webhooks 1.0 says, and on messages a live `petstore serve` delivers (both backends) after the client
// subscribed and wrote the rows. A message verifies to its ledger row with every int64 exact (2^63−1
// and 2^53+1, which JSON.parse would round), equal to the row changes.list reads; any tampering,
// another secret, a stale or future timestamp or a missing header rejects with
// WebhookVerificationError; and the `standardwebhooks` package agrees on every case it can judge.
import assert from 'node:assert/strict'
import { createHmac, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, mock, test } from 'node:test'
import {
  createClient,
  type InventoryChange,
  type PetstoreClient,
  verifyWebhook,
  type WebhookHeaders,
  type WebhookMessage,
  WebhookVerificationError,
} from 'petstore-client'
import { Webhook, WebhookVerificationError as StandardVerificationError } from 'standardwebhooks'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { waitFor } from '../webhooks/receiver.js'

const MAX = 9223372036854775807n // 2^63 − 1
const ABOVE_DOUBLES = 9007199254740993n // 2^53 + 1: the first integer a double cannot hold
const NOTE = 'crate 7 — ü 🐈' // multi-byte UTF-8: bytes and text must both verify
const DELIVERY_ENV = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '200ms,200ms',
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_LEASE_MS: '1000',
}
const WAIT_MS = 10_000

/** One message as a receiver got it: its headers as node:http gives them and its body's raw bytes. */
interface Delivered {
  headers: http.IncomingHttpHeaders
  body: Buffer
}

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the secret's key bytes>`, as Standard Webhooks 1.0 says. */
function sign(secret: string, id: string, timestamp: string, body: Uint8Array): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`
}

/** The three headers as plain strings. */
function plain(message: Delivered): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const h = message.headers
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.equal(typeof h[name], 'string', name)
  return {
    'webhook-id': h['webhook-id'] as string,
    'webhook-timestamp': h['webhook-timestamp'] as string,
    'webhook-signature': h['webhook-signature'] as string,
  }
}

/** verifyWebhook's verdict: true, or false when it rejected with a WebhookVerificationError (anything else fails the test). */
async function ours(secret: string, headers: Record<string, string>, body: Uint8Array | string, nowSeconds: number): Promise<boolean> {
  try {
    await verifyWebhook(secret, headers, body, { now: new Date(nowSeconds * 1000) })
    return true
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `rejected with ${error}`)
    assert.equal(error.name, 'WebhookVerificationError')
    return false
  }
}

/** The standardwebhooks package's verdict, its clock set to `nowSeconds`. */
function theirs(secret: string, headers: Record<string, string>, body: Uint8Array | string, nowSeconds: number): boolean {
  mock.timers.enable({ apis: ['Date'], now: nowSeconds * 1000 })
  try {
    new Webhook(secret).verify(typeof body === 'string' ? body : Buffer.from(body), headers)
    return true
  } catch (error) {
    assert.ok(error instanceof StandardVerificationError, `standardwebhooks threw ${error}`)
    return false
  } finally {
    mock.timers.reset()
  }
}

/**
 * Every way of changing a signed message that must make it fail, and the near misses that must not:
 * each judged by verifyWebhook and by standardwebhooks, which must both say `ok`.
 */
async function assertCases(secret: string, message: Delivered, petId: bigint) {
  const headers = plain(message)
  const id = headers['webhook-id']
  const ts = Number(headers['webhook-timestamp'])
  const good = headers['webhook-signature']
  const other = newSecret()
  // One byte of the petId's digits changed: a message about another pet.
  const digits = message.body.indexOf(`"petId":${petId}`) + '"petId":'.length
  assert.ok(digits > '"petId":'.length, 'the raw body has the petId’s exact digits')
  const changed = Buffer.from(message.body)
  changed[digits + 3] = changed[digits + 3] === 0x30 ? 0x31 : 0x30
  const without = (name: keyof typeof headers) => Object.fromEntries(Object.entries(headers).filter(([n]) => n !== name))
  const cases: {
    what: string
    ok: boolean
    headers?: Record<string, string>
    body?: Uint8Array | string
    secret?: string
    now?: number
  }[] = [
    { what: 'the message as received', ok: true },
    { what: 'its body as text', ok: true, body: message.body.toString('utf8') },
    { what: 'a body with one byte changed', ok: false, body: changed },
    { what: 'a body with one byte changed, as text', ok: false, body: changed.toString('utf8') },
    { what: 'a body with one byte more', ok: false, body: Buffer.concat([message.body, Buffer.from(' ')]) },
    { what: 'verified under another secret', ok: false, secret: other },
    {
      what: 'signed with another secret',
      ok: false,
      headers: { ...headers, 'webhook-signature': sign(other, id, String(ts), message.body) },
    },
    { what: 'another webhook-id', ok: false, headers: { ...headers, 'webhook-id': `${id}0` } },
    { what: 'a webhook-timestamp moved by a second (a replay)', ok: false, headers: { ...headers, 'webhook-timestamp': String(ts + 1) } },
    { what: 'a timestamp 300 s old', ok: true, now: ts + 300 },
    { what: 'a timestamp 301 s old', ok: false, now: ts + 301 },
    { what: 'a timestamp 300 s ahead', ok: true, now: ts - 300 },
    { what: 'a timestamp 301 s ahead', ok: false, now: ts - 301 },
    {
      what: 'a timestamp a day old, signed with the secret',
      ok: false,
      headers: {
        ...headers,
        'webhook-timestamp': String(ts - 86_400),
        'webhook-signature': sign(secret, id, String(ts - 86_400), message.body),
      },
    },
    { what: 'a timestamp that is not a number', ok: false, headers: { ...headers, 'webhook-timestamp': 'soon' } },
    { what: 'a bad signature then the good one', ok: true, headers: { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}= ${good}` } },
    { what: 'the good one then a bad one', ok: true, headers: { ...headers, 'webhook-signature': `${good} v1,${'A'.repeat(43)}=` } },
    {
      what: 'two bad signatures',
      ok: false,
      headers: { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}= ${sign(other, id, String(ts), message.body)}` },
    },
    {
      what: 'the good signature under another version',
      ok: false,
      headers: { ...headers, 'webhook-signature': good.replace(/^v1,/, 'v2,') },
    },
    { what: 'no webhook-id', ok: false, headers: without('webhook-id') },
    { what: 'no webhook-timestamp', ok: false, headers: without('webhook-timestamp') },
    { what: 'no webhook-signature', ok: false, headers: without('webhook-signature') },
    { what: 'an empty webhook-signature', ok: false, headers: { ...headers, 'webhook-signature': '' } },
    { what: 'an empty webhook-id', ok: false, headers: { ...headers, 'webhook-id': '' } },
    { what: 'no headers at all', ok: false, headers: {} },
  ]
  for (const c of cases) {
    const args = [c.secret ?? secret, c.headers ?? headers, c.body ?? message.body, c.now ?? ts] as const
    assert.equal(await ours(...args), c.ok, `verifyWebhook: ${c.what}`)
    assert.equal(theirs(...args), c.ok, `standardwebhooks: ${c.what}`)
  }
  // verifyWebhook's own options, which standardwebhooks does not have.
  await verifyWebhook(secret, headers, message.body, { now: new Date((ts + 3600) * 1000), toleranceSeconds: 3600 })
  await assert.rejects(
    verifyWebhook(secret, headers, message.body, { now: new Date((ts + 11) * 1000), toleranceSeconds: 10 }),
    WebhookVerificationError,
  )
  await assert.rejects(verifyWebhook(secret, headers, message.body, { now: new Date(Number.NaN) }), WebhookVerificationError)
  // A secret that is not one is the receiver's misconfiguration, not a forged message: a TypeError.
  await assert.rejects(verifyWebhook('whsec_', headers, message.body, { now: new Date(ts * 1000) }), (error: unknown) => {
    assert.ok(error instanceof TypeError && !(error instanceof WebhookVerificationError), String(error))
    return true
  })
}

/**
 * The message verified every way it can be handed over (bytes or text; a fetch Headers, node:http's
 * record, a record with arrays or other-case names): the same result each time, which is returned.
 */
async function assertForms(secret: string, message: Delivered): Promise<WebhookMessage> {
  const headers = plain(message)
  const now = { now: new Date(Number(headers['webhook-timestamp']) * 1000) }
  const first = await verifyWebhook(secret, message.headers, message.body, now)
  const bad = `v1,${'A'.repeat(43)}=`
  const forms: [string, WebhookHeaders, Uint8Array | string][] = [
    ['node:http headers, text', message.headers, message.body.toString('utf8')],
    ['a plain Uint8Array (not a Buffer)', message.headers, new Uint8Array(message.body)],
    ['a Uint8Array that is a view into a larger buffer', message.headers, Buffer.concat([Buffer.from('xx'), message.body]).subarray(2)],
    ['fetch Headers, bytes', new Headers(headers), message.body],
    ['fetch Headers, text', new Headers(headers), message.body.toString('utf8')],
    ['fetch Headers with the signature header twice', new Headers([...Object.entries(headers), ['webhook-signature', bad]]), message.body],
    [
      'a record with arrays, the good signature second',
      { ...message.headers, 'webhook-id': [headers['webhook-id']], 'webhook-signature': [bad, headers['webhook-signature']] },
      message.body,
    ],
    [
      'a record with capitalised names',
      {
        'Webhook-Id': headers['webhook-id'],
        'Webhook-Timestamp': headers['webhook-timestamp'],
        'Webhook-Signature': headers['webhook-signature'],
      },
      message.body,
    ],
  ]
  for (const [what, h, body] of forms) assert.deepEqual(await verifyWebhook(secret, h, body, now), first, what)
  await assert.rejects(
    verifyWebhook(secret, { ...message.headers, 'webhook-id': [headers['webhook-id'], `${headers['webhook-id']}0`] }, message.body, now),
    WebhookVerificationError,
    'two different webhook-ids are not a message',
  )
  assert.equal(first.id, headers['webhook-id'])
  assert.equal(first.timestamp.getTime(), Number(headers['webhook-timestamp']) * 1000)
  assert.equal(first.type, 'inventory.changed')
  return first
}

describe('verifyWebhook on a message signed here as Standard Webhooks says', () => {
  const secret = newSecret()
  const row: InventoryChange = {
    seq: ABOVE_DOUBLES,
    petId: MAX,
    previousQuantity: 7,
    quantity: 5,
    reason: 'order',
    note: null,
    orderId: ABOVE_DOUBLES + 2n,
    batchId: null,
    keyId: MAX - 1n,
    requestId: 'req-1',
    at: '2026-03-01T12:00:00.000Z',
  }
  const body = Buffer.from(
    `{"type":"inventory.changed","timestamp":"${row.at}","data":{"seq":${row.seq},"petId":${row.petId},"previousQuantity":7,` +
      `"quantity":5,"reason":"order","note":null,"orderId":${row.orderId},"batchId":null,"keyId":${row.keyId},"requestId":"req-1","at":"${row.at}"}}`,
  )
  const id = 'msg_0123456789abcdef_9007199254740993'
  const timestamp = String(Math.floor(Date.now() / 1000))
  const message: Delivered = {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': sign(secret, id, timestamp, body),
      'content-type': 'application/json',
    },
    body,
  }

  test('When it is verified, then it resolves with its id, its time and the row with every int64 an exact bigint', async () => {
    const verified = await verifyWebhook(secret, message.headers, body)
    assert.deepEqual(verified, { id, timestamp: new Date(Number(timestamp) * 1000), type: 'inventory.changed', data: row })
    assert.equal(verified.data.petId, 9223372036854775807n)
    assert.equal(verified.data.orderId, 9007199254740995n)
    assert.notEqual(BigInt(JSON.parse(body.toString()).data.petId), MAX, 'JSON.parse alone would round it')
  })

  test('When it is handed over as bytes or text, with fetch Headers or a node:http record, then each form verifies the same', async () => {
    assert.deepEqual((await assertForms(secret, message)).data, row)
  })

  test('When it is tampered with, signed otherwise, stale, early or without a header, then it is rejected, as standardwebhooks rejects it', async () => {
    await assertCases(secret, message, row.petId)
  })

  test('When the runtime cannot read int64s exactly (no JSON.rawJSON, no source text), then it refuses rather than round them', async () => {
    const json = JSON as { rawJSON?: unknown }
    const rawJSON = json.rawJSON
    json.rawJSON = undefined
    try {
      await assert.rejects(verifyWebhook(secret, message.headers, body), (error) => {
        assert.ok(!(error instanceof WebhookVerificationError), 'not the message’s fault')
        assert.match(String(error), /JSON\.parse source text access/)
        return true
      })
    } finally {
      json.rawJSON = rawJSON
    }
    assert.equal((await verifyWebhook(secret, message.headers, body)).data.petId, MAX)
  })

  test('When the body is valid under its signature but not an inventory.changed message, then it is rejected', async () => {
    for (const text of ['not json', '{"type":"other.event","data":{}}', '{"type":"inventory.changed","data":null}', '[]']) {
      const bytes = Buffer.from(text)
      const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': sign(secret, id, timestamp, bytes) }
      await assert.rejects(verifyWebhook(secret, headers, bytes), (error) => {
        assert.ok(error instanceof WebhookVerificationError, text)
        assert.match(error.message, /^The body is not (JSON|an inventory\.changed message)$/, 'its signature verified; its body did not')
        return true
      })
    }
  })
})

/** A receiver on 127.0.0.1 that keeps each request's headers and raw body bytes and answers 200. */
async function rawReceiver() {
  const requests: Delivered[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    requests,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

for (const backend of BACKENDS) {
  describe(`petstore-client webhooks, delivered by a live server (${backend.name})`, () => {
    const suite = useSuite(backend, {
      env: DELIVERY_ENV,
      seed: [
        { petId: MAX, quantity: 10, status: 'available' },
        { petId: ABOVE_DOUBLES, quantity: 10, status: 'available' },
      ],
    })
    let receiver: Awaited<ReturnType<typeof rawReceiver>> | undefined
    let api: PetstoreClient
    let secret: string
    /** The ledger rows written after the subscription, as changes.list reads them. */
    let rows: InventoryChange[]
    let orderId: bigint

    before(async () => {
      receiver = await rawReceiver()
      api = createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token, timeoutMs: 10_000 })
      const imported: InventoryChange[] = []
      for await (const change of api.changes.list()) imported.push(change)
      const start = imported.at(-1)?.seq ?? 0n
      const subscription = await api.webhooks.create({ url: receiver.url, description: 'client test' })
      assert.equal(typeof subscription.id, 'bigint')
      assert.match(subscription.secret, /^whsec_/)
      secret = subscription.secret
      for (const petId of [MAX, ABOVE_DOUBLES]) {
        const { item, etag } = await api.inventory.get(petId)
        assert.equal(item.petId, petId)
        const set = await api.inventory.set(petId, { quantity: 5, reason: 'arrival', note: NOTE }, { ifMatch: etag })
        assert.equal(set.item.petId, petId)
      }
      orderId = (await api.orders.place({ petId: MAX, quantity: 2 })).id
      rows = []
      for await (const change of api.changes.list({ after: start })) rows.push(change)
      assert.equal(rows.length, 3, 'two sets and an order')
      const last = rows.at(-1)!.seq
      const r = receiver
      await waitFor(
        () => r.requests.length >= 3,
        WAIT_MS,
        () => `three messages (${r.requests.length})`,
      )
      // Delivered through the last row: nothing more is coming.
      await waitFor(async () => (await api.webhooks.get(subscription.id)).deliveredThrough === last, WAIT_MS, 'the cursor at the last row')
      assert.equal(receiver.requests.length, 3, 'one message a row, none twice')
    })
    after(async () => {
      await receiver?.close()
    })

    test('When the client wrote rows for pets 2^63−1 and 2^53+1, then each message verifies to exactly the row changes.list reads, as standardwebhooks agrees', async () => {
      const current = await api.keys.current()
      assert.deepEqual(
        rows.map((r) => [r.petId, r.reason, r.orderId, r.keyId]),
        [
          [MAX, 'arrival', null, current.id],
          [ABOVE_DOUBLES, 'arrival', null, current.id],
          [MAX, 'order', orderId, current.id],
        ],
      )
      for (const [n, message] of receiver!.requests.entries()) {
        const verified = await verifyWebhook(secret, message.headers, message.body)
        assert.deepEqual(verified.data, rows[n], `message ${n} is its row, in seq order`)
        assert.equal(verified.data.petId, [MAX, ABOVE_DOUBLES, MAX][n])
        assert.equal(typeof verified.data.seq, 'bigint')
        assert.equal(verified.data.keyId, current.id)
        assert.equal(verified.data.note, n < 2 ? NOTE : null)
        assert.equal(verified.id, message.headers['webhook-id'])
        assert.ok(message.body.includes(`"petId":${verified.data.petId},`), 'the wire has the exact digits')
        assert.notEqual(BigInt(JSON.parse(message.body.toString()).data.petId), verified.data.petId, 'JSON.parse alone would round it')
        const standard = new Webhook(secret).verify(message.body, plain(message)) as { type: string; data: { note: string | null } }
        assert.equal(standard.type, 'inventory.changed')
        assert.equal(standard.data.note, verified.data.note)
      }
      assert.equal(rows[2]!.orderId, orderId)
    })

    test('When a delivered message is handed over as bytes or text, with fetch Headers or a node:http record, then each form verifies the same', async () => {
      for (const message of receiver!.requests) await assertForms(secret, message)
    })

    test('When a delivered message is tampered with, signed otherwise, stale, early or without a header, then it is rejected, as standardwebhooks rejects it', async () => {
      await assertCases(secret, receiver!.requests[0]!, MAX)
      await assertCases(secret, receiver!.requests[1]!, ABOVE_DOUBLES)
    })
  })
}
