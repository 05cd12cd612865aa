import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import pg from 'pg'
import { BACKENDS, useSuite, type Response, type TestServer } from '../support/helpers.js'
import {
  assertChangeShape,
  getChanges,
  importInventory,
  nextLink,
  placeOrder,
  random,
  readAllChanges,
  setOrderStatus,
  type InventoryChange,
} from '../support/ledger-client.js'

const WRITE_MS = 3000
const MAX_WRITES = 4000
/** Writes made even when WRITE_MS passes first (a busy machine): enough rows for the readers to race. */
const MIN_WRITES = 200
/** ...but never past this: a service that stopped answering fails the row count below. */
const MAX_WRITE_MS = 60_000
const WRITERS = 12
const PETS = Array.from({ length: 8 }, (_, i) => i + 1)

const postgres = BACKENDS.find((b) => b.name === 'postgres')

// Concurrent transactions on PostgreSQL can commit in another order than they took their seqs: a
// reader that polls `after=` must still see every change once. SQLite has one writer at a time.
if (!postgres) {
  test('the changes feed under concurrent writers (postgres)', { skip: 'PostgreSQL is not reachable' }, () => {})
} else {
  describe('polling the changes feed while two instances write (postgres)', () => {
    const suite = useSuite(postgres, { instances: 2 })
    let a: TestServer
    let b: TestServer
    let token: string
    before(async () => {
      ;[a, b] = suite.servers as [TestServer, TestServer]
      token = suite.token
      await importInventory(
        a,
        PETS.map((petId) => ({ petId, quantity: 1000 })),
      )
    })

    test('When a writer holds the seq before a PATCH through another instance, then the PATCH waits and the feed never shows its seq first', async () => {
      const last = ((await getChanges(a, token, 'after=0&limit=1000')).body as InventoryChange[]).at(-1)!.seq
      // A writer of another process, mid-transaction: it has taken seq last+1 under the inventory lock.
      const held = new pg.Client({ connectionString: suite.database.url })
      await held.connect()
      try {
        await held.query('BEGIN')
        await held.query("SELECT * FROM set_inventory_quantities('{1}', '{1000}', '{NULL}', '{held}', '{adjustment}', '{NULL}', now())")
        const patch = b.request('PATCH', '/v1/inventory/2', { token, body: { quantity: 1000 } })
        let answered = false
        void patch.then(() => (answered = true))
        // While the first writer has not committed, the PATCH cannot take a seq, so no reader can see
        // one after the gap (with a sequence it would take last+2 and commit, and a reader at
        // after=last+2 would never see last+1).
        for (let i = 0; i < 10; i++) {
          const res = await getChanges(i % 2 ? a : b, token, `after=${last}`)
          assert.deepEqual(res.body, [], 'nothing is visible past the uncommitted seq')
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        assert.equal(answered, false, 'the PATCH waits for the writer before it')
        await held.query('COMMIT')
        assert.equal((await patch).status, 200)
        const rows = (await getChanges(a, token, `after=${last}`)).body as InventoryChange[]
        assert.deepEqual(
          rows.map((r) => [r.seq, r.petId, r.requestId]),
          [
            [last + 1, 1n, 'held'],
            [last + 2, 2n, rows[1]?.requestId],
          ],
        )
      } finally {
        await held.end()
      }
    })

    test('When readers poll after= through alternating instances under write load, then each sees every seq once, in order, none missed', async (t) => {
      let writing = true
      const unexpected: string[] = []
      let writes = 0
      const deadline = Date.now() + WRITE_MS
      const hardDeadline = Date.now() + MAX_WRITE_MS
      const writer = async (n: number) => {
        const rand = random(1000 + n)
        const mine: number[] = []
        while ((Date.now() < deadline || writes < MIN_WRITES) && Date.now() < hardDeadline && writes < MAX_WRITES) {
          writes++
          const server = (n + writes) % 2 ? a : b
          const petId = PETS[Math.floor(rand() * PETS.length)]!
          const dice = rand()
          let res: Response
          if (dice < 0.5) {
            res = await server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity: 500 + Math.floor(rand() * 500) } })
          } else if (dice < 0.85 || mine.length === 0) {
            res = await placeOrder(server, token, { petId, quantity: 1 + Math.floor(rand() * 3) })
            if (res.status === 201) mine.push(res.body.id)
          } else {
            res = await setOrderStatus(server, token, mine.pop()!, 'cancelled')
          }
          if (res.status >= 300) unexpected.push(`${res.status} ${res.text}`)
        }
      }

      /** Polls with after= (the last seq seen), alternating instances. */
      const afterReader = async (limit: number) => {
        const seen: InventoryChange[] = []
        let turn = 0
        const poll = async () => {
          const cursor = seen.at(-1)?.seq ?? 0
          const res = await getChanges(turn++ % 2 ? a : b, token, `after=${cursor}&limit=${limit}`)
          assert.equal(res.status, 200, res.text)
          for (const row of res.body) {
            assertChangeShape(row)
            assert.ok(row.seq > (seen.at(-1)?.seq ?? 0), `seq ${row.seq} after ${seen.at(-1)?.seq}`)
            seen.push(row)
          }
          return res.body.length as number
        }
        while (writing) await poll()
        // The writers are done and answered: drain what is left.
        for (let i = 0; (await poll()) > 0; i++) assert.ok(i < 10_000)
        return seen
      }

      /** Follows the Link headers while there are any, then polls from the last row, alternating instances. */
      const linkReader = async () => {
        const seen: InventoryChange[] = []
        let turn = 0
        let query = 'limit=50'
        const poll = async () => {
          const res = await getChanges(turn++ % 2 ? a : b, token, query)
          assert.equal(res.status, 200, res.text)
          for (const row of res.body) {
            assert.ok(row.seq > (seen.at(-1)?.seq ?? 0), `seq ${row.seq} after ${seen.at(-1)?.seq}`)
            seen.push(row)
          }
          const next = nextLink(res, '/v1/inventory/changes')
          query = next ? `after=${next.after}&limit=${next.limit}` : `after=${seen.at(-1)?.seq ?? 0}&limit=50`
          return res.body.length as number
        }
        while (writing) await poll()
        for (let i = 0; (await poll()) > 0; i++) assert.ok(i < 10_000)
        return seen
      }

      const readers = Promise.all([afterReader(37), afterReader(1000), linkReader()])
      await Promise.all(Array.from({ length: WRITERS }, (_, n) => writer(n)))
      writing = false
      const polled = await readers
      assert.deepEqual(unexpected, [])

      const full = await readAllChanges(a, token)
      t.diagnostic(`${writes} writes, ${full.length} ledger rows, polled ${polled.map((p) => p.length).join(' / ')}`)
      assert.ok(full.length > PETS.length + 100, `only ${full.length} rows were written`)
      for (const [i, seen] of polled.entries()) {
        const seqs = new Set(seen.map((s) => s.seq))
        const missed = full.filter((r) => !seqs.has(r.seq)).map((r) => r.seq)
        assert.deepEqual(missed.slice(0, 20), [], `reader ${i} missed ${missed.length} changes`)
        assert.deepEqual(
          seen.map((r) => r.seq),
          full.map((r) => r.seq),
          `reader ${i}`,
        )
        assert.deepEqual(seen, full, `reader ${i}: rows never change once seen`)
      }
    })
  })
}
