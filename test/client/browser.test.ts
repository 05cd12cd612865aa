// petstore-client in a real browser (Debian's Chromium): loaded as the ES modules `npm run build`
// writes to client/dist, from a page whose origin also forwards /v1 to a live service (as the
// console will be served), it reads int64s exactly, writes with If-Match, follows the stream with
// fetch, and verifies a webhook with Web Crypto.
import assert from 'node:assert/strict'
import { createHmac, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { sqliteDatabase, useSuite } from '../support/helpers.js'

const CLIENT_DIST = fileURLToPath(new URL('../../../client/dist/', import.meta.url))
const MAX = 9223372036854775807n
const BIG = 2n ** 53n + 1n
const skip = browserUnavailable()

/** Serves client/dist under /client/, an empty page at /, and forwards /v1 to the service, streaming. */
async function pageServer(service: string): Promise<Server> {
  const target = new URL(service)
  const server = createServer((req, res) => {
    const path = req.url ?? '/'
    if (path.startsWith('/v1/')) {
      const upstream = request({ host: target.hostname, port: target.port, path, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => res.destroy())
      req.pipe(upstream)
      return
    }
    const module = /^\/client\/([a-z0-9/-]+\.js)$/.exec(path)?.[1]
    if (module !== undefined && !module.includes('..')) {
      try {
        return res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(CLIENT_DIST + module))
      } catch {
        return res.writeHead(404).end()
      }
    }
    if (path === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>client</title>')
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

describe('petstore-client in Chromium', { skip }, () => {
  const suite = useSuite(
    { name: 'sqlite', create: async () => sqliteDatabase() },
    {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: BIG, quantity: 7, status: 'available' },
        { petId: MAX, quantity: 9, status: 'pending' },
      ],
    },
  )
  let server: Server
  let browser: Browser
  let page: Page
  before(async () => {
    server = await pageServer(suite.server.baseUrl)
    browser = await launchBrowser()
    page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  })
  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  test('When the page lists, reads and writes with the client, then every int64 is an exact bigint and a stale ETag is a PetstoreError 412', async () => {
    const result = await page.evaluate(async (token) => {
      const { createClient, PetstoreError } = await import('/client/index.js' as string)
      const api = createClient({ baseUrl: `${location.origin}/v1`, token })
      const list = await api.inventory.list()
      const { item, etag } = await api.inventory.get(BigInt('9007199254740993'))
      const set = await api.inventory.set(item.petId, { quantity: 5, reason: 'arrival', note: 'crate 7' }, { ifMatch: etag })
      const stale = await api.inventory.set(item.petId, { quantity: 6 }, { ifMatch: etag }).catch((e: unknown) => e)
      const order = await api.orders.place({ petId: BigInt('9223372036854775807'), quantity: 2 })
      const pages: string[] = []
      for await (const entry of api.inventory.iterate({ pageSize: 1 })) pages.push(String(entry.petId))
      return {
        ids: list.map((i: { petId: bigint }) => `${typeof i.petId}:${i.petId}`),
        set: `${set.item.petId}:${set.item.quantity}`,
        stale: stale instanceof PetstoreError ? `${stale.status}:${stale.code}:${typeof stale.requestId}` : String(stale),
        order: `${typeof order.id}:${order.petId}:${order.quantity}`,
        pages,
      }
    }, suite.token)
    assert.deepEqual(result, {
      ids: ['bigint:1', `bigint:${BIG}`, `bigint:${MAX}`],
      set: `${BIG}:5`,
      stale: '412:precondition_failed:string',
      order: `bigint:${MAX}:2`,
      pages: ['1', String(BIG), String(MAX)],
    })
  })

  test('When the page follows the change stream with fetch, then a change made meanwhile arrives with its exact petId', async () => {
    const change = await page.evaluate(async (token) => {
      const { createClient } = await import('/client/index.js' as string)
      const api = createClient({ baseUrl: `${location.origin}/v1`, token })
      const controller = new AbortController()
      let connected!: () => void
      const open = new Promise<void>((resolve) => (connected = resolve))
      const first = (async () => {
        for await (const row of api.changes.stream({
          signal: controller.signal,
          onConnection: (s: string) => s === 'connected' && connected(),
        })) {
          return row
        }
      })()
      // Bounded in the page, so a row that never comes fails the test rather than hang it.
      const timeout = (what: string) =>
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} within 10 s`)), 10_000))
      try {
        await Promise.race([open, timeout('no connection')])
        await api.inventory.set(BigInt('9223372036854775807'), { quantity: 42 })
        const row = await Promise.race([first, timeout('no row')])
        return `${typeof row.seq}:${row.petId}:${row.quantity}:${row.reason}`
      } finally {
        controller.abort()
      }
    }, suite.token)
    assert.equal(change, `bigint:${MAX}:42:adjustment`)
  })

  test('When the page verifies a signed webhook with Web Crypto, then it gets the exact row, and a changed body is refused', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`
    const body = `{"type":"inventory.changed","timestamp":"2026-11-26T12:00:00.000Z","data":{"seq":9007199254740993,"petId":${MAX},"previousQuantity":1,"quantity":2,"reason":"adjustment","note":null,"orderId":null,"keyId":1,"requestId":"r","at":"2026-11-26T12:00:00.000Z"}}`
    const id = 'msg_1'
    const timestamp = String(Math.floor(Date.now() / 1000))
    const signature = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update(`${id}.${timestamp}.${body}`)
      .digest('base64')
    const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` }
    const result = await page.evaluate(
      async ({ secret, headers, body }) => {
        const { verifyWebhook, WebhookVerificationError } = await import('/client/index.js' as string)
        const message = await verifyWebhook(secret, headers, body)
        const forged = await verifyWebhook(secret, headers, body.replace('"quantity":2', '"quantity":3')).catch((e: unknown) => e)
        return {
          data: `${message.data.seq}:${message.data.petId}:${message.data.quantity}`,
          forged: forged instanceof WebhookVerificationError,
        }
      },
      { secret, headers, body },
    )
    assert.deepEqual(result, { data: `9007199254740993:${MAX}:2`, forged: true })
  })
})
