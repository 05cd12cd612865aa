import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { CHANGE_SCAN, InventoryService } from '../../src/inventory/inventory.service.js'
import { SqliteStorage } from '../../src/storage/sqlite/sqlite.storage.js'
import type { ImportRecord } from '../../src/domain.js'

// The ledger has no index by pet: one pet's rows are read window by window. Two imports of 25,000
// pets give pet p the seqs p and 25,000 + p, three windows apart.
const PETS = 25_000
const dir = mkdtempSync(join(tmpdir(), 'petstore-windows-'))
let storage: SqliteStorage
let inventory: InventoryService

async function* records(quantity: number): AsyncIterable<ImportRecord[]> {
  const chunk = (start: number) =>
    Array.from({ length: 5000 }, (_, i) => ({
      item: { petId: BigInt(start + i + 1), quantity, status: 'available' as const },
      position: start + i + 1,
    }))
  for (let start = 0; start < PETS; start += 5000) yield chunk(start)
}

describe('reading one pet from the ledger in bounded windows (sqlite)', () => {
  before(async () => {
    storage = SqliteStorage.open(join(dir, 'p.db'))
    // One window per request here, to see the windows; the service reads up to CHANGE_SCAN.windows.
    inventory = new InventoryService(storage, { window: 10_000n, windows: 1 })
    await storage.importInventory(records(1))
    await storage.importInventory(records(2))
  })
  after(async () => {
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('When the feed is filtered by pet, then each page reads one window and the Links lead through every row of that pet, then stop', async () => {
    const pages: { seqs: bigint[]; nextAfter: bigint | undefined }[] = []
    let cursor: bigint | undefined = 0n
    while (cursor !== undefined && pages.length < 20) {
      const { rows, nextAfter }: { rows: { seq: bigint }[]; nextAfter?: bigint } = await inventory.changesPage(cursor, 100, 5n)
      pages.push({ seqs: rows.map((r) => r.seq), nextAfter })
      cursor = nextAfter
    }
    assert.deepEqual(pages, [
      { seqs: [5n], nextAfter: 10_000n },
      { seqs: [], nextAfter: 20_000n },
      { seqs: [25_005n], nextAfter: 30_000n },
      { seqs: [], nextAfter: 40_000n },
      { seqs: [], nextAfter: undefined },
    ])
  })

  test('When a request may read several windows, then it reads on until its page is full or the ledger ends', async () => {
    assert.deepEqual(CHANGE_SCAN, { window: 10_000n, windows: 10 })
    const several = new InventoryService(storage, { window: 10_000n, windows: 3 })
    const first = await several.changesPage(0n, 100, 5n)
    assert.deepEqual([first.rows.map((r) => r.seq), first.nextAfter], [[5n, 25_005n], 30_000n])
    const rest = await several.changesPage(30_000n, 100, 5n)
    assert.deepEqual([rest.rows.map((r) => r.seq), rest.nextAfter], [[], undefined])
    const one = await several.changesPage(0n, 1, 5n)
    assert.deepEqual([one.rows.map((r) => r.seq), one.nextAfter], [[5n], 5n])
    const whole = await new InventoryService(storage).changesPage(0n, 100, 5n)
    assert.deepEqual([whole.rows.map((r) => r.seq), whole.nextAfter], [[5n, 25_005n], undefined])
  })

  test('When a page fills before its window ends, then the next one starts after its last row', async () => {
    const first = await inventory.changesPage(0n, 1, 5n)
    assert.deepEqual([first.rows.map((r) => r.seq), first.nextAfter], [[5n], 10_000n])
    const unfiltered = await inventory.changesPage(49_990n, 5)
    assert.deepEqual([unfiltered.rows.map((r) => r.seq), unfiltered.nextAfter], [[49_991n, 49_992n, 49_993n, 49_994n, 49_995n], 49_995n])
    const end = await inventory.changesPage(49_995n, 5)
    assert.deepEqual([end.rows.length, end.nextAfter], [5, undefined])
  })

  test('When a history is read, then it walks back through the windows, newest first, up to the limit', async () => {
    assert.deepEqual(
      (await inventory.history(5n, 10)).map((r) => [r.seq, r.quantity]),
      [
        [25_005n, 2],
        [5n, 1],
      ],
    )
    assert.deepEqual(
      (await inventory.history(5n, 1)).map((r) => r.seq),
      [25_005n],
    )
    assert.deepEqual(await inventory.history(BigInt(PETS + 1), 10), [])
  })
})
