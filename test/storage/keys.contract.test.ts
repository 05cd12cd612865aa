import { SCOPES } from '../../src/domain.js'
// KeyStore, on every backend: the first key exactly once, active names unique, revoked keys not found, no hash listed.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'
import type { ApiKey, Storage } from '../../src/storage/ports.js'
import { BACKENDS, STORAGE_SETTINGS, useStorage } from './backends.js'

const hash = (token: string) => createHash('sha256').update(token).digest()
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-02T03:04:05.678Z'
const T2 = '2026-01-03T00:00:00.001Z'

/** Opens every pooled connection first, so that racing calls really run at once (not one per new connection). */
const warm = (storage: Storage) => Promise.all(Array.from({ length: STORAGE_SETTINGS.dbPoolSize }, () => storage.ping()))

const created = (id: number, name: string, at = T0): ApiKey => ({
  id,
  name,
  scopes: [...SCOPES],
  createdAt: at,
  lastUsedAt: null,
  revokedAt: null,
})

for (const backend of BACKENDS) {
  describe(`Storage contract: API keys (${backend.name})`, () => {
    const fixture = useStorage(backend)

    describe('createFirstKey', () => {
      test('When five calls race for the first key with the same name, then exactly one gets it', async () => {
        const { storage } = fixture
        await warm(storage)
        const results = await Promise.all(Array.from({ length: 5 }, (_, i) => storage.createFirstKey('admin', SCOPES, hash(`t${i}`), T0)))
        const winners = results.filter((r) => r !== undefined)
        assert.equal(winners.length, 1, `${winners.length} first keys`)
        const winner = winners[0]!
        assert.deepEqual(winner, created(winner.id, 'admin'))
        assert.deepEqual(await storage.listKeys(), [winner])
        const i = results.indexOf(winner)
        assert.deepEqual(await storage.findActiveKey(hash(`t${i}`)), { id: winner.id, hash: hash(`t${i}`), scopes: [...SCOPES] })
      })

      test('When two storages on the same database race for the first key, then exactly one of all their calls gets it', async () => {
        const { storage } = fixture
        const other = await fixture.another()
        await Promise.all([warm(storage), warm(other)])
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? storage : other).createFirstKey('admin', SCOPES, hash(`t${i}`), T0)),
        )
        const winners = results.filter((r) => r !== undefined)
        assert.equal(winners.length, 1, `${winners.length} first keys`)
        assert.deepEqual(await storage.listKeys(), winners)
        assert.deepEqual(await other.listKeys(), winners)
      })

      // The port promises one first key to racing processes, whatever name each asks for. The service
      // always asks for one name (KeysService.createFirstKeyIfNone), where the active-name index saves it.
      test('When calls race for the first key under different names, then exactly one gets it', async () => {
        const { storage } = fixture
        const other = await fixture.another()
        await Promise.all([warm(storage), warm(other)])
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? storage : other).createFirstKey(`first-${i}`, SCOPES, hash(`t${i}`), T0)),
        )
        const winners = results.filter((r) => r !== undefined)
        assert.equal(winners.length, 1, `${winners.length} first keys`)
        assert.deepEqual(await storage.listKeys(), winners)
      })

      test('When the database has had a key, even a revoked one, then createFirstKey creates nothing', async () => {
        const { storage } = fixture
        const key = await storage.createKey('ops', SCOPES, hash('a'), T0)
        assert.deepEqual(key, created(key!.id, 'ops'))
        assert.equal(await storage.createFirstKey('admin', SCOPES, hash('b'), T0), undefined)
        await storage.revokeKey('ops', T1)
        assert.equal(await storage.createFirstKey('admin', SCOPES, hash('c'), T0), undefined)
        assert.deepEqual(await storage.listKeys(), [{ ...key!, revokedAt: T1 }])
      })
    })

    describe('createKey and revokeKey', () => {
      test('When a key is created under an active name, then it is refused; once that key is revoked, the name is free again', async () => {
        const { storage } = fixture
        const first = await storage.createKey('ops', SCOPES, hash('a'), T0)
        assert.deepEqual(first, created(first!.id, 'ops'))
        assert.equal(await storage.createKey('ops', SCOPES, hash('b'), T1), undefined)
        assert.deepEqual(await storage.listKeys(), [first])
        const revoked = await storage.revokeKey('ops', T1)
        assert.deepEqual(revoked, { ...first!, revokedAt: T1 })
        const second = await storage.createKey('ops', SCOPES, hash('b'), T2)
        assert.deepEqual(second, created(second!.id, 'ops', T2))
        assert.ok(second!.id > first!.id)
        assert.deepEqual(await storage.listKeys(), [revoked, second])
      })

      test('When five calls race to create the same name, then exactly one gets it', async () => {
        const { storage } = fixture
        await warm(storage)
        const results = await Promise.all(Array.from({ length: 5 }, (_, i) => storage.createKey('ops', SCOPES, hash(`t${i}`), T0)))
        assert.equal(results.filter((r) => r !== undefined).length, 1)
        assert.equal((await storage.listKeys()).length, 1)
      })

      test('When a key is revoked by name and another by id, then each answers the key as revoked; a second revoke finds none', async () => {
        const { storage } = fixture
        const a = (await storage.createKey('a', SCOPES, hash('a'), T0))!
        const b = (await storage.createKey('b', SCOPES, hash('b'), T0))!
        assert.deepEqual(await storage.revokeKey('a', T1), { ...a, revokedAt: T1 })
        assert.deepEqual(await storage.revokeKey(b.id, T2), { ...b, revokedAt: T2 })
        assert.equal(await storage.revokeKey('a', T2), undefined)
        assert.equal(await storage.revokeKey(b.id, T2), undefined)
        assert.equal(await storage.revokeKey('nobody', T2), undefined)
        assert.equal(await storage.revokeKey(9999, T2), undefined)
        assert.deepEqual(await storage.listKeys(), [
          { ...a, revokedAt: T1 },
          { ...b, revokedAt: T2 },
        ])
      })

      test('When a name is used by a revoked key and an active one, then revoking by name revokes the active one', async () => {
        const { storage } = fixture
        const old = (await storage.createKey('ops', SCOPES, hash('a'), T0))!
        await storage.revokeKey('ops', T1)
        const current = (await storage.createKey('ops', SCOPES, hash('b'), T1))!
        assert.deepEqual(await storage.revokeKey('ops', T2), { ...current, revokedAt: T2 })
        assert.deepEqual(await storage.listKeys(), [
          { ...old, revokedAt: T1 },
          { ...current, revokedAt: T2 },
        ])
      })
    })

    describe('findActiveKey, touchKey, listKeys', () => {
      test('When a key is revoked, then findActiveKey no longer finds it, while other keys are still found', async () => {
        const { storage } = fixture
        const a = (await storage.createKey('a', SCOPES, hash('a'), T0))!
        const b = (await storage.createKey('b', SCOPES, hash('b'), T0))!
        assert.deepEqual(await storage.findActiveKey(hash('a')), { id: a.id, hash: hash('a'), scopes: [...SCOPES] })
        await storage.revokeKey(a.id, T1)
        assert.equal(await storage.findActiveKey(hash('a')), undefined)
        assert.deepEqual(await storage.findActiveKey(hash('b')), { id: b.id, hash: hash('b'), scopes: [...SCOPES] })
        assert.equal(await storage.findActiveKey(hash('never')), undefined)
      })

      test('When a key is used, then touchKey records when, and nothing else changes', async () => {
        const { storage } = fixture
        const a = (await storage.createKey('a', SCOPES, hash('a'), T0))!
        await storage.touchKey(a.id, T1)
        assert.deepEqual(await storage.listKeys(), [{ ...a, lastUsedAt: T1 }])
        await storage.touchKey(a.id, T2)
        assert.deepEqual(await storage.listKeys(), [{ ...a, lastUsedAt: T2 }])
      })

      test('When keys are listed, then each has exactly id, name, scopes and its times: never a hash', async () => {
        const { storage } = fixture
        await storage.createKey('a', SCOPES, hash('a'), T0)
        await storage.createKey('b', SCOPES, hash('b'), T0)
        await storage.revokeKey('b', T1)
        const keys = await storage.listKeys()
        assert.equal(keys.length, 2)
        for (const key of keys) {
          assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'scopes'])
          for (const value of Object.values(key)) assert.ok(!Buffer.isBuffer(value) && !(value instanceof Uint8Array))
        }
        assert.deepEqual(
          keys.map((k) => k.name),
          ['a', 'b'],
        )
      })
    })

    describe('scopes', () => {
      test('When keys are made with scopes in any order, then each is stored, found and listed with exactly its own, in the order of SCOPES', async () => {
        const { storage } = fixture
        const a = (await storage.createKey('a', ['orders:read', 'inventory:write'], hash('a'), T0))!
        const b = (await storage.createKey('b', ['admin'], hash('b'), T0))!
        assert.deepEqual(a.scopes, ['inventory:write', 'orders:read'])
        assert.deepEqual(b.scopes, ['admin'])
        assert.deepEqual((await storage.findActiveKey(hash('a')))?.scopes, ['inventory:write', 'orders:read'])
        assert.deepEqual(await storage.getActiveKey(a.id), a)
        assert.deepEqual(
          (await storage.listKeys()).map((k) => k.scopes),
          [['inventory:write', 'orders:read'], ['admin']],
        )
      })

      test('When a key is revoked, then getActiveKey no longer finds it, and an unknown id finds nothing', async () => {
        const { storage } = fixture
        const a = (await storage.createKey('a', ['admin'], hash('a'), T0))!
        await storage.revokeKey(a.id, T1)
        assert.equal(await storage.getActiveKey(a.id), undefined)
        assert.equal(await storage.getActiveKey(424242), undefined)
      })
    })
  })
}
