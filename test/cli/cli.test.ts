import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { openStorage } from '../../src/storage/open-storage.js'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, createKey, inventoryFile, runCli, sqliteDatabase } from '../support/helpers.js'

const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const ABOVE_DOUBLE = 9007199254740993n // 2^53 + 1
const EXAMPLES = fileURLToPath(new URL('../../../examples/', import.meta.url))

const files = mkdtempSync(join(tmpdir(), 'petstore-cli-'))
let fileCount = 0
/** Writes `text` to a fresh file with the given extension and returns its path. */
function file(extension: string, text: string): string {
  const path = join(files, `import-${++fileCount}${extension}`)
  writeFileSync(path, text)
  return path
}
after(() => rmSync(files, { recursive: true, force: true }))

const ok = (result: { code: number | null; stderr: string }) => assert.equal(result.code, 0, result.stderr)

for (const backend of BACKENDS) {
  describe(`petstore CLI beside a running server (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const issued: string[] = []
    before(() => issued.push(suite.token))

    const cli = (...args: string[]) => suite.server.cli(args)
    const get = (token = suite.token) => suite.server.request('GET', '/v1/inventory', { token })
    const entry = async (petId: bigint) => (await get()).body.find((i: { petId: bigint }) => i.petId === petId)
    /** The id `keys list` shows for the active key with this name. */
    const idOf = async (name: string) => {
      const [header, ...rows] = (await cli('keys', 'list')).stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'))
      return rows.find((r) => r[1] === name && r[header!.indexOf('REVOKED')] === '-')?.[0]
    }

    test('When a key is created, then stdout holds only the token, and the running server accepts it at once', async () => {
      const result = await cli('keys', 'create', '--name', 'ci-bot')
      ok(result)
      assert.match(result.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
      const token = result.stdout.trim()
      issued.push(token)
      assert.ok(!result.stderr.includes(token.slice(4)), 'the token is on stdout only')
      assert.match(result.stderr, /ci-bot/)
      assert.equal((await get(token)).status, 200)
    })

    test('When a key is created with the name of an active key, then it fails and prints no token', async () => {
      await createKey(suite.server, 'twice')
      const result = await cli('keys', 'create', '--name', 'twice')
      assert.notEqual(result.code, 0)
      assert.equal(result.stdout, '')
      assert.match(result.stderr, /twice/)
      assert.match(result.stderr, /already exists/)
    })

    for (const name of ['', '1starts-with-digit', 'has space', 'semi;colon', 'ünicode', 'x'.repeat(65), '.dot']) {
      test(`When a key is created with the invalid name '${name.slice(0, 20)}', then it fails and prints no token`, async () => {
        const result = await cli('keys', 'create', '--name', name)
        assert.notEqual(result.code, 0)
        assert.equal(result.stdout, '')
        assert.match(result.stderr, /name/i)
      })
    }

    test('When keys are listed, then names and ids show but no token, part of one, or its hash', async () => {
      issued.push(await createKey(suite.server, 'listed'))
      const result = await cli('keys', 'list')
      ok(result)
      const lines = result.stdout.trim().split('\n')
      assert.match(lines[0]!, /^ID\tNAME/)
      assert.ok(
        lines.some((l) => /^\d+\tlisted\t/.test(l)),
        result.stdout,
      )
      assert.ok(
        lines.some((l) => /^\d+\tsuite\t/.test(l)),
        result.stdout,
      )
      assert.doesNotMatch(result.stdout, /psk_/)
      for (const token of issued) {
        const secret = token.slice(4)
        const hash = createHash('sha256').update(token).digest()
        for (const line of lines) {
          for (let i = 0; i + 8 <= secret.length; i++) assert.ok(!line.includes(secret.slice(i, i + 8)), line)
          for (const encoded of [hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')]) {
            assert.ok(!line.includes(encoded.slice(0, 16)), 'a key hash is listed')
          }
        }
      }
    })

    for (const by of ['name', 'id'] as const) {
      test(`When a key is revoked by ${by}, then the server rejects it on the next request and other keys still work`, async () => {
        const name = `revoke-by-${by}`
        const token = await createKey(suite.server, name)
        assert.equal((await get(token)).status, 200)
        const id = await idOf(name)
        assert.ok(id, 'keys list shows the new key')
        ok(await cli('keys', 'revoke', by === 'name' ? name : id))
        const res = await get(token)
        assert.equal(res.status, 401)
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/)
        assert.deepEqual(res.body, { code: 'unauthorized', message: res.body.message, status: 401 })
        assert.equal((await get()).status, 200, 'the suite key still works')
        const row = (await cli('keys', 'list')).stdout.split('\n').find((l) => l.startsWith(`${id}\t`))
        assert.doesNotMatch(row ?? '', /\t-$/, 'the list shows when it was revoked')
        // The name is free again once its key is revoked.
        const again = await createKey(suite.server, name)
        assert.equal((await get(again)).status, 200)
        assert.equal((await get(token)).status, 401)
      })
    }

    test('When an unknown key name or id is revoked, then it fails naming it', async () => {
      for (const target of ['no-such-key', '987654']) {
        const result = await cli('keys', 'revoke', target)
        assert.notEqual(result.code, 0)
        assert.match(result.stderr, new RegExp(target))
      }
      assert.equal((await get()).status, 200)
    })

    test('When a JSON file with extreme petIds is imported, then the running server lists them exactly', async () => {
      const path = inventoryFile([
        { petId: INT64_MAX, quantity: 5, status: 'available' },
        { petId: ABOVE_DOUBLE, quantity: 6, status: 'pending' },
        { petId: INT64_MIN, quantity: 7, status: 'sold' },
      ])
      ok(await cli('import', 'inventory', path))
      rmSync(join(path, '..'), { recursive: true, force: true })
      const res = await get()
      for (const [petId, quantity, status] of [
        [INT64_MAX, 5, 'available'],
        [ABOVE_DOUBLE, 6, 'pending'],
        [INT64_MIN, 7, 'sold'],
      ] as const) {
        assert.deepEqual(await entry(petId), { petId, quantity, status })
        assert.ok(res.text.includes(`"petId":${petId},`), `${petId} digit for digit`)
      }
    })

    test('When a CSV file with extreme petIds is imported, then the running server lists them exactly', async () => {
      ok(
        await cli(
          'import',
          'inventory',
          file('.csv', `petId,quantity,status\n${INT64_MAX - 1n},8,sold\n${ABOVE_DOUBLE + 2n},9,available\n`),
        ),
      )
      assert.deepEqual(await entry(INT64_MAX - 1n), { petId: INT64_MAX - 1n, quantity: 8, status: 'sold' })
      assert.deepEqual(await entry(ABOVE_DOUBLE + 2n), { petId: ABOVE_DOUBLE + 2n, quantity: 9, status: 'available' })
      assert.equal(await entry(ABOVE_DOUBLE + 1n), undefined, '2^53 + 3 must not round to 2^53 + 2')
    })

    test('When entries are imported again, then quantity and status are replaced and other entries are untouched', async () => {
      ok(
        await cli(
          'import',
          'inventory',
          file('.json', '[{"petId":500,"quantity":1,"status":"available"},{"petId":501,"quantity":2,"status":"available"}]'),
        ),
      )
      ok(await cli('import', 'inventory', file('.csv', 'status,petId,quantity\npending,500,40\n')))
      assert.deepEqual(await entry(500n), { petId: 500n, quantity: 40, status: 'pending' })
      assert.deepEqual(await entry(501n), { petId: 501n, quantity: 2, status: 'available' })
      ok(await cli('import', 'inventory', file('.json', '[{"petId":500,"quantity":0,"status":"sold"}]')))
      assert.deepEqual(await entry(500n), { petId: 500n, quantity: 0, status: 'sold' })
    })

    // Each bad file starts with a valid entry for pet 1, which must not be applied either.
    const good = '{"petId":1,"quantity":777,"status":"sold"}'
    const json = (second: string) => ['.json', `[${good},${second}]`] as const
    const csv = (second: string) => ['.csv', `petId,quantity,status\n1,777,sold\n${second}\n`] as const
    // Every rule of the file reader is unit-tested in test/unit/import-file.test.ts; these check what
    // the CLI does with a refusal of each kind: a bad entry, a bad line, a bad file, no file.
    const invalid: [string, readonly [string, string] | 'missing', RegExp[]][] = [
      ['a string quantity in JSON', json('{"petId":2,"quantity":"5","status":"available"}'), [/entry 2/, /quantity/, /integer/]],
      [
        'a duplicate petId',
        json('{"petId":1,"quantity":1,"status":"sold"}'),
        [/^Error: entry 2: petId 1 appears twice \(first at entry 1\)$/m],
      ],
      ['JSON that is not an array', ['.json', good], [/array/]],
      ['a CSV header with a wrong column', ['.csv', 'petId,qty,status\n1,777,sold\n'], [/line 1/, /header/, /qty/]],
      ['an unknown CSV status', csv('2,1,lost'), [/line 3/, /status/]],
      ['a duplicate CSV petId', csv('1,5,sold'), [/^Error: line 3: petId 1 appears twice \(first at line 2\)$/m]],
      ['an unsupported .txt extension', ['.txt', 'petId,quantity,status\n1,777,sold\n'], [/\.txt/, /json/, /csv/]],
      ['a file that does not exist', 'missing', [/does-not-exist\.json/, /no such file|not found|does not exist/i]],
    ]
    for (const [label, content, mentions] of invalid) {
      test(`When the import file has ${label}, then it fails naming the place and the problem, and nothing changes`, async () => {
        const before = (await get()).text
        const path = content === 'missing' ? join(files, 'does-not-exist.json') : file(...content)
        const result = await cli('import', 'inventory', path)
        assert.notEqual(result.code, 0)
        for (const mention of mentions) assert.match(result.stderr, mention)
        assert.doesNotMatch(result.stderr, /Unexpected failure|^\s+at /m, 'a plain error message, not a crash')
        assert.equal((await get()).text, before)
        assert.notEqual((await entry(1n))?.quantity, 777)
      })
    }

    test('When a large file repeats a petId chunks after its first use, then it fails naming both entries, and nothing changes', async () => {
      const before = (await get()).text
      const entries = Array.from({ length: 12_000 }, (_, i) => `{"petId":${100_000 + i},"quantity":1,"status":"sold"}`)
      entries[10_999] = '{"petId":100002,"quantity":9,"status":"sold"}'
      const result = await cli('import', 'inventory', file('.json', `[${entries.join(',')}]`))
      assert.equal(result.code, 1)
      assert.match(result.stderr, /^Error: entry 11000: petId 100002 appears twice \(first at entry 3\)$/m)
      assert.equal((await get()).text, before)
    })

    for (const example of ['inventory.json', 'inventory.csv']) {
      test(`When examples/${example} is imported, then it succeeds and every row is listed`, async () => {
        const result = await cli('import', 'inventory', join(EXAMPLES, example))
        ok(result)
        assert.match(result.stderr, /Imported \d+/)
        assert.deepEqual(await entry(1n), { petId: 1n, quantity: 12, status: 'available' })
        assert.deepEqual(await entry(3n), { petId: 3n, quantity: 4, status: 'pending' })
        if (example === 'inventory.json')
          assert.deepEqual(await entry(ABOVE_DOUBLE), { petId: ABOVE_DOUBLE, quantity: 1, status: 'available' })
      })
    }
  })

  describe(`petstore migrate (${backend.name})`, () => {
    test('When migrate runs on a fresh database, then it applies the schema, and a second run says it is up to date', async () => {
      const database = await backend.create()
      try {
        const first = await runCli(['migrate'], { DATABASE_URL: database.url })
        ok(first)
        assert.match(first.stderr, /Applied migrations: .*001/)
        const second = await runCli(['migrate'], { DATABASE_URL: database.url })
        ok(second)
        assert.match(second.stderr, /up to date/)
      } finally {
        await database.drop()
      }
    })
  })
}

describe('petstore usage', () => {
  test('When the command is unknown, then it exits 2 with the usage on stderr only', async () => {
    const result = await runCli(['frobnicate'], {})
    assert.equal(result.code, 2)
    assert.equal(result.stdout, '')
    assert.match(result.stderr, /frobnicate/)
    assert.match(result.stderr, /Usage: petstore/)
  })

  test('When help is asked for, then the usage goes to stdout and it exits 0', async () => {
    for (const args of [['help'], ['--help']]) {
      const result = await runCli(args, {})
      assert.equal(result.code, 0)
      assert.match(result.stdout, /^Usage: petstore/)
      for (const command of [
        'serve',
        'migrate',
        'keys create',
        'keys list',
        'keys revoke',
        'import inventory',
        'import pets',
        'deprecations',
      ]) {
        assert.ok(result.stdout.includes(command), command)
      }
      assert.equal(result.stderr, '')
    }
  })
})

describe('petstore import: memory stays bounded whatever one record holds', () => {
  test('When a CSV field or a JSON string holds 100,000,000 characters, then a 40 MB heap refuses it naming the place and the limit, and nothing is imported', async () => {
    const BIG = 100_000_000
    /** Writes head, BIG copies of `char`, then tail, a block at a time: the file is never one string in memory. */
    const bigFile = (extension: string, head: string, char: string, tail: string) => {
      const path = join(files, `import-${++fileCount}-big${extension}`)
      const fd = openSync(path, 'w')
      try {
        writeSync(fd, head)
        const block = Buffer.from(char.repeat(500_000))
        for (let written = 0; written < BIG; written += 500_000) writeSync(fd, block)
        writeSync(fd, tail)
      } finally {
        closeSync(fd)
      }
      return path
    }
    const database = sqliteDatabase()
    const cases = [
      {
        path: bigFile('.csv', 'petId,quantity,status\n1,777,sold\n2,1,', 'x', '\n3,1,sold\n'),
        message: /^Error: Not valid CSV: line 3: the record is larger than the limit of 65536 characters$/m,
      },
      {
        path: bigFile(
          '.json',
          '[{"petId":1,"quantity":777,"status":"sold"},\n{"petId":2,"quantity":1,"status":"',
          'x',
          '"},{"petId":3,"quantity":1,"status":"sold"}]',
        ),
        message: /^Error: entry 2: larger than the limit of 65536 characters a record may hold$/m,
      },
    ]
    try {
      for (const { path, message } of cases) {
        // A JSON string packed whole needs far more than 40 MB of heap: a crash, not a refusal. (A whole CSV field
        // may sit outside the heap, where the cap does not reach: the message is what shows it was refused early.)
        const result = await runCli(['import', 'inventory', path], { DATABASE_URL: database.url, NODE_OPTIONS: '--max-old-space-size=40' })
        rmSync(path, { force: true })
        assert.equal(result.code, 1, result.stderr.slice(0, 2000))
        assert.match(result.stderr, message)
        assert.doesNotMatch(result.stderr, /heap|out of memory|Unexpected failure|^\s+at /im)
        assert.ok(result.stderr.length < 500, `stderr is ${result.stderr.length} characters`)
        assert.equal(result.stdout, '')
      }
      const storage = await openStorage(loadConfig({ DATABASE_URL: database.url }))
      try {
        for (const petId of [1n, 2n, 3n]) assert.equal(await storage.getInventoryItem(petId), undefined, `pet ${petId} was imported`)
        assert.equal(await storage.lastChangeSeq(), 0n, 'the ledger holds no change')
      } finally {
        await storage.close()
      }
    } finally {
      for (const { path } of cases) rmSync(path, { force: true })
      await database.drop()
    }
  })
})
