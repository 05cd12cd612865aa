import { SCOPES } from '../../src/domain.js'
// InventoryReads, on every backend: exact int64 entries, the list sorted and from one snapshot, the change counters.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { InventoryItem } from '../../src/domain.js'
import { BACKENDS, useStorage } from './backends.js'
import { BEYOND_DOUBLE, INT64_MAX, INT64_MIN, actor, entriesJson, item, listItems, listText, seed } from './fixtures.js'

for (const backend of BACKENDS) {
  describe(`Storage contract: inventory reads (${backend.name})`, () => {
    describe('int64 petIds', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      // Imported out of order: the list must sort them as signed 64-bit integers, not as text or doubles.
      const imported: InventoryItem[] = [
        item(INT64_MAX, 5, 'sold'),
        item(0n, 3, 'pending'),
        item(BEYOND_DOUBLE, 4),
        item(-1n, 2),
        item(INT64_MIN, 1, 'pending'),
      ]
      const sorted = [...imported].sort((a, b) => (a.petId < b.petId ? -1 : 1))

      test('When entries with petIds at -2^63, -1, 0, 2^53+1 and 2^63-1 are imported, then getInventoryItem returns each exactly', async () => {
        const { storage } = fixture
        await seed(storage, imported)
        for (const i of imported) assert.deepEqual(await storage.getInventoryItem(i.petId), i)
        // Neighbours a double would round onto are not there.
        assert.equal(await storage.getInventoryItem(BEYOND_DOUBLE - 1n), undefined)
        assert.equal(await storage.getInventoryItem(INT64_MAX - 1n), undefined)
        assert.equal(await storage.getInventoryItem(INT64_MIN + 1n), undefined)
        assert.equal(await storage.getInventoryItem(1n), undefined)
      })

      test('When the inventory is listed, then its JSON is every entry, exact, sorted by petId as signed 64-bit', async () => {
        const { storage } = fixture
        const { text, entries } = await listText(storage)
        assert.equal(text, entriesJson(sorted))
        assert.equal(entries, 5)
        assert.deepEqual(await listItems(storage), sorted)
        // And the state is as it was: listing changes nothing.
        for (const i of imported) assert.deepEqual(await storage.getInventoryItem(i.petId), i)
      })
    })

    describe('empty inventory', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      test('When the inventory is empty, then the list hands over no entries, and getInventoryItem finds none', async () => {
        const { storage } = fixture
        const { text, entries } = await listText(storage)
        assert.equal(text, '')
        assert.equal(entries, 0)
        assert.equal(await storage.getInventoryItem(0n), undefined)
      })
    })

    describe('snapshot', () => {
      const fixture = useStorage(backend)
      const COUNT = 12_000
      const items = Array.from({ length: COUNT }, (_, i) => item(BigInt(i + 1), 1))

      test('When an entry later in the order is written while the list is being read, then the list shows the snapshot taken before the write', async () => {
        const { storage } = fixture
        assert.equal(
          await storage.importInventory(
            (async function* () {
              yield items.map((i, n) => ({ item: i, position: n + 1 }))
            })(),
          ),
          COUNT,
        )
        let written: unknown
        const { text, entries, pieces } = await listText(storage, async (piece) => {
          if (piece !== 1) return
          // The write commits (it is awaited) while the listing is between its first and second piece.
          written = await storage.writeStock({ kind: 'set', petId: BigInt(COUNT), quantity: 9, actor: actor() })
          // A write of an entry already handed over changes nothing either.
          await storage.writeStock({ kind: 'set', petId: 1n, quantity: 8, actor: actor() })
        })
        assert.ok(pieces >= 2, `the list came in ${pieces} pieces: it must span several for this test`)
        assert.deepEqual(written, item(BigInt(COUNT), 9))
        assert.equal(entries, COUNT)
        assert.equal(text, entriesJson(items), 'every entry as it was when the list started')
        // The write itself is there, and a list started after it sees it.
        assert.deepEqual(await storage.getInventoryItem(BigInt(COUNT)), item(BigInt(COUNT), 9))
        const after = await listItems(storage)
        assert.equal(after.length, COUNT)
        assert.deepEqual(after[0], item(1n, 8))
        assert.deepEqual(after[COUNT - 1], item(BigInt(COUNT), 9))
        assert.deepEqual(after.slice(1, -1), items.slice(1, -1))
      })
    })

    describe('pages', () => {
      const fixture = useStorage(backend, { scope: 'describe' })
      // Text order differs from numeric order here, and ±2^53 are where a double rounds.
      const ids = [INT64_MAX, 100n, -2n, 2n ** 53n, INT64_MIN, 10n, BEYOND_DOUBLE, -10n, 2n, -(2n ** 53n) - 1n, 0n, INT64_MIN + 1n]
      const statuses = ['available', 'pending', 'sold'] as const
      const imported = ids.map((petId, n) => item(petId, n, statuses[n % 3]))
      const sorted = [...imported].sort((a, b) => (a.petId < b.petId ? -1 : 1))

      test('When pages are asked after every petId, absent ones and both ends, with each limit and status, then each is the next entries by petId as signed 64-bit', async () => {
        const { storage } = fixture
        await seed(storage, imported)
        const before = await storage.versions()
        const afters = [undefined, ...ids, INT64_MIN + 2n, 1n, 11n, 2n ** 53n - 1n, INT64_MAX - 1n]
        for (const after of afters) {
          for (const limit of [1, 2, 3, 100]) {
            for (const status of [undefined, ...statuses]) {
              const expected = sorted
                .filter((i) => (after === undefined || i.petId > after) && (status === undefined || i.status === status))
                .slice(0, limit)
              assert.deepEqual(await storage.listInventory({ after, limit, status }), expected, `after ${after} limit ${limit} ${status}`)
            }
          }
        }
        assert.deepEqual(await storage.listInventory({ after: INT64_MAX, limit: 1000 }), [])
        assert.deepEqual(await storage.versions(), before, 'reading pages changes nothing')
      })

      test('When a walk continues after the last petId of each page while entries are written, then no entry comes twice and none that stayed is missed', async () => {
        const { storage } = fixture
        const seen: InventoryItem[] = []
        let extra = 0n
        for (let after: bigint | undefined, page: InventoryItem[]; ; after = page.at(-1)!.petId) {
          page = await storage.listInventory({ after, limit: 2 })
          seen.push(...page)
          if (page.length < 2) break
          // A new entry behind the cursor and one ahead; a quantity changed ahead.
          await seed(storage, [item(page[0]!.petId + 1n, 1), item(10_000n * ++extra, 1)])
          await storage.writeStock({ kind: 'set', petId: INT64_MAX, quantity: Number(extra), actor: actor() })
        }
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1]!.petId < seen[i]!.petId)
        const shown = new Set(seen.map((i) => i.petId))
        for (const i of imported) assert.ok(shown.has(i.petId), `${i.petId} shown`)
      })
    })

    describe('listing by status', () => {
      const fixture = useStorage(backend)

      test('When the list is read with a status, then it is the JSON of exactly the entries of that status, sorted, counted', async () => {
        const { storage } = fixture
        const imported = [
          item(INT64_MAX, 5, 'sold'),
          item(0n, 3, 'pending'),
          item(BEYOND_DOUBLE, 4, 'sold'),
          item(INT64_MIN, 1, 'sold'),
          item(-1n, 2),
        ]
        await seed(storage, imported)
        const sorted = [...imported].sort((a, b) => (a.petId < b.petId ? -1 : 1))
        for (const status of ['available', 'pending', 'sold'] as const) {
          const { text, entries } = await listText(storage, undefined, status)
          const expected = sorted.filter((i) => i.status === status)
          assert.equal(text, entriesJson(expected), status)
          assert.equal(entries, expected.length)
        }
        assert.equal((await listText(storage)).text, entriesJson(sorted), 'without a status, every entry')
      })

      test('When no entry has the status, then the list hands over nothing', async () => {
        const { storage } = fixture
        await seed(storage, [item(1n, 1), item(2n, 2, 'pending')])
        assert.deepEqual(await listText(storage, undefined, 'sold'), { text: '', entries: 0, pieces: 0 })
      })

      test('When few of many entries have the status, then the list of it has exactly them, from one snapshot though written while it is read', async () => {
        const { storage } = fixture
        const COUNT = 12_000
        // Sold: every 1000th entry (the last included); the others available.
        const items = Array.from({ length: COUNT }, (_, n) => item(BigInt(n + 1), 1, (n + 1) % 1000 === 0 ? 'sold' : 'available'))
        await seed(storage, items)
        const sold = items.filter((i) => i.status === 'sold')
        const { text, entries } = await listText(storage, undefined, 'sold')
        assert.equal(text, entriesJson(sold))
        assert.equal(entries, 12)
        // Written between the first and second piece: an entry ahead moves into the status, one out of it.
        const during = await listText(
          storage,
          async (piece) => {
            if (piece !== 1) return
            await seed(storage, [item(BigInt(COUNT - 1), 7, 'sold'), item(BigInt(COUNT), 7, 'available')])
          },
          'available',
        )
        assert.ok(during.pieces >= 2, `the list came in ${during.pieces} pieces: it must span several for this test`)
        assert.equal(during.text, entriesJson(items.filter((i) => i.status === 'available')), 'the snapshot from before the write')
        assert.equal(during.entries, COUNT - 12)
        assert.equal(
          (await listText(storage, undefined, 'sold')).text,
          entriesJson([...sold.slice(0, -1), item(BigInt(COUNT - 1), 7, 'sold')]),
        )
      })
    })

    describe('versions', () => {
      const fixture = useStorage(backend)

      test('When nothing is written, then versions() stays equal across reads of every kind', async () => {
        const { storage } = fixture
        await seed(storage, [item(1n, 1)])
        const before = await storage.versions()
        assert.equal(typeof before.inventory, 'string')
        assert.equal(typeof before.keys, 'string')
        await storage.getInventoryItem(1n)
        await listText(storage)
        await storage.listChanges({ after: 0n, limit: 10 })
        await storage.listKeys()
        await storage.findActiveKey(Buffer.alloc(32))
        assert.deepEqual(await storage.versions(), before)
        assert.deepEqual(await storage.versions(), before)
      })

      test('When this storage writes the inventory, then versions().inventory moves', async () => {
        const { storage } = fixture
        await seed(storage, [item(1n, 1)])
        const v0 = await storage.versions()
        assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 1n, quantity: 2, actor: actor() }), item(1n, 2))
        const v1 = await storage.versions()
        assert.notEqual(v1.inventory, v0.inventory)
        await seed(storage, [item(2n, 1)])
        const v2 = await storage.versions()
        assert.notEqual(v2.inventory, v1.inventory)
        assert.deepEqual(await storage.versions(), v2)
      })

      test('When another storage on the same database writes the inventory, then versions().inventory moves here', async () => {
        const { storage } = fixture
        await seed(storage, [item(1n, 1)])
        const other = await fixture.another()
        const v0 = await storage.versions()
        assert.deepEqual(await other.writeStock({ kind: 'set', petId: 1n, quantity: 3, actor: actor() }), item(1n, 3))
        const v1 = await storage.versions()
        assert.notEqual(v1.inventory, v0.inventory)
        assert.deepEqual(await storage.getInventoryItem(1n), item(1n, 3))
        await other.importInventory(
          (async function* () {
            yield [{ item: item(5n, 5), position: 1 }]
          })(),
        )
        assert.notEqual((await storage.versions()).inventory, v1.inventory)
        assert.deepEqual(await storage.getInventoryItem(5n), item(5n, 5))
      })

      test('When a key is created or revoked, here or by another storage, then versions().keys moves', async () => {
        const { storage } = fixture
        const other = await fixture.another()
        const v0 = await storage.versions()
        const created = await storage.createKey('alpha', SCOPES, Buffer.alloc(32, 1), '2026-01-01T00:00:00.000Z')
        assert.ok(created)
        const v1 = await storage.versions()
        assert.notEqual(v1.keys, v0.keys)
        assert.ok(await other.createKey('beta', SCOPES, Buffer.alloc(32, 2), '2026-01-01T00:00:00.000Z'))
        const v2 = await storage.versions()
        assert.notEqual(v2.keys, v1.keys)
        assert.ok(await other.revokeKey('alpha', '2026-01-02T00:00:00.000Z'))
        const v3 = await storage.versions()
        assert.notEqual(v3.keys, v2.keys)
        assert.ok(await storage.revokeKey('beta', '2026-01-02T00:00:00.000Z'))
        assert.notEqual((await storage.versions()).keys, v3.keys)
      })
    })
  })
}
