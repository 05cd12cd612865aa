// Imports, on every backend: all or nothing, repeated ids refused with both positions, one ledger row per record in file order.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { ImportRecord, InventoryItem, Pet, PetImportRecord } from '../../src/domain.js'
import { DuplicatePetIdError } from '../../src/errors.js'
import { BACKENDS, useStorage } from './backends.js'
import { BEYOND_DOUBLE, INT64_MIN, actor, changesAfter, chunksOf, expectChanges, item, listItems, now, row, seed } from './fixtures.js'

const START = [item(5n, 1), item(6n, 2, 'sold')]

/** Records in chunks, then `failure` thrown where the next chunk would come. */
async function* failingAfter(chunks: ImportRecord[][], failure: Error): AsyncGenerator<ImportRecord[]> {
  for (const chunk of chunks) yield chunk
  throw failure
}

const records = (items: InventoryItem[], from = 1) => items.map((i, n) => ({ item: i, position: from + n }))

const pet = (id: bigint, name: string, status?: Pet['status']): Pet => ({
  id,
  name,
  photoUrls: [`https://example.com/${name}.jpg`],
  tags: [{ id: BEYOND_DOUBLE, name: 'exact' }],
  category: { id: INT64_MIN, name: 'cats' },
  ...(status ? { status } : {}),
})

async function* petChunks(pets: Pet[], chunkSize = 2): AsyncGenerator<PetImportRecord[]> {
  const all = pets.map((p, n) => ({ pet: p, position: n + 1 }))
  for (let i = 0; i < all.length; i += chunkSize) yield all.slice(i, i + chunkSize)
}

for (const backend of BACKENDS) {
  describe(`Storage contract: imports (${backend.name})`, () => {
    const fixture = useStorage(backend)

    /** The inventory and the ledger as they stand, to compare after a refused import. */
    const snapshot = async () => ({ items: await listItems(fixture.storage), changes: await changesAfter(fixture.storage) })

    describe('importInventory', () => {
      test('When an inventory is imported, then every record is written, with one import row per record in file order', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const from = now()
        const count = await storage.importInventory(chunksOf([item(9n, 3, 'pending'), item(5n, 4, 'sold'), item(-1n, 0), item(6n, 2)], 3))
        const to = now()
        assert.equal(count, 4)
        assert.deepEqual(await listItems(storage), [item(-1n, 0), item(5n, 4, 'sold'), item(6n, 2), item(9n, 3, 'pending')])
        expectChanges(
          await changesAfter(storage, 2n),
          [row(3n, 9n, null, 3, 'import'), row(4n, 5n, 1, 4, 'import'), row(5n, -1n, null, 0, 'import'), row(6n, 6n, 2, 2, 'import')],
          from,
          to,
        )
        assert.equal(await storage.lastChangeSeq(), 6n)
      })

      test('When the chunks throw halfway, then the import rejects with that error and the inventory and the ledger are as before', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        const failure = new Error('the file broke off')
        await assert.rejects(
          storage.importInventory(failingAfter([records([item(5n, 50), item(7n, 70)]), records([item(8n, 80)], 3)], failure)),
          (error) => error === failure,
        )
        assert.deepEqual(await snapshot(), before)
        assert.equal(await storage.getInventoryItem(7n), undefined)
        // And the storage imports again afterwards.
        assert.equal(await storage.importInventory(chunksOf([item(7n, 7)])), 1)
        assert.deepEqual(await storage.getInventoryItem(7n), item(7n, 7))
      })

      test('When a petId repeats in another chunk, then DuplicatePetIdError names it with both positions and nothing is applied', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        await assert.rejects(
          storage.importInventory(chunksOf([item(7n, 1), item(BEYOND_DOUBLE, 2), item(9n, 3), item(10n, 4), item(BEYOND_DOUBLE, 5)], 2)),
          (error) => {
            assert.ok(error instanceof DuplicatePetIdError)
            assert.deepEqual([error.petId, error.firstPosition, error.position], [BEYOND_DOUBLE, 2, 5])
            return true
          },
        )
        assert.deepEqual(await snapshot(), before)
      })

      test('When a petId repeats within one chunk, then DuplicatePetIdError names the first repetition with both positions', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        await assert.rejects(storage.importInventory(chunksOf([item(7n, 1), item(8n, 2), item(7n, 3), item(8n, 4)], 10)), (error) => {
          assert.ok(error instanceof DuplicatePetIdError)
          assert.deepEqual([error.petId, error.firstPosition, error.position], [7n, 1, 3])
          return true
        })
        assert.deepEqual(await snapshot(), before)
      })

      test('When an empty file is imported, then it answers 0 and changes nothing', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        assert.equal(await storage.importInventory(chunksOf([])), 0)
        assert.deepEqual(await snapshot(), before)
      })
    })

    describe('importPets', () => {
      test("When pets are imported, then each pet with a status sets its entry's status, creating it with quantity 0 and an import row", async () => {
        const { storage } = fixture
        await seed(storage, START)
        const pets = [pet(6n, 'six', 'available'), pet(7n, 'seven', 'pending'), pet(8n, 'eight'), pet(5n, 'five')]
        const from = now()
        assert.equal(await storage.importPets(petChunks(pets)), 4)
        const to = now()
        // 6's quantity is kept, its status set; 7 gets an entry; 8 and 5 have no status: 8 gets no entry, 5's is kept.
        assert.deepEqual(await listItems(storage), [item(5n, 1), item(6n, 2), item(7n, 0, 'pending')])
        expectChanges(await changesAfter(storage, 2n), [row(3n, 7n, null, 0, 'import')], from, to)
        assert.deepEqual(await storage.getPet(6n), pets[0])
        assert.deepEqual(await storage.getPet(7n), pets[1])
        assert.deepEqual(await storage.getPet(8n), pets[2])
        assert.deepEqual(await storage.getPet(5n), { ...pets[3], status: 'available' }, "a pet's status is its entry's")
        assert.equal(await storage.getPet(9n), undefined)
      })

      test('When the pet chunks throw halfway, then nothing is changed', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        const failure = new Error('broken pets file')
        const chunks = (async function* () {
          yield [{ pet: pet(7n, 'seven', 'sold'), position: 1 }]
          throw failure
        })()
        await assert.rejects(storage.importPets(chunks), (error) => error === failure)
        assert.deepEqual(await snapshot(), before)
        assert.equal(await storage.getPet(7n), undefined)
      })

      test('When a pet id repeats, then DuplicatePetIdError names it with both positions and nothing is applied', async () => {
        const { storage } = fixture
        await seed(storage, START)
        const before = await snapshot()
        await assert.rejects(storage.importPets(petChunks([pet(7n, 'a', 'sold'), pet(8n, 'b'), pet(7n, 'c')], 2)), (error) => {
          assert.ok(error instanceof DuplicatePetIdError)
          assert.deepEqual([error.petId, error.firstPosition, error.position], [7n, 1, 3])
          return true
        })
        assert.deepEqual(await snapshot(), before)
        assert.equal(await storage.getPet(7n), undefined)
      })

      test('When a pet is imported again, then it is replaced whole, and a stock write meanwhile keeps its quantity', async () => {
        const { storage } = fixture
        await storage.importPets(petChunks([pet(7n, 'seven', 'available')]))
        assert.deepEqual(await storage.writeStock({ kind: 'set', petId: 7n, quantity: 4, actor: actor() }), item(7n, 4))
        const replaced: Pet = { id: 7n, name: 'seven again', photoUrls: [], tags: [], status: 'sold' }
        assert.equal(await storage.importPets(petChunks([replaced])), 1)
        assert.deepEqual(await storage.getPet(7n), replaced)
        assert.deepEqual(await storage.getInventoryItem(7n), item(7n, 4, 'sold'))
        assert.equal(await storage.lastChangeSeq(), 2n)
      })
    })
  })
}
