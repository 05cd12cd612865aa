// Issue 47: holds give their units back by themselves, driven by the database. Real `petstore serve`
// processes on each backend: a hold falling due while its server runs is back within 2 s of its
// expiresAt; holds that fell due while the only server was killed (kill -9) are back within 2 s of the
// next start; on PostgreSQL two instances started at once race for 300 due holds and expire each once.
// The holds are placed through the storage code in this process, so that their expiry can lie in the
// past or a second ahead (the API takes 10 s at least).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { CLI_ACTOR } from '../../src/domain.js'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage } from '../../src/storage/ports.js'
import { assertInvariants, BACKENDS, createKey, seed, type TestServer, useResources } from '../support/helpers.js'
import { quantityOf, readAllChanges } from '../support/ledger-client.js'

const at = (ms: number) => new Date(Date.now() + ms).toISOString()

async function withStorage<T>(url: string, run: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: url }))
  try {
    return await run(storage)
  } finally {
    await storage.close()
  }
}

/** Places `count` holds of `quantity` units of `petId` each, expiring at `expiresAt`; their ids. */
async function placeHolds(url: string, petId: bigint, quantity: number, count: number, expiresAt: string): Promise<bigint[]> {
  return withStorage(url, async (storage) => {
    const ids: bigint[] = []
    for (let i = 0; i < count; i++) {
      const r = await storage.writeStock({ kind: 'hold', lines: [{ petId, quantity }], expiresAt, reference: `t${i}`, actor: CLI_ACTOR })
      assert.ok(
        typeof r === 'object' && r.outcome === 'held',
        JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
      )
      ids.push(r.reservation.id)
    }
    return ids
  })
}

/** Polls until `done` holds (every 50 ms, at most `ms`); resolves with when it first did. */
async function until(done: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await done()) return Date.now()
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

for (const backend of BACKENDS) {
  describe(`holds expire by themselves (${backend.name})`, () => {
    const resources = useResources()

    test('When a hold falls due while its server runs, then its units are back within 2 s of expiresAt, with one expiry row', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'expiry')
      await seed(database.url, [{ petId: 1, quantity: 10, status: 'available' }])
      const server = await resources.server(database.url)
      const expiresAt = at(1500)
      const [id] = await placeHolds(database.url, 1n, 4, 1, expiresAt)
      assert.equal(await quantityOf(server, token, 1), 6)
      const back = await until(async () => (await quantityOf(server, token, 1)) === 10, 6000, 'the units back')
      const rows = (await readAllChanges(server, token)).filter((r) => r.reservationId === Number(id))
      assert.deepEqual(
        rows.map((r) => [r.reason, r.previousQuantity, r.quantity, r.keyId, r.requestId]),
        [
          ['reservation', 10, 6, null, null],
          ['expiry', 6, 10, null, null],
        ],
      )
      const late = Date.parse(rows[1]!.at) - Date.parse(expiresAt)
      assert.ok(late >= 0 && late <= 2000, `expired ${late} ms after expiresAt`)
      assert.ok(back - Date.parse(expiresAt) <= 2500, `seen back ${back - Date.parse(expiresAt)} ms after expiresAt`)
      const hold = await server.request('GET', `/v1/store/reservations/${id}`, { token })
      assert.equal(hold.body.status, 'expired')
      await assertInvariants(database.url, 'after the expiry')
    })

    test('When holds fall due while the only server is down after a kill -9, then the next start gives them back within 2 s, once', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'expiry')
      await seed(database.url, [{ petId: 1, quantity: 100, status: 'available' }])
      let server: TestServer = await resources.server(database.url)
      // Due 800 ms from now: the server is killed before then, and the holds fall due while none runs.
      const ids = await placeHolds(database.url, 1n, 2, 20, at(800))
      server.child.kill('SIGKILL')
      await server.waitForExit()
      await new Promise((resolve) => setTimeout(resolve, 1200))
      // And some that were due long before the start.
      ids.push(...(await placeHolds(database.url, 1n, 1, 5, at(-60_000))))
      server = await resources.server(database.url)
      // From when it listens (a loaded machine may take seconds to start node and migrate): the first
      // pass runs when the service is ready, just before it listens.
      const listening = Number(server.logs().find((l) => /listening/i.test(String(l.msg)))!.time)
      await until(async () => (await quantityOf(server, token, 1)) === 100, 5000, 'every unit back')
      const expiries = (await readAllChanges(server, token)).filter((r) => r.reason === 'expiry')
      const last = Math.max(...expiries.map((r) => Date.parse(r.at)))
      assert.ok(last - listening <= 2000, `the last expiry ${last - listening} ms after the server listened`)
      assert.deepEqual(
        expiries.map((r) => r.reservationId).sort((a, b) => a! - b!),
        ids.map(Number).sort((a, b) => a - b),
        'one expiry row a hold',
      )
      await assertInvariants(database.url, 'after the restart')
    })

    if (backend.name === 'postgres') {
      test('When two instances start together over 300 due holds, then each hold expires exactly once', async () => {
        const database = await resources.database(backend)
        const token = await createKey(database.url, 'expiry')
        await seed(database.url, [{ petId: 1, quantity: 1000, status: 'available' }])
        const ids = await placeHolds(database.url, 1n, 3, 300, at(-1000))
        const [a, b] = await Promise.all([resources.server(database.url), resources.server(database.url)])
        await until(async () => (await quantityOf(a!, token, 1)) === 1000, 10_000, 'every unit back')
        const expiries = (await readAllChanges(b!, token)).filter((r) => r.reason === 'expiry')
        assert.equal(expiries.length, 300)
        assert.deepEqual(new Set(expiries.map((r) => r.reservationId)), new Set(ids.map(Number)))
        await assertInvariants(database.url, 'after two instances raced')
      })
    }
  })
}
