// GET /v1/inventory/changes/stream in this process, on a real socket (the app listens on
// 127.0.0.1:0; a stream never ends, so app.inject cannot read it): its bytes, where it starts, its
// filter, its errors, its heartbeats, its bound per key, resuming with Last-Event-ID in the middle
// of concurrent writes, a slow reader that falls behind and catches up, and a client that stops
// reading, cut off with the server's buffers bounded.
import assert from 'node:assert/strict'
import type { AddressInfo, Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { ChangeStream, STREAM_BUFFER_BYTES } from '../../src/changes/change-stream.js'
import { TAIL_READ_ROWS } from '../../src/changes/ledger-tail.js'
import { startApp, type TestApp } from '../support/app.js'
import { BACKENDS, createKey, inventoryFile, runCli, seed, type TestDatabase } from '../support/helpers.js'
import { feedEnd, feedTexts, openPausedStream, openStream, type OpenOptions, type SseClient, seqOf, until } from './sse.js'

const HEARTBEAT_MS = 200
const MAX_PER_KEY = 3
const PETS = [1, 2, 3, 4, 5, 6, 7, 8]

// Every ChangeStream this process makes, with how often each started to follow the tail: a stream
// that follows more than once fell behind (its buffer full) and caught up from the database.
const made: ChangeStream[] = []
const follows = new WeakMap<ChangeStream, number>()
const proto = ChangeStream.prototype as unknown as { start(): Promise<void>; follow(): boolean }
const start = proto.start
proto.start = function (this: ChangeStream) {
  made.push(this)
  return start.call(this)
}
const follow = proto.follow
proto.follow = function (this: ChangeStream) {
  const followed = follow.call(this)
  if (followed) follows.set(this, (follows.get(this) ?? 0) + 1)
  return followed
}

/** The expected bytes of a stream without its comment lines: the preamble, then each event. */
function eventBytes(client: SseClient): string {
  const first = client.blocks[0]
  assert.ok(first?.kind === 'retry', 'the stream starts with its preamble')
  return `retry: 1000\nid: ${first.id}\n\n${client.events.map((e) => `id: ${e.id}\nevent: change\ndata: ${e.data}\n\n`).join('')}`
}

for (const backend of BACKENDS) {
  describe(`change stream (${backend.name})`, () => {
    let database: TestDatabase
    let app: TestApp
    let baseUrl: string
    let token: string
    const clients: SseClient[] = []

    before(async () => {
      database = await backend.create()
      token = await createKey(database.url, 'stream')
      await seed(
        database.url,
        PETS.map((petId) => ({ petId, quantity: 1000, status: 'available' })),
      )
      app = await startApp(database.url, { STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS), STREAM_MAX_PER_KEY: String(MAX_PER_KEY) })
      await app.app.listen({ port: 0, host: '127.0.0.1' })
      baseUrl = `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`
    })
    after(async () => {
      await Promise.all(clients.map((c) => c.close()))
      await app?.close()
      await database?.drop()
    })

    /** Opens a stream (closed after the suite, if the test has not). */
    async function stream(options: OpenOptions = {}): Promise<SseClient> {
      const client = await openStream(baseUrl, { token, ...options })
      clients.push(client)
      return client
    }

    async function patch(petId: number, quantity: number, note?: string): Promise<void> {
      const res = await fetch(`${baseUrl}/v1/inventory/${petId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(note === undefined ? { quantity } : { quantity, note }),
      })
      assert.equal(res.status, 200, await res.text())
    }

    test('When rows are committed after the connect, then the stream is text/event-stream, starts with retry: 1000 and the id it starts after, and sends each as id/event/data with the data byte for byte the row the feed writes, and nothing from before', async () => {
      const start = await feedEnd(baseUrl, token)
      assert.ok(start >= BigInt(PETS.length), 'the seeded rows are in the ledger before the connect')
      const client = await stream()
      assert.equal(client.status, 200)
      assert.equal(client.headers['content-type'], 'text/event-stream')
      assert.equal(client.headers['cache-control'], 'no-store')
      await until(() => client.blocks.length > 0, 2000, 'the preamble')
      // The preamble names where the stream starts (the end at the connect), so a reconnect before any event resumes there.
      assert.deepEqual(client.blocks[0], { kind: 'retry', ms: 1000, id: String(start) })
      assert.ok(client.raw.startsWith(`retry: 1000\nid: ${start}\n\n`), JSON.stringify(client.raw.slice(0, 40)))

      // A note that JSON must escape stays on its one data line; a petId beyond 2^53 stays exact.
      await patch(1, 7, 'line one\nline two "quoted" \\ é 🐶 </script>')
      const imported = inventoryFile([
        { petId: 2, quantity: 3, status: 'pending' },
        { petId: '9007199254740993' as unknown as number, quantity: 5, status: 'available' },
      ])
      const result = await app.cli(['import', 'inventory', imported])
      assert.equal(result.code, 0, result.stderr)
      await patch(3, 0)

      const feed = await feedTexts(baseUrl, token, start)
      assert.equal(feed.length, 4)
      await until(() => client.events.length >= feed.length, 2000, `${feed.length} events`)
      assert.deepEqual(
        client.events.map((e) => e.data),
        feed,
        'each data line is the row exactly as GET /v1/inventory/changes writes it',
      )
      assert.deepEqual(
        client.events.map((e) => BigInt(e.id)),
        feed.map(seqOf),
      )
      assert.equal(BigInt(client.events[0]!.id), start + 1n, 'the first event is the first row after the connect')
      assert.ok(client.events.some((e) => e.data.includes('"petId":9007199254740993,')))
      // Nothing else but heartbeats: the bytes are exactly the preamble and the events.
      assert.equal(client.raw.replaceAll(': heartbeat\n\n', ''), eventBytes(client))
      await client.close()
    })

    test('When a stream names where to start, then it starts after Last-Event-ID (over after), else after `after`, from the database; and petId keeps only that pet, live too', async () => {
      const key = await createKey(database.url, 'starts')
      const rows = await feedTexts(baseUrl, token, 0)
      assert.ok(rows.length >= 10)
      const third = seqOf(rows[2]!)
      const fifth = seqOf(rows[4]!)

      const byAfter = await stream({ token: key, query: `after=${third}` })
      const byHeader = await stream({ token: key, query: `after=${third}`, lastEventId: String(fifth) })
      const fromZero = await stream({ token: key, lastEventId: '0' })
      await until(
        () =>
          byAfter.events.length >= rows.length - 3 && byHeader.events.length >= rows.length - 5 && fromZero.events.length >= rows.length,
        3000,
        'the rows after each start',
      )
      assert.deepEqual(
        byAfter.events.map((e) => e.data),
        rows.slice(3),
      )
      assert.deepEqual(
        byHeader.events.map((e) => e.data),
        rows.slice(5),
        'Last-Event-ID wins over after',
      )
      assert.deepEqual(
        fromZero.events.map((e) => e.data),
        rows,
      )
      await Promise.all([byAfter.close(), byHeader.close(), fromZero.close()])

      const onePet = await stream({ query: 'after=0&petId=2' })
      const petRows = await feedTexts(baseUrl, token, 0, 2)
      await until(() => onePet.events.length >= petRows.length, 3000, "pet 2's rows")
      await patch(3, 33)
      await patch(2, 22)
      await patch(4, 44)
      await patch(2, 23)
      const expected = await feedTexts(baseUrl, token, 0, 2)
      assert.equal(expected.length, petRows.length + 2)
      await until(() => onePet.events.length >= expected.length, 2000, "pet 2's new rows")
      // One more row of another pet, then one of pet 2: nothing of the others came between.
      await patch(5, 55)
      await patch(2, 24)
      const all = await feedTexts(baseUrl, token, 0, 2)
      await until(() => onePet.events.length >= all.length, 2000, "pet 2's last row")
      assert.deepEqual(
        onePet.events.map((e) => e.data),
        all,
      )
      await onePet.close()
    })

    test('When nothing is committed, then a comment line comes about every STREAM_HEARTBEAT_MS', async () => {
      const client = await stream()
      const since = performance.now()
      await until(() => client.comments.length >= 5, 5000, 'five heartbeats')
      const took = performance.now() - since
      assert.ok(took >= 3 * HEARTBEAT_MS && took < 12 * HEARTBEAT_MS, `five heartbeats in ${Math.round(took)} ms`)
      assert.ok(
        client.comments.every((c) => c.text === ': heartbeat'),
        JSON.stringify(client.comments.map((c) => c.text)),
      )
      assert.equal(client.events.length, 0)
      await client.close()
    })

    test('When Last-Event-ID is not a seq, or past the ledger, or after is invalid, then 400 invalid_request, no place is held, and nothing changes', async () => {
      const key = await createKey(database.url, 'bad-ids')
      const end = await feedEnd(baseUrl, token)
      const bad: OpenOptions[] = [
        { lastEventId: 'x' },
        { lastEventId: '-1' },
        { lastEventId: '9223372036854775808' },
        { lastEventId: '99999999999999999999999' },
        { lastEventId: '1.5' },
        { lastEventId: String(end + 1n) },
        { lastEventId: String(end + 1n), query: 'after=0' },
        { query: `after=${end + 1n}` },
        { query: 'after=-1' },
        { query: 'after=x' },
        { query: 'after=9223372036854775808' },
        { query: 'petId=x' },
        { query: 'since=0' },
      ]
      for (const options of bad) {
        const client = await openStream(baseUrl, { token: key, ...options })
        const what = JSON.stringify(options)
        assert.equal(client.status, 400, `${what}: ${client.raw}`)
        assert.deepEqual(client.body, { code: 'invalid_request', message: client.body?.message, status: 400 }, `${what}: ${client.raw}`)
        assert.equal(typeof client.body.message, 'string')
      }
      assert.equal(await feedEnd(baseUrl, token), end, 'the ledger is unchanged')
      // Every one of the key's places is still free.
      const open = await Promise.all(Array.from({ length: MAX_PER_KEY }, () => stream({ token: key })))
      assert.deepEqual(
        open.map((c) => c.status),
        Array(MAX_PER_KEY).fill(200),
      )
      await Promise.all(open.map((c) => c.close()))
    })

    test('When a key lacks inventory:read, then 403 insufficient_scope; without a key, 401; with inventory:read alone, 200', async () => {
      const orders = await createKey(database.url, 'orders-only', ['orders:read', 'inventory:write'])
      const denied = await openStream(baseUrl, { token: orders })
      assert.equal(denied.status, 403, denied.raw)
      assert.deepEqual(denied.body, { code: 'insufficient_scope', message: denied.body?.message, status: 403 })
      const anonymous = await openStream(baseUrl)
      assert.equal(anonymous.status, 401, anonymous.raw)
      assert.equal(anonymous.body.code, 'unauthorized')
      const reader = await stream({ token: await createKey(database.url, 'reader', ['inventory:read']) })
      assert.equal(reader.status, 200)
      await reader.close()
    })

    test('When a key has STREAM_MAX_PER_KEY streams open, then one more is 429 too_many_streams (another key is not held back), and closing one frees its place', async () => {
      const key = await createKey(database.url, 'bounded')
      const open = await Promise.all(Array.from({ length: MAX_PER_KEY }, () => stream({ token: key })))
      assert.deepEqual(
        open.map((c) => c.status),
        Array(MAX_PER_KEY).fill(200),
      )
      const refused = await openStream(baseUrl, { token: key })
      assert.equal(refused.status, 429, refused.raw)
      assert.deepEqual(refused.body, { code: 'too_many_streams', message: refused.body?.message, status: 429 })
      assert.equal(typeof refused.body.message, 'string')
      const other = await stream()
      assert.equal(other.status, 200, 'the bound is per key')
      await other.close()

      await open[0]!.close()
      const again = await until(
        async () => {
          const client = await stream({ token: key })
          return client.status === 200 ? client : undefined
        },
        2000,
        'a place once a stream closed',
      )
      assert.equal(again.status, 200)
      assert.equal((await openStream(baseUrl, { token: key })).status, 429, 'the bound holds again')
      await Promise.all([again, ...open].map((c) => c.close()))
    })

    test('When a client reconnects with Last-Event-ID in the middle of a burst of concurrent writes, then it gets every row after the start exactly once, in seq order', async () => {
      const start = await feedEnd(baseUrl, token)
      const sessions: SseClient[] = [await stream()]
      let writing = true
      const writers = Promise.all(
        [0, 1, 2, 3].map(async (w) => {
          for (let i = 0; i < 60; i++) await patch(PETS[(w * 2 + i) % PETS.length]!, 100 + w * 1000 + i)
        }),
      ).finally(() => (writing = false))
      let midBurst = 0
      for (let reconnect = 0; reconnect < 4; reconnect++) {
        const current = sessions.at(-1)!
        const seen = current.events.length
        await until(() => current.events.length >= seen + 25 || !writing, 10_000, 'events while the writers write')
        if (writing) midBurst++
        await current.close()
        const lastId = [...sessions].reverse().find((s) => s.lastId !== undefined)?.lastId ?? String(start)
        sessions.push(await stream({ lastEventId: lastId }))
      }
      await writers
      assert.ok(midBurst >= 2, `${midBurst} reconnects in the middle of the burst`)
      const feed = await feedTexts(baseUrl, token, start)
      assert.equal(feed.length, 4 * 60)
      const last = sessions.at(-1)!
      const end = seqOf(feed.at(-1)!)
      await until(() => last.lastId === String(end), 5000, `the last session reaching seq ${end}`)
      const union = sessions.flatMap((s) => s.events)
      const ids = union.map((e) => BigInt(e.id))
      assert.ok(
        ids.every((id, i) => i === 0 || id > ids[i - 1]!),
        'in increasing seq order across the sessions, none repeated',
      )
      assert.deepEqual(
        union.map((e) => e.data),
        feed,
        'every row after the start, once each',
      )
      await last.close()
    })

    test('When a client reads slowly through a big burst, then it falls behind, catches up from the database, follows again, and gets every row in order', async (t) => {
      const start = await feedEnd(baseUrl, token)
      // About 20 MB of events: more than the kernel's socket buffers hold, so the stream must fall behind.
      const rows = 80_000
      const client = await stream({ readDelayMs: 3 })
      const changeStream = made.at(-1)!
      // This test is about falling behind and catching up, not the cut-off: on two busy cores the
      // reader's process can be off the CPU for longer than two 200 ms beats, so its stream gets ten times that.
      const beat = ChangeStream.prototype.heartbeat
      changeStream.heartbeat = (stalledMs: number) => beat.call(changeStream, stalledMs * 10)
      await until(() => client.blocks.length > 0, 2000, 'the preamble')
      const file = inventoryFile(Array.from({ length: rows }, (_, i) => ({ petId: 100_000 + i, quantity: i, status: 'available' })))
      const imported = await runCli(['import', 'inventory', file], { DATABASE_URL: database.url })
      assert.equal(imported.code, 0, imported.stderr)
      await patch(1, 4242)
      await until(() => client.events.length >= rows + 1 || client.ended, 40_000, `${rows + 1} events`)
      assert.equal(client.ended, false, 'the slow reader was not cut off')
      t.diagnostic(`it followed the tail ${follows.get(changeStream)} times`)
      assert.ok((follows.get(changeStream) ?? 0) >= 2, `it followed the tail ${follows.get(changeStream)} times: it never fell behind`)
      const ids = client.events.map((e) => BigInt(e.id))
      assert.equal(ids[0], start + 1n)
      assert.ok(
        ids.every((id, i) => i === 0 || id === ids[i - 1]! + 1n),
        'every seq, in order, once',
      )
      assert.equal(client.events.at(-1)!.data, (await feedTexts(baseUrl, token, ids.at(-2)!)).at(0))
      // Following again: a row written now arrives at once.
      await patch(2, 4343)
      await until(() => client.events.length >= rows + 2, 2000, 'the next live row')
      await client.close()
    })

    test('When a client stops reading during a burst, then the server cuts it off within a few heartbeats, holding about STREAM_BUFFER_BYTES meanwhile', async (t) => {
      const rows = 100_000
      const sockets: Socket[] = []
      const onConnection = (socket: Socket) => sockets.push(socket)
      app.app.server.on('connection', onConnection)
      const before = made.length
      const paused = await openPausedStream(baseUrl, token)
      app.app.server.off('connection', onConnection)
      assert.match(paused.head, /^HTTP\/1\.1 200 OK\r\n/)
      assert.equal(made.length, before + 1)
      const changeStream = made.at(-1)!
      const serverSocket = sockets.find((s) => s.remotePort === paused.socket.localPort)!
      assert.ok(serverSocket)

      let maxBuffered = 0
      let maxSocketBuffered = 0
      let backedUpAt: number | undefined
      let closedAt: number | undefined
      serverSocket.once('close', () => (closedAt = performance.now()))
      const sampler = setInterval(() => {
        maxBuffered = Math.max(maxBuffered, changeStream.readableLength)
        maxSocketBuffered = Math.max(maxSocketBuffered, serverSocket.writableLength)
        if (backedUpAt === undefined && changeStream.readableLength > 0) backedUpAt = performance.now()
      }, 5)
      try {
        const file = inventoryFile(Array.from({ length: rows }, (_, i) => ({ petId: 1_000_000 + i, quantity: i, status: 'sold' })))
        const importing = runCli(['import', 'inventory', file], { DATABASE_URL: database.url })
        await until(() => closedAt !== undefined, 30_000, 'the server closing the connection')
        const imported = await importing
        assert.equal(imported.code, 0, imported.stderr)
      } finally {
        clearInterval(sampler)
      }
      assert.ok(backedUpAt !== undefined, 'the stream backed up')
      const cutAfter = closedAt! - backedUpAt
      t.diagnostic(
        `cut off after ${Math.round(cutAfter)} ms; held at most ${maxBuffered} B in the stream, ${maxSocketBuffered} B in the socket`,
      )
      assert.ok(cutAfter < 10 * HEARTBEAT_MS, `cut off ${Math.round(cutAfter)} ms after its buffer started to wait`)
      // Its buffer and one batch of the tail (~125 KB) at most; the burst was ~25 MB.
      const bound = STREAM_BUFFER_BYTES + TAIL_READ_ROWS * 300
      assert.ok(maxBuffered <= bound, `the stream held ${maxBuffered} bytes (bound ${bound})`)
      assert.ok(maxSocketBuffered <= bound, `the socket held ${maxSocketBuffered} bytes (bound ${bound})`)
      assert.ok(changeStream.destroyed)

      // The client, reading at last, finds what the kernel held, then the end.
      let received = 0
      paused.socket.on('data', (d: Buffer) => (received += d.length))
      paused.socket.resume()
      await until(() => paused.closedAt() !== undefined, 5000, 'the end of the connection')
      t.diagnostic(`the client received ${received} B`)
      assert.ok(received < (rows * 250) / 2, `the client received ${received} bytes of a ${rows * 250}-byte burst`)
    })
  })
}
