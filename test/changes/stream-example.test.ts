// The OpenAPI document's example of the change stream (text/event-stream on GET
// /v1/inventory/changes/stream) held against a real one: the two changes its events show are made
// through the API, and what the stream sends, up to a heartbeat after them, must be the example
// byte for byte but for what no two runs share (seqs, the ids a database numbers, times).
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { startApp, type TestApp } from '../support/app.js'
import { BACKENDS, createKey, parseExact, seed, type TestDatabase } from '../support/helpers.js'
import { openStream, type SseClient, until } from './sse.js'

/** A ledger row as the stream's data carries it (petId exact). */
interface Row {
  petId: bigint
  previousQuantity: number
  quantity: number
  reason: string
  note: string | null
  batchId: string | null
  requestId: string
}

/**
 * The stream's text with what must differ between runs written alike: each seq (an event's `id` and
 * its data's `seq`, and the `id` the stream starts after) as its distance from that start, orderId and
 * keyId as `…`, and the digits of a time as `n`, so the form of each still counts.
 */
function normalise(text: string): string {
  const start = /^retry: \d+\nid: (\d+)\n\n/.exec(text)?.[1]
  assert.ok(start !== undefined, `a stream starts with its preamble: ${JSON.stringify(text.slice(0, 40))}`)
  const fromStart = (seq: string) => `start+${BigInt(seq) - BigInt(start)}`
  return text
    .replace(/^id: (\d+)$/gm, (_, seq: string) => `id: ${fromStart(seq)}`)
    .replace(/"seq":(\d+)/g, (_, seq: string) => `"seq":${fromStart(seq)}`)
    .replace(/"(orderId|keyId)":\d+/g, '"$1":…')
    .replace(/"batchId":"[0-9a-f-]{36}"/g, '"batchId":"…"')
    .replace(/"at":"([^"]*)"/g, (_, at: string) => `"at":"${at.replace(/\d/g, 'n')}"`)
}

/**
 * The blocks received up to the first comment after the second event, as sent. A heartbeat comes on a
 * timer of its own, so one may fall before or between the events: those are left out.
 */
function upToHeartbeat(client: SseClient): string | undefined {
  const blocks = client.raw.split('\n\n').slice(0, -1)
  const events = blocks.flatMap((block, at) => (block.startsWith('id: ') && block.includes('\nevent: ') ? [at] : []))
  const second = events[1]
  if (second === undefined) return undefined
  const beat = blocks.findIndex((block, at) => at > second && block.startsWith(':'))
  if (beat < 0) return undefined
  return [blocks[0], ...events.slice(0, 2).map((at) => blocks[at]), blocks[beat]].map((block) => `${block}\n\n`).join('')
}

for (const backend of BACKENDS) {
  describe(`the change stream's example in the OpenAPI document (${backend.name})`, () => {
    let database: TestDatabase
    let app: TestApp
    let baseUrl: string
    let token: string
    let example: string
    let rows: Row[]
    let client: SseClient | undefined

    before(async () => {
      database = await backend.create()
      token = await createKey(database.url, 'stream-example')
      app = await startApp(database.url, { STREAM_HEARTBEAT_MS: '100' })
      await app.app.listen({ port: 0, host: '127.0.0.1' })
      baseUrl = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
      const doc = parseExact(await (await fetch(`${baseUrl}/v1/openapi.json`)).text()) as any
      example = doc.paths['/inventory/changes/stream'].get.responses['200'].content['text/event-stream'].example
      assert.equal(typeof example, 'string', 'the stream has an example')
      rows = [...example.matchAll(/^data: (.*)$/gm)].map((m) => parseExact(m[1]!) as Row)
      assert.equal(rows.length, 2, 'the example shows two events')
      // The pet as it stood before the example's first change.
      await seed(database.url, [{ petId: rows[0]!.petId, quantity: rows[0]!.previousQuantity, status: 'available' }])
    })
    after(async () => {
      await client?.close()
      await app?.close()
      await database?.drop()
    })

    async function send(method: string, path: string, body: string, requestId: string): Promise<void> {
      const res = await fetch(`${baseUrl}/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body,
      })
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.text()}`)
    }

    test('When the changes its events show are made, then the stream sends the example exactly, but for seqs, ids and times', async () => {
      const [arrival, order] = rows as [Row, Row]
      client = await openStream(baseUrl, { token })
      assert.equal(client.status, 200)
      await until(() => client!.blocks.length > 0, 5000, 'the preamble')
      // The arrival is a batch's (it carries a batchId): a batch of that one change.
      assert.equal(typeof arrival.batchId, 'string')
      await send(
        'POST',
        '/inventory/batch',
        `{"changes":[{"petId":${arrival.petId},"delta":${arrival.quantity - arrival.previousQuantity},` +
          `"reason":${JSON.stringify(arrival.reason)},"note":${JSON.stringify(arrival.note)}}]}`,
        arrival.requestId,
      )
      assert.equal(order.reason, 'order')
      await send('POST', '/store/orders', `{"petId":${order.petId},"quantity":${order.previousQuantity - order.quantity}}`, order.requestId)
      const received = await until(() => upToHeartbeat(client!), 5000, 'two events and a heartbeat after them')
      assert.equal(normalise(received), normalise(example))
    })
  })
}
