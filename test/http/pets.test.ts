import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, inventoryFile, runCli, type Response } from '../support/helpers.js'

const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const ABOVE_DOUBLE = 9007199254740993n // 2^53 + 1

// Dates of their own, so the headers are seen to follow the configuration, not the defaults.
const DEPRECATED_AT = '2026-03-04T05:06:07.890Z'
const SUNSET_AT = '2099-12-31T23:59:59Z'
const LINK = '</v1/docs#/pets/getPetById>; rel="deprecation", </v1/docs#/pets/getPetById>; rel="sunset"'

const files = mkdtempSync(join(tmpdir(), 'petstore-pets-'))
after(() => rmSync(files, { recursive: true, force: true }))
let fileCount = 0
/** Writes a pets import file as given, so ids of any size stay exact, and returns its path. */
function petsFile(text: string, extension = '.json'): string {
  const path = join(files, `pets-${++fileCount}${extension}`)
  writeFileSync(path, text)
  return path
}

const ok = (result: { code: number | null; stderr: string }) => assert.equal(result.code, 0, result.stderr)

/** The three deprecation headers exactly, for the given configuration. */
function assertDeprecationHeaders(res: Response, deprecatedAt: string, sunsetAt: string, where: string) {
  assert.equal(res.headers.get('deprecation'), `@${Math.floor(Date.parse(deprecatedAt) / 1000)}`, where)
  assert.equal(res.headers.get('sunset'), new Date(sunsetAt).toUTCString(), where)
  assert.equal(res.headers.get('link'), LINK, where)
}

const DOGGIE =
  `{"id":${INT64_MAX},"name":"doggie","category":{"id":${ABOVE_DOUBLE},"name":"Dogs"},` +
  `"photoUrls":["https://img.example/1.jpg","ü \\"quoted\\""],"tags":[{"id":${INT64_MIN},"name":"good"},{"id":0,"name":"boy"}],"status":"pending"}`

for (const backend of BACKENDS) {
  describe(`the deprecated pet lookup before its sunset (${backend.name})`, () => {
    const suite = useAppSuite(backend, {
      env: { PET_LOOKUP_DEPRECATED_AT: DEPRECATED_AT, PET_LOOKUP_SUNSET_AT: SUNSET_AT },
      seed: [{ petId: 7, quantity: 3, status: 'available' }],
    })
    const cli = (...args: string[]) => suite.server.cli(args)
    /** GET /v1/pets/{id} with the suite's key, another, or (null) none. */
    const getPet = (id: string | bigint, token: string | null = suite.token) =>
      suite.server.request('GET', `/v1/pets/${id}`, { token: token ?? undefined })
    const entry = async (petId: bigint) =>
      (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).body.find((i: { petId: bigint }) => i.petId === petId)

    test('When a pet is imported, then GET answers it exactly, ids digit for digit, with the deprecation headers', async () => {
      ok(await cli('import', 'pets', petsFile(`[${DOGGIE}]`)))
      const res = await getPet(INT64_MAX)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal(
        res.text,
        `{"id":${INT64_MAX},"name":"doggie","category":{"id":${ABOVE_DOUBLE},"name":"Dogs"},` +
          `"photoUrls":["https://img.example/1.jpg","ü \\"quoted\\""],"tags":[{"id":${INT64_MIN},"name":"good"},{"id":0,"name":"boy"}],"status":"pending"}`,
      )
      assertDeprecationHeaders(res, DEPRECATED_AT, SUNSET_AT, '200')
    })

    test('When a pet has no category, tags or inventory entry, then category and status are omitted and tags is empty', async () => {
      ok(await cli('import', 'pets', petsFile('[{"id":-5,"name":"stray","photoUrls":[]}]')))
      const res = await getPet(-5n)
      assert.equal(res.status, 200)
      assert.equal(res.text, '{"id":-5,"name":"stray","photoUrls":[],"tags":[]}')
      assert.equal(await entry(-5n), undefined, 'no inventory entry was made for a pet without status')
    })

    test('When a pet is imported with a status and has an inventory entry, then the entry takes the status and keeps its quantity', async () => {
      ok(await cli('import', 'pets', petsFile('[{"id":7,"name":"rex","photoUrls":[],"status":"sold"}]')))
      assert.deepEqual(await entry(7n), { petId: 7n, quantity: 3, status: 'sold' })
      assert.equal((await getPet(7n)).body.status, 'sold')
    })

    test('When a pet is imported with a status and has no inventory entry, then the entry is created with quantity 0, and the ledger records it', async () => {
      const changes = async (petId: bigint) =>
        (await suite.server.request('GET', `/v1/inventory/changes?petId=${petId}`, { token: suite.token })).body as Record<
          string,
          unknown
        >[]
      const before7 = (await changes(7n)).length
      ok(
        await cli(
          'import',
          'pets',
          petsFile('[{"id":8,"name":"tom","photoUrls":[],"status":"available"},{"id":7,"name":"rex","photoUrls":[],"status":"sold"}]'),
        ),
      )
      assert.deepEqual(await entry(8n), { petId: 8n, quantity: 0, status: 'available' })
      const [created, ...more] = await changes(8n)
      assert.deepEqual(more, [], 'one row for the created entry')
      assert.deepEqual(
        { ...created, seq: undefined, at: undefined },
        {
          seq: undefined,
          petId: 8n,
          previousQuantity: null,
          quantity: 0,
          reason: 'import',
          orderId: null,
          batchId: null,
          keyId: null,
          requestId: null,
          note: null,
          at: undefined,
        },
      )
      assert.equal((await changes(7n)).length, before7, 'a status change of an existing entry is no change of quantity: no row')
    })

    test("When the inventory is imported or patched, then the status the pet shows is the entry's, and its quantity is untouched by pets", async () => {
      ok(await cli('import', 'inventory', inventoryFile([{ petId: 8, quantity: 12, status: 'pending' }])))
      assert.equal((await getPet(8n)).body.status, 'pending')
      const patched = await suite.server.request('PATCH', '/v1/inventory/8', { token: suite.token, body: { quantity: 4 } })
      assert.equal(patched.status, 200)
      assert.equal((await getPet(8n)).body.status, 'pending')
      // A pet imported again without a status leaves the entry as it is.
      ok(await cli('import', 'pets', petsFile('[{"id":8,"name":"tom","photoUrls":[]}]')))
      assert.deepEqual(await entry(8n), { petId: 8n, quantity: 4, status: 'pending' })
      assert.equal((await getPet(8n)).body.status, 'pending')
    })

    test('When a pet is imported again, then its record is replaced whole', async () => {
      ok(
        await cli(
          'import',
          'pets',
          petsFile('[{"id":9,"name":"old","category":{"id":1,"name":"Cats"},"photoUrls":["a"],"tags":[{"id":1,"name":"x"}]}]'),
        ),
      )
      ok(await cli('import', 'pets', petsFile('[{"id":9,"name":"new","photoUrls":["b","c"]}]')))
      assert.equal((await getPet(9n)).text, '{"id":9,"name":"new","photoUrls":["b","c"],"tags":[]}')
    })

    test('When no pet has the id, then 404 with an Error and the headers', async () => {
      const res = await getPet(ABOVE_DOUBLE - 1n)
      assert.equal(res.status, 404)
      assert.deepEqual(res.body, { code: 'not_found', message: res.body.message, status: 404 })
      assertDeprecationHeaders(res, DEPRECATED_AT, SUNSET_AT, '404')
    })

    test('When the key is missing or the id malformed, too long or the method wrong, then the error carries the headers too', async () => {
      const cases: [string, Promise<Response>, number][] = [
        ['no key', getPet(1n, null), 401],
        ['an unknown key', getPet(1n, `psk_${'A'.repeat(43)}`), 401],
        ['a malformed id', getPet('01'), 400],
        ['an id beyond int64', getPet(INT64_MAX + 1n), 400],
        ['an undecodable id', getPet('%zz'), 400],
        ['a too long id', getPet('9'.repeat(9000)), 414],
        ['DELETE', suite.server.request('DELETE', '/v1/pets/1', { token: suite.token }), 405],
      ]
      for (const [label, pending, status] of cases) {
        const res = await pending
        assert.equal(res.status, status, `${label}: ${res.text}`)
        assertDeprecationHeaders(res, DEPRECATED_AT, SUNSET_AT, label)
      }
      // Other paths carry none of them.
      const other = await suite.server.request('GET', '/v1/inventory/7', { token: suite.token })
      assert.equal(other.headers.get('deprecation'), null)
      assert.equal(other.headers.get('sunset'), null)
    })

    // Each bad file starts with a valid pet 100 (status sold, and an inventory entry for pet 7), which must not be applied either.
    const good = '{"id":100,"name":"first","photoUrls":[],"status":"sold"},{"id":7,"name":"rex","photoUrls":[],"status":"pending"}'
    const invalid: [string, string, RegExp[]][] = [
      [
        'a repeated id',
        `[${good},{"id":100,"name":"again","photoUrls":[]}]`,
        [/^Error: entry 3: id 100 appears twice \(first at entry 1\)$/m],
      ],
      ['a missing name', `[${good},{"id":101,"photoUrls":[]}]`, [/entry 3 \(id 101\)/, /name/]],
      ['a name too long', `[${good},{"id":101,"name":"${'n'.repeat(256)}","photoUrls":[]}]`, [/entry 3/, /pet\.name/, /255/]],
      [
        'too many photo URLs',
        `[${good},{"id":101,"name":"a","photoUrls":[${Array(21).fill('"u"').join(',')}]}]`,
        [/entry 3/, /photoUrls/, /20/],
      ],
      [
        'too many tags',
        `[${good},{"id":101,"name":"a","photoUrls":[],"tags":[${Array.from({ length: 21 }, (_, i) => `{"id":${i},"name":"t"}`).join(',')}]}]`,
        [/entry 3/, /tags/],
      ],
      [
        'a tag id beyond int64',
        `[${good},{"id":101,"name":"a","photoUrls":[],"tags":[{"id":9223372036854775808,"name":"t"}]}]`,
        [/entry 3/, /pet\.tags\.0\.id/, /int64/],
      ],
      ['an unknown status', `[${good},{"id":101,"name":"a","photoUrls":[],"status":"lost"}]`, [/entry 3/, /available, pending, sold/]],
      ['an unknown field', `[${good},{"id":101,"name":"a","photoUrls":[],"owner":"me"}]`, [/entry 3/, /owner/]],
      ['a CSV file', 'id,name\n1,a\n', [/\.csv/, /json/]],
    ]
    for (const [label, text, mentions] of invalid) {
      test(`When the pets file has ${label}, then it fails naming the place and the problem, and nothing changes`, async () => {
        const inventoryBefore = (await suite.server.request('GET', '/v1/inventory', { token: suite.token })).text
        const result = await cli('import', 'pets', petsFile(text, label === 'a CSV file' ? '.csv' : '.json'))
        assert.equal(result.code, 1, result.stderr)
        for (const mention of mentions) assert.match(result.stderr, mention)
        assert.doesNotMatch(result.stderr, /Unexpected failure|^\s+at /m, 'a plain error message, not a crash')
        assert.equal((await getPet(100n)).status, 404)
        assert.equal((await suite.server.request('GET', '/v1/inventory', { token: suite.token })).text, inventoryBefore)
      })
    }

    test('When a large file repeats an id chunks after its first use, then it fails naming both entries, and nothing changes', async () => {
      const pets = Array.from({ length: 1200 }, (_, i) => `{"id":${200_000 + i},"name":"p${i}","photoUrls":[],"status":"sold"}`)
      pets[1100] = '{"id":200002,"name":"late","photoUrls":[]}'
      const result = await cli('import', 'pets', petsFile(`[${pets.join(',')}]`))
      assert.equal(result.code, 1)
      assert.match(result.stderr, /^Error: entry 1101: id 200002 appears twice \(first at entry 3\)$/m)
      assert.equal((await getPet(200_000n)).status, 404)
      assert.equal(await entry(200_000n), undefined)
    })

    test('When a large file is imported, then every pet and status arrives', async () => {
      const pets = Array.from({ length: 1200 }, (_, i) => `{"id":${300_000 + i},"name":"p${i}","photoUrls":[],"status":"sold"}`)
      const result = await cli('import', 'pets', petsFile(`[${pets.join(',')}]`))
      ok(result)
      assert.match(result.stderr, /Imported 1200 pets/)
      assert.equal((await getPet(301_199n)).body.name, 'p1199')
      assert.deepEqual(await entry(300_000n), { petId: 300_000n, quantity: 0, status: 'sold' })
    })
  })

  describe(`the deprecated pet lookup from its sunset (${backend.name})`, () => {
    const deprecatedAt = '2020-01-01T00:00:00Z'
    const sunsetAt = '2021-06-30T12:00:00Z'
    const suite = useAppSuite(backend, {
      env: { PET_LOOKUP_DEPRECATED_AT: deprecatedAt, PET_LOOKUP_SUNSET_AT: sunsetAt },
      seed: [{ petId: 1, quantity: 1, status: 'available' }],
    })

    test('When the sunset has passed, then every request to the path is 410 gone, before authentication and validation, with the headers', async () => {
      ok(await suite.server.cli(['import', 'pets', petsFile('[{"id":1,"name":"gone","photoUrls":[]}]')]))
      for (const [label, path, token] of [
        ['a good key', '/v1/pets/1', suite.token],
        ['no key', '/v1/pets/1', undefined],
        ['a malformed id', '/v1/pets/01', undefined],
      ] as const) {
        const res = await suite.server.request('GET', path, { token })
        assert.equal(res.status, 410, label)
        assert.deepEqual(res.body, { code: 'gone', message: res.body.message, status: 410 }, label)
        assert.match(res.body.message, /2021-06-30T12:00:00\.000Z/)
        assertDeprecationHeaders(res, deprecatedAt, sunsetAt, label)
      }
      assert.equal((await suite.server.request('GET', '/v1/inventory/1', { token: suite.token })).status, 200, 'the inventory is not gone')
    })
  })
}

describe('pet lookup configuration', () => {
  test('When PET_LOOKUP_SUNSET_AT precedes PET_LOOKUP_DEPRECATED_AT, then serve exits 2 with one line naming it and creates nothing', async () => {
    const database = join(files, 'never-created', 'petstore.db')
    const result = await runCli(['serve'], {
      DATABASE_URL: `sqlite:${database}`,
      PORT: '0',
      PET_LOOKUP_DEPRECATED_AT: '2027-01-01T00:00:00Z',
      PET_LOOKUP_SUNSET_AT: '2026-12-31T23:59:59Z',
    })
    assert.equal(result.code, 2)
    assert.match(result.stderr, /^Invalid configuration:\nPET_LOOKUP_SUNSET_AT="2026-12-31T23:59:59Z" is invalid: [^\n]+\n$/)
  })

  test('When a pet lookup date is not RFC 3339, then serve exits 2 naming it', async () => {
    const result = await runCli(['serve'], {
      DATABASE_URL: `sqlite:${join(files, 'never', 'p.db')}`,
      PET_LOOKUP_DEPRECATED_AT: '01/01/2026',
    })
    assert.equal(result.code, 2)
    assert.match(result.stderr, /^PET_LOOKUP_DEPRECATED_AT="01\/01\/2026" is invalid: expected an RFC 3339 date-time/m)
  })
})
