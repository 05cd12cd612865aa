import { SCOPES } from '../../src/domain.js'
// DeprecatedCallStore, on every backend: counts summed across flushes, the earliest first call and the latest last call kept.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'
import { BACKENDS, useStorage } from './backends.js'

const hash = (token: string) => createHash('sha256').update(token).digest()
const t = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00.123Z`

for (const backend of BACKENDS) {
  describe(`Storage contract: deprecated calls (${backend.name})`, () => {
    const fixture = useStorage(backend)

    /** Two keys, by id. */
    const keys = async () => {
      const a = await fixture.storage.createKey('alpha', SCOPES, hash('a'), t(0))
      const b = await fixture.storage.createKey('beta', SCOPES, hash('b'), t(0))
      assert.ok(a && b)
      return { a: a.id, b: b.id }
    }

    test('When nothing was added, then the list is empty; adding an empty list changes nothing', async () => {
      const { storage } = fixture
      await keys()
      assert.deepEqual(await storage.listDeprecatedCalls(), [])
      await storage.addDeprecatedCalls([])
      assert.deepEqual(await storage.listDeprecatedCalls(), [])
    })

    test('When counts are added across calls, then calls are summed and the earliest first call and latest last call are kept, per key', async () => {
      const { storage } = fixture
      const { a, b } = await keys()
      await storage.addDeprecatedCalls([{ keyId: a, calls: 3, firstCall: t(20), lastCall: t(25) }])
      assert.deepEqual(await storage.listDeprecatedCalls(), [{ keyId: a, name: 'alpha', calls: 3, firstCall: t(20), lastCall: t(25) }])
      // Earlier first call, earlier last call: first moves, last stays.
      await storage.addDeprecatedCalls([
        { keyId: b, calls: 1, firstCall: t(30), lastCall: t(30) },
        { keyId: a, calls: 2, firstCall: t(10), lastCall: t(15) },
      ])
      // Later first call, later last call: first stays, last moves.
      await storage.addDeprecatedCalls([{ keyId: a, calls: 5, firstCall: t(22), lastCall: t(40) }])
      assert.deepEqual(await storage.listDeprecatedCalls(), [
        { keyId: a, name: 'alpha', calls: 10, firstCall: t(10), lastCall: t(40) },
        { keyId: b, name: 'beta', calls: 1, firstCall: t(30), lastCall: t(30) },
      ])
    })

    // The backends disagree: SQLite adds both; PostgreSQL's one upsert statement refuses the call.
    // Latent today: the counter (src/pets/deprecated-calls.ts) flushes one entry per key.
    test('When one call holds the same key twice, then both counts are added', async () => {
      const { storage } = fixture
      const { a } = await keys()
      await storage.addDeprecatedCalls([
        { keyId: a, calls: 2, firstCall: t(12), lastCall: t(13) },
        { keyId: a, calls: 3, firstCall: t(11), lastCall: t(14) },
      ])
      assert.deepEqual(await storage.listDeprecatedCalls(), [{ keyId: a, name: 'alpha', calls: 5, firstCall: t(11), lastCall: t(14) }])
    })

    test('When two storages on the same database add counts, then both add up', async () => {
      const { storage } = fixture
      const { a } = await keys()
      const other = await fixture.another()
      await Promise.all([
        storage.addDeprecatedCalls([{ keyId: a, calls: 4, firstCall: t(5), lastCall: t(6) }]),
        other.addDeprecatedCalls([{ keyId: a, calls: 6, firstCall: t(7), lastCall: t(8) }]),
      ])
      assert.deepEqual(await other.listDeprecatedCalls(), [{ keyId: a, name: 'alpha', calls: 10, firstCall: t(5), lastCall: t(8) }])
    })

    test('When a revoked key has counts, then they are still listed, with its name', async () => {
      const { storage } = fixture
      const { a } = await keys()
      await storage.addDeprecatedCalls([{ keyId: a, calls: 1, firstCall: t(1), lastCall: t(2) }])
      await storage.revokeKey(a, t(3))
      assert.deepEqual(await storage.listDeprecatedCalls(), [{ keyId: a, name: 'alpha', calls: 1, firstCall: t(1), lastCall: t(2) }])
    })
  })
}
