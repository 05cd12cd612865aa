// Issue 47: `petstore check` and holds. After a store's holds were placed, released, confirmed and
// expired through real processes every invariant holds, and a hold past its expiry that still holds
// its units (every instance down) is listed as due, a line of its own, exit 0. Broken by hand, a
// hold's rows against its lines (hold_stock) and a confirmed line's order (hold_orders) are reported.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { CLI_ACTOR } from '../../src/domain.js'
import { openStorage } from '../../src/storage/open-storage.js'
import { BACKENDS, createKey, runCli, seed, useResources } from '../support/helpers.js'
import { runStatements } from '../support/databases.js'

for (const backend of BACKENDS) {
  describe(`petstore check with holds (${backend.name}, real processes)`, () => {
    const resources = useResources()

    async function store() {
      const database = await resources.database(backend)
      const env = { DATABASE_URL: database.url }
      const token = await createKey(database.url, 'ops')
      await seed(
        database.url,
        [1, 2, 3].map((petId) => ({ petId, quantity: 50, status: 'available' as const })),
      )
      const server = await resources.server(database.url)
      const hold = async (lines: { petId: number; quantity: number }[]) => {
        const res = await server.request('POST', '/v1/store/reservations', { token, body: { lines } })
        assert.equal(res.status, 201, res.text)
        return res.body.id as number
      }
      const act = async (id: number, action: string) =>
        assert.equal((await server.request('POST', `/v1/store/reservations/${id}/${action}`, { token })).status, 200)
      const active = await hold([
        { petId: 1, quantity: 2 },
        { petId: 2, quantity: 3 },
      ])
      const released = await hold([{ petId: 1, quantity: 1 }])
      await act(released, 'release')
      const confirmed = await hold([
        { petId: 2, quantity: 4 },
        { petId: 3, quantity: 5 },
      ])
      await act(confirmed, 'confirm')
      await server.stop()
      // A hold that fell due while no instance ran: due, not a violation.
      const storage = await openStorage(loadConfig(env))
      const due = await storage.writeStock({
        kind: 'hold',
        lines: [{ petId: 3n, quantity: 6 }],
        expiresAt: new Date(Date.now() - 5000).toISOString(),
        reference: null,
        actor: CLI_ACTOR,
      })
      await storage.close()
      assert.ok(typeof due === 'object' && due.outcome === 'held')
      return { database, env, active, confirmed, due: due.reservation }
    }

    test('When holds were placed, released, confirmed and one fell due with every instance down, then every invariant holds and the due one is listed', async () => {
      const { env, due } = await store()
      const result = await runCli(['check'], env)
      assert.equal(result.code, 0, result.stdout + result.stderr)
      assert.equal(
        result.stdout,
        `hold_due\treservation=${due.id} expires_at=${due.expiresAt}\t6 units on 1 lines still held; the next instance to run gives them back\n`,
      )
      assert.match(
        result.stderr,
        /^Checked 3 entries, \d+ ledger rows, 2 orders, 4 holds \(1 due\), 0 webhook subscriptions and 1 API keys in \d+\.\d s: every invariant holds\.\n$/,
      )
    })

    test("When a hold's lines or a confirmed line's order are changed by hand, then hold_stock and hold_orders name the hold, exit 1", async () => {
      const { database, env, active, confirmed } = await store()
      await runStatements(database.url, [
        // The active hold now claims a unit more than its reservation row took.
        `UPDATE reservation_lines SET quantity = quantity + 1 WHERE reservation_id = ${active} AND line = 1`,
        // The confirmed hold's second line names another order.
        `UPDATE reservation_lines SET order_id = 1 WHERE reservation_id = ${confirmed} AND line = 1`,
      ])
      const result = await runCli(['check'], env)
      assert.equal(result.code, 1, result.stdout + result.stderr)
      const lines = result.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('hold_due'))
      // And both orders of the confirmed hold disagree with their rows: order 1 is named by two lines now
      // (its row counts both), order 2 by none (its row moved no units of its own).
      assert.deepEqual(
        lines.filter((l) => !l.startsWith('order_stock')),
        [
          `hold_stock\treservation=${active}\tits reservation rows took 5 units in 2 rows, not 6 in 2`,
          `hold_orders\treservation=${confirmed} line=1 order=1\tthe order is of 4 units of pet 2, the line of 5 units of pet 3`,
        ],
        result.stderr,
      )
      assert.deepEqual(
        lines.filter((l) => l.startsWith('order_stock')),
        [
          'order_stock\torder=1 pet=2\tits placement row took 9 units, not 4',
          'order_stock\torder=2 pet=3\tits placement row took 0 units, not 5',
        ],
      )
      assert.match(result.stderr, /hold_stock: 1 \(/)
      assert.match(result.stderr, /hold_orders: 1 \(/)
    })
  })
}
