import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { Pet } from '../../src/domain.js'
import { InvalidInputError } from '../../src/errors.js'
import { INT64_MAX, INT64_MIN } from '../../src/int64.js'
import { PetStatusSchema } from '../../src/inventory/inventory.schema.js'
import { PET_IMPORT_CHUNK_SIZE, openPetsFile } from '../../src/pets/import-pets.js'
import { CategorySchema, PetRecordSchema, TagSchema } from '../../src/pets/pet.schema.js'
import { createValidator } from '../../src/validation.js'

// Built exactly as src/cli.ts builds it for `petstore import pets`.
const validate = createValidator([PetStatusSchema, CategorySchema, TagSchema]).compile(PetRecordSchema)

const dir = mkdtempSync(join(tmpdir(), 'petstore-pets-unit-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
function write(text: string, extension = '.json'): string {
  const path = join(dir, `pets-${++files}${extension}`)
  writeFileSync(path, text)
  return path
}

/** Every pet of the file, read as `petstore import pets` reads it, with the sizes of its chunks. */
async function read(text: string, extension = '.json'): Promise<{ pets: Pet[]; chunks: number[] }> {
  const pets: Pet[] = []
  const chunks: number[] = []
  for await (const chunk of (await openPetsFile(write(text, extension), validate)).chunks) {
    chunks.push(chunk.length)
    pets.push(...chunk.map((r) => r.pet))
  }
  return { pets, chunks }
}

async function rejectsNaming(text: string, ...mentions: RegExp[]) {
  await assert.rejects(read(text), (error: unknown) => {
    assert.ok(error instanceof InvalidInputError, `an InvalidInputError, got ${String(error)}`)
    for (const pattern of mentions) assert.match(error.message, pattern)
    return true
  })
}

describe('openPetsFile: valid files', () => {
  test('When pets have every field or only the required ones, then they are read exactly, int64 ids included', async () => {
    const { pets } = await read(
      `\uFEFF[{"status":"sold","tags":[{"name":"a","id":${INT64_MIN}}],"photoUrls":["u"],"category":{"id":${INT64_MAX},"name":"c"},"name":"n","id":9007199254740993},\r\n` +
        ' {"id":0,"name":"x","photoUrls":[]}]',
    )
    assert.deepEqual(pets, [
      {
        id: 9007199254740993n,
        name: 'n',
        category: { id: INT64_MAX, name: 'c' },
        photoUrls: ['u'],
        tags: [{ id: INT64_MIN, name: 'a' }],
        status: 'sold',
      },
      { id: 0n, name: 'x', category: undefined, photoUrls: [], tags: [], status: undefined },
    ])
  })

  test('When a file holds more pets than a chunk, then they come in chunks of at most the chunk size', async () => {
    const count = PET_IMPORT_CHUNK_SIZE + 3
    const { pets, chunks } = await read(`[${Array.from({ length: count }, (_, i) => `{"id":${i},"name":"p","photoUrls":[]}`).join(',')}]`)
    assert.equal(pets.length, count)
    assert.deepEqual(chunks, [PET_IMPORT_CHUNK_SIZE, 3])
  })
})

describe('openPetsFile: invalid records name their entry and field', () => {
  const good = '{"id":1,"name":"a","photoUrls":[]}'
  const cases: [string, string, RegExp][] = [
    ['no id', '{"name":"a","photoUrls":[]}', /id/],
    ['a string id', '{"id":"2","name":"a","photoUrls":[]}', /pet\.id must be integer/],
    ['a fractional id', '{"id":2.5,"name":"a","photoUrls":[]}', /pet\.id/],
    ['an id written 2.0', '{"id":2.0,"name":"a","photoUrls":[]}', /pet\.id must be a decimal int64 integer/],
    ['an id of -0', '{"id":-0,"name":"a","photoUrls":[]}', /pet\.id must be a decimal int64 integer/],
    ['an id above int64', '{"id":9223372036854775808,"name":"a","photoUrls":[]}', /pet\.id must be a decimal int64 integer/],
    ['a category id with an exponent', '{"id":2,"name":"a","photoUrls":[],"category":{"id":1e3,"name":"c"}}', /pet\.category\.id must be a decimal int64/],
    ['a category without a name', '{"id":2,"name":"a","photoUrls":[],"category":{"id":1}}', /pet\.category.*name/],
    ['an empty name', '{"id":2,"name":"","photoUrls":[]}', /pet\.name/],
    ['no photoUrls', '{"id":2,"name":"a"}', /photoUrls/],
    ['a photo URL that is not a string', '{"id":2,"name":"a","photoUrls":[1]}', /pet\.photoUrls\.0/],
    ['a photo URL too long', `{"id":2,"name":"a","photoUrls":["${'u'.repeat(2049)}"]}`, /pet\.photoUrls\.0.*2048/],
    ['a tag with an unknown field', '{"id":2,"name":"a","photoUrls":[],"tags":[{"id":1,"name":"t","x":1}]}', /pet\.tags\.0 has unknown field 'x'/],
    ['a null status', '{"id":2,"name":"a","photoUrls":[],"status":null}', /status/],
    ['a number', '5', /must be an object/],
  ]
  for (const [label, entry, mention] of cases) {
    test(`When a pet has ${label}, then the error names entry 2 and the problem`, async () => {
      await rejectsNaming(`[${good},${entry}]`, /^entry 2\b/, mention)
    })
  }

  test('When the file is not an array of pets, then InvalidInputError says why', async () => {
    await rejectsNaming(good, /must be an array of \{id, name/)
    await rejectsNaming('[{"id":1,', /Not valid JSON/)
    await rejectsNaming('[{"id":1,"name":"a","name":"b","photoUrls":[]}]', /repeats the key 'name'/)
    await assert.rejects(read('[]', '.csv'), /Unsupported file type '\.csv'/)
  })
})
