// petstore-client's change stream against real `petstore serve` processes: across a restart of the
// service on the same address, with writes before, during (through the storage, as the CLI writes)
// and after it, the iterator yields every row after its start exactly once, in seq order, exact.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { createClient, type InventoryChange } from 'petstore-client'
import { BACKENDS, createKey, seed, useResources } from '../support/helpers.js'

const MAX = 9223372036854775807n

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Follows the stream in the background, recording rows and connection changes. */
function follow(api: ReturnType<typeof createClient>, options: { after?: bigint } = {}) {
  const controller = new AbortController()
  const rows: InventoryChange[] = []
  const states: string[] = []
  const done = (async () => {
    for await (const row of api.changes.stream({ ...options, signal: controller.signal, onConnection: (state) => states.push(state) }))
      rows.push(row)
  })()
  const stop = () => {
    controller.abort()
    return done
  }
  return { rows, states, stop }
}

for (const backend of BACKENDS) {
  describe(`petstore-client change stream (${backend.name})`, () => {
    const resources = useResources()

    test('When the service restarts in the middle of the writes, then the stream resumes where it was and yields every row once, in order, with exact ids', async () => {
      const db = await resources.database(backend)
      const token = await createKey(db.url, 'stream')
      await seed(db.url, [
        { petId: 1, quantity: 1, status: 'available' },
        { petId: MAX, quantity: 1, status: 'available' },
      ])
      const port = String(await freePort())
      const first = await resources.server(db.url, { PORT: port })
      const api = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, token })
      const start = (await api.changes.page({ after: 0n, pageSize: 1000 })).items.at(-1)!.seq
      const stream = follow(api, { after: start })
      try {
        await until(() => stream.states.includes('connected'), 5000, 'the stream connects')

        for (let i = 0; i < 20; i++) await api.inventory.set(i % 2 === 0 ? MAX : 1n, { quantity: 100 + i })
        await until(() => stream.rows.length === 20, 5000, 'the first 20 rows arrive')
        await first.stop()
        // Written while no service runs, through the storage as `petstore import inventory` writes.
        await seed(db.url, [
          { petId: MAX, quantity: 7, status: 'available' },
          { petId: 1, quantity: 8, status: 'sold' },
        ])
        await resources.server(db.url, { PORT: port })
        for (let i = 0; i < 10; i++) await api.inventory.set(MAX, { quantity: 200 + i })
        await until(() => stream.rows.length >= 32, 15_000, 'the rows after the restart arrive')
      } finally {
        await stream.stop()
      }

      const ledger: InventoryChange[] = []
      for await (const row of api.changes.list({ after: start })) ledger.push(row)
      assert.equal(ledger.length, 32)
      assert.deepEqual(stream.rows, ledger)
      assert.ok(stream.rows.some((r) => r.petId === MAX))
      assert.deepEqual(stream.states.slice(0, 2), ['connected', 'disconnected'])
      assert.equal(stream.states.at(-1), 'connected')
    })

    test('When the stream starts at the end and drops before any change, then it resumes from where it started, not from a later end', async () => {
      const db = await resources.database(backend)
      const token = await createKey(db.url, 'stream')
      await seed(db.url, [{ petId: 5, quantity: 1, status: 'available' }])
      const port = String(await freePort())
      const first = await resources.server(db.url, { PORT: port })
      const api = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, token })
      const stream = follow(api)
      try {
        await until(() => stream.states.includes('connected'), 5000, 'the stream connects')
        await first.stop()
        await seed(db.url, [{ petId: 5, quantity: 2, status: 'available' }])
        await resources.server(db.url, { PORT: port })
        await api.inventory.set(5n, { quantity: 3 })
        // The client's backoff doubles per failed attempt while the service restarts, up to 30 s with
        // ±25 % jitter: on a loaded machine (a slow restart) its next attempt may be that far off.
        await until(() => stream.rows.length >= 2, 45_000, 'both rows arrive')
      } finally {
        await stream.stop()
      }
      assert.deepEqual(
        stream.rows.map((r) => [r.petId, r.quantity, r.reason]),
        [
          [5n, 2, 'import'],
          [5n, 3, 'adjustment'],
        ],
      )
    })
  })
}
