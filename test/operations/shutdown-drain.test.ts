import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, seed, useResources } from '../support/helpers.js'
import { holdInventoryWriteLock } from '../support/inventory-lock.js'

for (const backend of BACKENDS) {
  describe(`shutdown while a write waits for a lock (${backend.name})`, () => {
    const resources = useResources()

    // DB_TIMEOUT_MS past the old fixed 10 s grace: the drain must wait for the write, then exit 0.
    test("When SIGTERM arrives while a PATCH waits for another transaction's lock, then the PATCH completes and the process exits 0", async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'drain')
      await seed(database.url, [{ petId: 1, quantity: 1, status: 'available' }])
      const server = await resources.server(database.url, { DB_TIMEOUT_MS: '12000' })
      const release = await holdInventoryWriteLock(backend, database.url)
      const patch = server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 2 } })
      // Let the PATCH reach the lock before the signal.
      await new Promise((r) => setTimeout(r, 300))
      server.child.kill('SIGTERM')
      await server.waitForLog((l) => l.msg === 'shutting down')
      await new Promise((r) => setTimeout(r, 10_500))
      await release()
      const res = await patch
      assert.equal(res.status, 200, res.text)
      assert.equal(await server.waitForExit(), 0, server.stderr.slice(-300))
      const after = await resources.server(database.url)
      assert.equal((await after.request('GET', '/v1/inventory', { token })).body[0].quantity, 2, 'the 200 was durable')
    })
  })
}
