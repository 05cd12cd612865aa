import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, useSuite } from '../support/helpers.js'

const PETS = 200

for (const backend of BACKENDS) {
  describe(`concurrent writes (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      seed: Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'available' })),
    })

    const patch = (petId: number, quantity: number) =>
      suite.server.request('PATCH', `/v1/inventory/${petId}`, { token: suite.token, body: { quantity } })

    test('When many PATCHes to distinct pets arrive at once, then every one lands', async () => {
      const results = await Promise.all(Array.from({ length: PETS }, (_, i) => patch(i + 1, 1000 + i)))
      assert.ok(results.every((r) => r.status === 200))
      assert.equal(results.length, PETS)
      for (const [i, r] of results.entries()) assert.equal(r.body.quantity, 1000 + i)
      const list = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body
      assert.equal(list.length, PETS)
      for (const item of list as { petId: bigint; quantity: number }[]) assert.equal(item.quantity, 1000 + Number(item.petId) - 1)
    })

    test('When many PATCHes to one pet arrive at once, then each is answered with its own write and the stored value is one of them', async () => {
      const values = Array.from({ length: 100 }, (_, i) => i + 1)
      const results = await Promise.all(values.map((q) => patch(7, q)))
      assert.ok(results.every((r) => r.status === 200))
      assert.deepEqual(
        results.map((r) => r.body.quantity).sort((a, b) => a - b),
        values,
      )
      const stored = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body.find(
        (i: { petId: bigint }) => i.petId === 7n,
      )
      assert.ok(values.includes(stored.quantity))
      // Whatever order the writes were applied in, a follow-up write is seen by the next read.
      await patch(7, 4242)
      const after = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body
      assert.equal(after.find((i: { petId: bigint }) => i.petId === 7n).quantity, 4242)
    })

    test('When GETs and PATCHes interleave, then every GET reflects all PATCHes answered before it was sent', async () => {
      for (let round = 0; round < 20; round++) {
        const q = 5000 + round
        assert.equal((await patch(3, q)).status, 200)
        const [a, b] = await Promise.all([suite.server.request('GET', '/v1/inventory', { token: suite.token }), patch(4, q)])
        assert.equal(a.body.find((i: { petId: bigint }) => i.petId === 3n).quantity, q)
        assert.equal(b.status, 200)
      }
    })
  })
}

for (const backend of BACKENDS) {
  describe(`list rebuilds after a write (${backend.name})`, () => {
    const suite = useSuite(backend, {
      env: { LOG_LEVEL: 'debug' },
      seed: Array.from({ length: 2000 }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'available' })),
    })
    const builds = () => suite.server.logs().filter((l) => l.msg === 'inventory list built')

    test('When many GETs arrive together after a write, then they share one rebuild of the list, and all see the write', async () => {
      const list = () => suite.server.request('GET', '/v1/inventory', { token: suite.token })
      await list()
      const patch = await suite.server.request('PATCH', '/v1/inventory/5', { token: suite.token, body: { quantity: 55 } })
      assert.equal(patch.status, 200)
      // The child's log arrives on its own schedule: count from after the first GET's rebuild is in.
      await suite.server.waitForLog(() => suite.server.logs().filter((l) => l.msg === 'request').length >= 2)
      const before = builds().length
      const headers = { 'x-request-id': 'rebuild-last' }
      const results = await Promise.all([
        ...Array.from({ length: 19 }, list),
        suite.server.request('GET', '/v1/inventory', { token: suite.token, headers }),
      ])
      for (const res of results) {
        assert.equal(res.status, 200)
        assert.equal(res.body[4].quantity, 55)
      }
      // Every request of the burst is logged by now, so every rebuild is too.
      await suite.server.waitForLog(() => suite.server.logs().filter((l) => l.msg === 'request').length >= 22)
      const rebuilt = builds().slice(before)
      assert.equal(rebuilt.length, 1, `rebuilds: ${JSON.stringify(rebuilt)}`)
      assert.equal(rebuilt[0]!.entries, 2000)
    })
  })
}
