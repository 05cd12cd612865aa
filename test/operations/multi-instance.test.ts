import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { BACKENDS, createKey, inventoryFile, runCliInProcess, seed, useSuite, type TestServer } from '../support/helpers.js'

const PETS = 100

for (const backend of BACKENDS) {
  describe(`several instances on one database act as one service (${backend.name})`, () => {
    const suite = useSuite(backend, {
      instances: 2,
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'available' })),
    })
    // The two instances and the key, read once the suite's `before` has run.
    let a: TestServer
    let b: TestServer
    let token: string
    before(() => {
      ;[a, b] = suite.servers as [TestServer, TestServer]
      token = suite.token
    })

    const quantityOf = async (server: TestServer, petId: number) =>
      (await server.request('GET', '/v1/inventory', { token })).body.find((i: { petId: bigint }) => i.petId === BigInt(petId)).quantity

    test('When a PATCH goes through one instance, then the very next GET through the other sees it', async () => {
      // Warm both caches first, so a stale cache would show.
      await quantityOf(a, 1)
      await quantityOf(b, 1)
      for (let round = 1; round <= 20; round++) {
        const [writer, reader] = round % 2 ? [a, b] : [b, a]
        const res = await writer.request('PATCH', '/v1/inventory/1', { token, body: { quantity: round } })
        assert.equal(res.status, 200)
        assert.equal(await quantityOf(reader, 1), round, `round ${round}`)
      }
    })

    test('When a key is created or revoked with the CLI, then every instance honours it on its next request', async () => {
      const fresh = await createKey(a, 'fresh')
      for (const server of [a, b]) {
        assert.equal((await server.request('GET', '/v1/inventory', { token: fresh })).status, 200)
      }
      const revoked = await runCliInProcess(['keys', 'revoke', 'fresh'], a.env)
      assert.equal(revoked.code, 0, revoked.stderr)
      for (const server of [a, b]) {
        assert.equal((await server.request('GET', '/v1/inventory', { token: fresh })).status, 401)
        assert.equal((await server.request('GET', '/v1/inventory', { token })).status, 200)
      }
    })

    test('When an import runs beside the instances, then both see it on their next request', async () => {
      await quantityOf(a, 2)
      await quantityOf(b, 2)
      await seed(a, [{ petId: 2, quantity: 777, status: 'pending' }])
      assert.equal(await quantityOf(a, 2), 777)
      assert.equal(await quantityOf(b, 2), 777)
    })

    test('When simultaneous PATCHes are spread over both instances, then they all land', async () => {
      const results = await Promise.all(
        Array.from({ length: PETS }, (_, i) =>
          (i % 2 ? a : b).request('PATCH', `/v1/inventory/${i + 1}`, { token, body: { quantity: 10_000 + i } }),
        ),
      )
      assert.ok(
        results.every((r) => r.status === 200),
        results.map((r) => r.status).join(','),
      )
      for (const server of [a, b]) {
        const list = (await server.request('GET', '/v1/inventory', { token })).body
        assert.equal(list.length, PETS)
        for (const item of list as { petId: bigint; quantity: number }[]) assert.equal(item.quantity, 10_000 + Number(item.petId) - 1)
      }
    })
  })

  describe(`overlapping writers on one database (${backend.name})`, () => {
    const suite = useSuite(backend, {
      instances: 2,
      // Enough rows that PostgreSQL drives the update by index in batch order, not by a scan in table order.
      seed: Array.from({ length: 5000 }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'available' })),
    })

    test('When both instances update the same few pets in mixed orders at once, then every write succeeds', async () => {
      for (let round = 0; round < 5; round++) {
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) => {
            // Pets descend on one instance and ascend on the other, so batches overlap in opposite orders.
            const petId = i % 2 ? 10 - (i % 10) : (i % 10) + 1
            return suite.servers[i % 2]!.request('PATCH', `/v1/inventory/${petId}`, {
              token: suite.token,
              body: { quantity: i },
            })
          }),
        )
        assert.deepEqual(
          results.filter((r) => r.status !== 200).map((r) => r.text),
          [],
        )
      }
    })
  })

  describe(`imports beside PATCH traffic (${backend.name})`, () => {
    const PETS_BIG = 25_000
    const items = Array.from({ length: PETS_BIG }, (_, i) => ({ petId: i + 1, quantity: 1, status: 'available' }))
    const suite = useSuite(backend, { seed: items })

    test('When large imports run while PATCHes hit the same pets, then every PATCH and every import succeeds (no deadlock)', async () => {
      // Imports write in several statements; PATCH batches lock rows of later statements meanwhile.
      const { server, token } = suite
      const file = inventoryFile(items)
      let stop = false
      const statuses: number[] = []
      const client = async (n: number) => {
        for (let i = 0; !stop; i++) {
          const petId = PETS_BIG - ((n * 997 + i * 7919) % 15_000)
          statuses.push((await server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity: i } })).status)
        }
      }
      const clients = Array.from({ length: 20 }, (_, n) => client(n))
      const imports = []
      for (let i = 0; i < 3; i++) imports.push(await runCliInProcess(['import', 'inventory', file], server.env))
      stop = true
      await Promise.all(clients)
      for (const result of imports) assert.equal(result.code, 0, result.stderr)
      assert.ok(statuses.length > 0)
      assert.deepEqual(
        statuses.filter((s) => s !== 200),
        [],
      )
    })
  })

  describe(`serve --workers (${backend.name})`, () => {
    const suite = useSuite(backend, {
      env: { WORKERS: '2' },
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'sold' })),
    })

    test('When two workers share the port, then concurrent PATCHes all land, both workers serve, and SIGTERM exits 0', async () => {
      const { server, token } = suite
      const results = await Promise.all(
        Array.from({ length: PETS }, (_, i) => server.request('PATCH', `/v1/inventory/${i + 1}`, { token, body: { quantity: i + 1 } })),
      )
      assert.ok(results.every((r) => r.status === 200))
      for (let i = 0; i < 20; i++) {
        const list = (await server.request('GET', '/v1/inventory', { token })).body
        assert.equal(list.length, PETS)
        for (const item of list as { petId: bigint; quantity: number }[]) assert.equal(item.quantity, Number(item.petId))
      }
      const pids = () =>
        new Set(
          server
            .logs()
            .filter((l) => l.msg === 'request')
            .map((l) => l.pid),
        )
      await server.waitForLog(() => pids().size === 2).catch(() => {})
      assert.equal(pids().size, 2, `request log lines came from ${[...pids()].join(', ')}`)
      assert.equal(await server.stop(), 0)
    })
  })
}
