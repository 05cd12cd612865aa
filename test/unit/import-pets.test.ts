import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { PET_LIMITS, type Pet } from '../../src/domain.js'
import { InvalidInputError } from '../../src/errors.js'
import { IMPORT_RECORD_LIMIT } from '../../src/import/import-source.js'
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
    [
      'a category id with an exponent',
      '{"id":2,"name":"a","photoUrls":[],"category":{"id":1e3,"name":"c"}}',
      /pet\.category\.id must be a decimal int64/,
    ],
    ['a category without a name', '{"id":2,"name":"a","photoUrls":[],"category":{"id":1}}', /pet\.category.*name/],
    ['an empty name', '{"id":2,"name":"","photoUrls":[]}', /pet\.name/],
    ['no photoUrls', '{"id":2,"name":"a"}', /photoUrls/],
    ['a photo URL that is not a string', '{"id":2,"name":"a","photoUrls":[1]}', /pet\.photoUrls\[0\]/],
    ['a photo URL too long', `{"id":2,"name":"a","photoUrls":["${'u'.repeat(2049)}"]}`, /pet\.photoUrls\[0\].*2048/],
    [
      'a tag with an unknown field',
      '{"id":2,"name":"a","photoUrls":[],"tags":[{"id":1,"name":"t","x":1}]}',
      /pet\.tags\[0\] has unknown field "x"/,
    ],
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
    await rejectsNaming('[{"id":1,"name":"a","name":"b","photoUrls":[]}]', /repeats the key "name"/)
    await assert.rejects(read('[]', '.csv'), /Unsupported file type '\.csv'/)
  })
})

describe('openPetsFile: only regular files, and records within the limit', () => {
  test('When the pets .json is a symlink to /dev/zero, then it is refused at once as a device', async () => {
    const path = join(dir, 'zero', 'pets.json')
    mkdirSync(join(path, '..'))
    symlinkSync('/dev/zero', path)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('still reading /dev/zero after 5000 ms')), 5000)
    })
    const reading = (async () => {
      for await (const _ of (await openPetsFile(path, validate)).chunks);
    })()
    try {
      await assert.rejects(Promise.race([reading, timeout]), (error: unknown) => {
        assert.ok(error instanceof InvalidInputError, `an InvalidInputError, got ${String(error)}`)
        assert.match(error.message, /^Cannot read .*pets\.json: it is a device; import reads regular files only$/)
        return true
      })
    } finally {
      clearTimeout(timer)
    }
  })

  const good = '{"id":1,"name":"a","photoUrls":[]}'
  const cases: [string, string][] = [
    ['a name of 200,000 characters', `{"id":2,"name":"${'n'.repeat(200_000)}","photoUrls":[]}`],
    [
      '50 photo URLs of 2,000 characters',
      `{"id":2,"name":"a","photoUrls":[${Array.from({ length: 50 }, () => `"${'u'.repeat(2000)}"`).join(',')}]}`,
    ],
    ['tags nested 40,000 deep', `{"id":2,"name":"a","photoUrls":[],"tags":${'['.repeat(40_000)}${']'.repeat(40_000)}}`],
  ]
  for (const [label, entry] of cases) {
    test(`When a pet holds ${label}, then it is refused naming the entry and the limit`, async () => {
      assert.equal(IMPORT_RECORD_LIMIT, 65536)
      await rejectsNaming(`[${good},\n${entry},${good}]`, /^entry 2: larger than the limit of 65536 characters\b/)
    })
  }

  test('When a pet is at every limit of its fields, then it is read whole: the record limit refuses no valid pet', async () => {
    const longName = (c: string) => c.repeat(PET_LIMITS.nameLength)
    const pet = {
      id: '9223372036854775807',
      name: longName('n'),
      category: { id: '-9223372036854775808', name: longName('c') },
      photoUrls: Array.from({ length: PET_LIMITS.photoUrls }, (_, i) => `${i}`.padEnd(PET_LIMITS.photoUrlLength, 'u')),
      tags: Array.from({ length: PET_LIMITS.tags }, (_, i) => ({ id: `-922337203685477580${i % 9}`, name: longName('t') })),
      status: 'available',
    }
    // Ids as bare digits, as a real file holds them.
    const text = JSON.stringify(pet).replace(/"(-?\d{10,})"/g, '$1')
    assert.ok(text.length > IMPORT_RECORD_LIMIT * 0.7, `${text.length} characters: near the limit`)
    const { pets } = await read(`[${text}]`)
    assert.equal(pets.length, 1)
    assert.equal(pets[0]!.id, INT64_MAX)
    assert.equal(pets[0]!.photoUrls.length, PET_LIMITS.photoUrls)
    assert.equal(pets[0]!.tags.length, PET_LIMITS.tags)
  })
})
