import { CLI_ACTOR } from '../../src/domain.js'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { FreshCache } from '../../src/cache/fresh-cache.js'
import { InventoryService } from '../../src/inventory/inventory.service.js'
import { SqliteStorage } from '../../src/storage/sqlite/sqlite.storage.js'

describe('FreshCache: the per-request counter read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-fresh-'))
  let storage: SqliteStorage
  let reads = 0

  before(async () => {
    storage = SqliteStorage.open(join(dir, 'petstore.db'))
    const versions = storage.versions.bind(storage)
    storage.versions = () => {
      reads++
      return versions()
    }
    await new InventoryService(storage).importFile({
      chunks: (async function* () {
        yield [{ item: { petId: 1n, quantity: 1, status: 'available' as const }, position: 1 }]
      })(),
      where: String,
    })
  })
  after(async () => {
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('When requests arrive in the same turn, then they share one read, started after the last of them', async () => {
    const cache = new FreshCache(storage)
    reads = 0
    const all = await Promise.all(Array.from({ length: 50 }, () => cache.versions()))
    assert.equal(reads, 1)
    assert.equal(new Set(all.map((v) => v.inventory)).size, 1)
  })

  test('When a write commits after a read was shared, then a request arriving after it gets a new read that sees it', async () => {
    const cache = new FreshCache(storage)
    const first = await cache.versions()
    const written = await storage.writeStock({ kind: 'set', petId: 1n, quantity: 2, actor: CLI_ACTOR })
    assert.notEqual(written, 'not_found')
    reads = 0
    const next = await cache.versions()
    assert.equal(reads, 1)
    assert.notEqual(next.inventory, first.inventory, 'the write moved the counter')
  })

  test('When a request arrives while a read is already under way, then it waits for a read of its own', async () => {
    const cache = new FreshCache(storage)
    reads = 0
    const early = cache.versions()
    // Let the shared read start, then arrive.
    await new Promise((resolve) => setImmediate(resolve))
    const late = cache.versions()
    await Promise.all([early, late])
    assert.equal(reads, 2)
  })
})
