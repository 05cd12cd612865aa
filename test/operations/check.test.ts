// Issue 37: `petstore check`, on both backends, as a real process. A store made by the service itself
// (PATCHes, orders through every status, a webhook subscription, keys) passes; so does every check
// taken while a server writes (one snapshot: no false finding from a write landing between two of its
// queries). Each invariant broken by hand is reported with the ids involved, exit 1, and the check
// itself changes nothing; a bad command line is exit 2.
import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pg from 'pg'
import { assertInvariants, BACKENDS, type Backend, createKey, runCli, seed, type TestServer, useResources } from '../support/helpers.js'
import { runStatements } from '../support/databases.js'

const PETS = 20

const text = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? String(v) : v))

/** Everything the check reads, as text: what must not change when it runs. */
async function contents(url: string): Promise<string> {
  const tables = ['inventory', 'inventory_changes', 'orders', 'webhooks', 'api_keys', 'ledger_jumps', 'ledger_retention']
  const out: unknown[] = []
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true })
    try {
      for (const t of tables) out.push(db.prepare(`SELECT * FROM ${t} ORDER BY 1`).raw().safeIntegers().all())
    } finally {
      db.close()
    }
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      for (const t of tables) out.push((await client.query({ text: `SELECT * FROM ${t} ORDER BY 1`, rowMode: 'array' })).rows)
    } finally {
      await client.end()
    }
  }
  return text(out)
}

async function ok(server: TestServer, method: string, path: string, token: string, body?: unknown) {
  const res = await server.request(method, path, { token, ...(body === undefined ? {} : { body }) })
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${text(res.body)}`)
  return res.body
}

for (const backend of BACKENDS) {
  describe(`petstore check (${backend.name}, real processes)`, () => {
    const resources = useResources()

    /** A store the service made: entries, PATCHes, orders in every status, a webhook subscription, keys. */
    async function store(b: Backend) {
      const database = await resources.database(b)
      const env = { DATABASE_URL: database.url }
      const token = await createKey(database.url, 'ops')
      await createKey(database.url, 'reader', ['inventory:read'])
      await seed(
        database.url,
        Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 100, status: 'available' })),
      )
      const added = await runCli(['webhooks', 'add', 'https://receiver.invalid/hook'], env)
      assert.equal(added.code, 0, added.stderr)
      const server = await resources.server(database.url)
      for (let pet = 1; pet <= PETS; pet++) await ok(server, 'PATCH', `/v1/inventory/${pet}`, token, { quantity: 50 + pet })
      const orders: bigint[] = []
      for (let n = 0; n < 8; n++)
        orders.push((await ok(server, 'POST', '/v1/store/orders', token, { petId: 3 + (n % 2), quantity: 2 + n })).id)
      await ok(server, 'PATCH', `/v1/store/orders/${orders[0]}`, token, { status: 'cancelled' })
      await ok(server, 'PATCH', `/v1/store/orders/${orders[1]}`, token, { status: 'approved' })
      await ok(server, 'PATCH', `/v1/store/orders/${orders[1]}`, token, { status: 'cancelled' })
      await ok(server, 'PATCH', `/v1/store/orders/${orders[2]}`, token, { status: 'approved' })
      await ok(server, 'PATCH', `/v1/store/orders/${orders[2]}`, token, { status: 'delivered' })
      await ok(server, 'PATCH', `/v1/store/orders/${orders[3]}`, token, { status: 'approved' })
      return { database, env, token, server, orders }
    }

    test('When the service made the store, then every invariant holds: exit 0, nothing on stdout, what it read on stderr', async () => {
      const { env } = await store(backend)
      const result = await runCli(['check'], env)
      assert.equal(result.code, 0, result.stdout + result.stderr)
      assert.equal(result.stdout, '')
      assert.match(
        result.stderr,
        /^Checked 20 entries, 50 ledger rows, 8 orders, 0 holds, 1 webhook subscriptions and 2 API keys in \d+\.\d s: every invariant holds\.\n$/,
      )
    })

    test('When checks run while PATCHes, orders and cancellations land, then no write landing during a check is taken for a violation: every one passes', async () => {
      const { env, token, server } = await store(backend)
      let stop = false
      let writes = 0
      const writers = Array.from({ length: 6 }, async (_, w) => {
        for (let n = 0; !stop; n++) {
          const pet = 1 + ((w * 3 + n) % PETS)
          if (n % 3 === 2) {
            const order = await server.request('POST', '/v1/store/orders', { token, body: { petId: pet, quantity: 1 } })
            assert.equal(order.status, 201, text(order.body))
            if (n % 2 === 0) await ok(server, 'PATCH', `/v1/store/orders/${order.body.id}`, token, { status: 'cancelled' })
          } else await ok(server, 'PATCH', `/v1/inventory/${pet}`, token, { quantity: 500 + n })
          writes++
        }
      })
      try {
        for (let round = 0; round < 5; round++) {
          const before = writes
          const result = await runCli(['check'], env)
          assert.equal(result.code, 0, `round ${round}: ${result.stdout}${result.stderr}`)
          assert.ok(writes > before, 'writes landed while the check ran')
        }
      } finally {
        stop = true
        await Promise.all(writers)
      }
    })

    test('When each invariant is broken by hand, then each violation is a line naming its ids, exit 1, and the check changed nothing', async () => {
      const { database, env, server, orders } = await store(backend)
      await server.stop()
      const pg = backend.name === 'postgres'
      const [cancelled, , delivered] = orders as [bigint, bigint, bigint]
      await runStatements(database.url, [
        // The entry of pet 7 moved without its ledger row.
        'UPDATE inventory SET quantity = 999 WHERE pet_id = 7',
        // A ledger row for a pet without an entry, naming an order that does not exist.
        `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, at)
           VALUES (5000, 777, 5, 4, 'order', 4242, ${pg ? 'now()' : "'2026-01-01T00:00:00.000Z'"})`,
        // The delivered order given back as well.
        `INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, at)
           SELECT 5001, o.pet_id, i.quantity - o.quantity, i.quantity, 'cancellation', o.id, ${pg ? 'now()' : "'2026-01-01T00:00:00.000Z'"}
           FROM orders AS o JOIN inventory AS i ON i.pet_id = o.pet_id WHERE o.id = ${delivered}`,
        // The cancelled order's cancellation row lost.
        `DELETE FROM inventory_changes WHERE reason = 'cancellation' AND order_id = ${cancelled}`,
        // A jump over rows that exist, and retention claiming rows that are still there.
        `INSERT INTO ledger_jumps (after_seq, through_seq, at) VALUES (4999, 5000, ${pg ? 'now()' : "'2026-01-01T00:00:00.000Z'"})`,
        'UPDATE ledger_retention SET pruned_through = 1',
        // A subscription's cursor past the ledger's end, and a key stored as its token.
        'UPDATE webhooks SET delivered_through = 900000',
        `UPDATE api_keys SET key_hash = ${pg ? "convert_to('pk_live_plain_token_in_the_clear_0123456789abcdef', 'UTF8')" : "CAST('pk_live_plain_token_in_the_clear_0123456789abcdef' AS BLOB)"} WHERE name = 'reader'`,
        ...(pg ? ['UPDATE inventory_version SET last_change = 4000'] : []),
      ])
      const before = await contents(database.url)
      const result = await runCli(['check'], env)
      assert.equal(result.code, 1, result.stderr)
      assert.equal(await contents(database.url), before, 'the check changed nothing')
      const lines = result.stdout.trimEnd().split('\n')
      const expect = [
        /^entry_matches_ledger\tpet=7 seq=\d+\tthe entry holds 999, its newest ledger row says 57$/,
        /^ledger_row_has_entry\tpet=777 seq=5000\tthe pet has no entry$/,
        /^ledger_order_exists\torder=4242 seq=5000\tno such order$/,
        new RegExp(`^order_stock\torder=${delivered} pet=\\d+\t1 cancellation rows \\(0 expected for a delivered order\\)$`),
        new RegExp(`^order_stock\torder=${cancelled} pet=\\d+\t0 cancellation rows \\(1 expected for a cancelled order\\)$`),
        /^seq_outside_jumps\tseq=5000 pet=777\tthe row lies inside the jump from 4999 through 5000$/,
        /^seq_after_pruned\tseq=1 pet=\d+\tretention removed every row through 1$/,
        /^webhook_cursor\twebhook=1\tits cursor 900000 is past the ledger's end 5001$/,
        /^key_hashed\tkey=\d+ name=reader\tkey_hash is 49 bytes, not a 32-byte SHA-256 digest$/,
        ...(pg
          ? [
              /^seq_below_counter\tseq=5000 pet=777\tthe row is past the seq counter 4000$/,
              /^seq_below_counter\tseq=5001 pet=\d+\tthe row is past the seq counter 4000$/,
              /^seq_below_counter\tjump_through=5000\tthe jump is past the seq counter 4000$/,
            ]
          : []),
      ]
      for (const pattern of expect)
        assert.ok(
          lines.some((l) => pattern.test(l)),
          `${pattern} in:\n${result.stdout}`,
        )
      assert.equal(lines.length, expect.length, result.stdout)
      assert.doesNotMatch(result.stdout + result.stderr, /plain_token/, 'a key in plain text is named, never printed')
      assert.match(
        result.stderr,
        /violations found:\n {2}entry_matches_ledger: 1 \(each location's quantity of a pet is its newest ledger row's there\)/,
      )
    })

    test('When a server is killed with SIGKILL in the middle of PATCHes, orders and cancellations, then check passes after every kill', async () => {
      const { database, token, server: first } = await store(backend)
      await first.stop()
      for (let kill = 0; kill < 3; kill++) {
        const server = await resources.server(database.url)
        let answered = 0
        const writers = Array.from({ length: 6 }, async (_, w) => {
          for (let n = 0; ; n++) {
            const pet = 1 + ((w * 7 + n) % PETS)
            try {
              if (n % 2 === 1) {
                const order = await server.request('POST', '/v1/store/orders', { token, body: { petId: pet, quantity: 1 } })
                if (order.status === 201 && n % 4 === 1)
                  await server.request('PATCH', `/v1/store/orders/${order.body.id}`, { token, body: { status: 'cancelled' } })
              } else await server.request('PATCH', `/v1/inventory/${pet}`, { token, body: { quantity: 200 + n } })
              answered++
            } catch {
              return // the server is gone
            }
          }
        })
        while (answered < 40 * (kill + 1)) await new Promise((resolve) => setTimeout(resolve, 10))
        await server.stop('SIGKILL')
        await Promise.all(writers)
        await assertInvariants(database.url, `after kill ${kill + 1}`)
      }
    })

    test('When the command line has more than check, then exit 2 with the usage', async () => {
      const database = await resources.database(backend)
      const result = await runCli(['check', 'now'], { DATABASE_URL: database.url })
      assert.equal(result.code, 2)
      assert.match(result.stderr, /^Unexpected argument 'now' for 'petstore check'\n/)
      assert.match(result.stderr, /Usage: petstore/)
    })
  })
}
