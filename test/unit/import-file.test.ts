import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, test } from 'node:test'
import fc from 'fast-check'
import { InvalidInputError } from '../../src/errors.js'
import { IMPORT_RECORD_LIMIT } from '../../src/import/import-source.js'
import { IMPORT_CHUNK_SIZE, openInventoryFile } from '../../src/inventory/import-file.js'
import { MAX_QUANTITY, PET_STATUSES, type InventoryItem } from '../../src/domain.js'
import { InventoryRecordSchema, PetStatusSchema } from '../../src/inventory/inventory.schema.js'
import { INT64_MAX, INT64_MIN } from '../../src/int64.js'
import { createValidator } from '../../src/validation.js'

// Built exactly as src/cli.ts builds it for `petstore import inventory`.
const validate = createValidator([PetStatusSchema]).compile(InventoryRecordSchema)
const EXAMPLES = fileURLToPath(new URL('../../../examples/', import.meta.url))

const dir = mkdtempSync(join(tmpdir(), 'petstore-import-unit-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
function write(extension: string, text: string): string {
  const path = join(dir, `file-${++files}${extension}`)
  writeFileSync(path, text)
  return path
}
/** Every record of the file, read as `petstore import` reads it: streamed, in chunks. */
async function readInventoryFile(path: string, check = validate): Promise<InventoryItem[]> {
  const items: InventoryItem[] = []
  for await (const chunk of (await openInventoryFile(path, check)).chunks) items.push(...chunk.map((r) => r.item))
  return items
}
const read = (extension: string, text: string) => readInventoryFile(write(extension, text))

async function rejectsNaming(promise: Promise<unknown>, ...mentions: RegExp[]) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof InvalidInputError, `an InvalidInputError, got ${String(error)}`)
    assert.equal(error.code, 'invalid_request')
    for (const pattern of mentions) assert.match(error.message, pattern)
    return true
  })
}

const jsonText = (items: InventoryItem[]) =>
  `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":"${i.status}"}`).join(',')}]`

describe('readInventoryFile: valid files', () => {
  test('When the example JSON file is read, then every item is exact, a petId beyond 2^53 included', async () => {
    assert.deepEqual(await readInventoryFile(join(EXAMPLES, 'inventory.json')), [
      { petId: 1n, quantity: 12, status: 'available' },
      { petId: 2n, quantity: 0, status: 'sold' },
      { petId: 3n, quantity: 4, status: 'pending' },
      { petId: 10n, quantity: 25, status: 'available' },
      { petId: 9007199254740993n, quantity: 1, status: 'available' },
    ])
  })

  test('When the example CSV file is read, then every item is exact', async () => {
    assert.deepEqual(await readInventoryFile(join(EXAMPLES, 'inventory.csv')), [
      { petId: 1n, quantity: 12, status: 'available' },
      { petId: 2n, quantity: 0, status: 'sold' },
      { petId: 3n, quantity: 4, status: 'pending' },
    ])
  })

  test('When JSON has CRLF, other key orders, whitespace and the int64 extremes, then the items are exact and in file order', async () => {
    const text =
      '[\r\n  { "status" : "sold", "petId" : 9223372036854775807, "quantity" : 2147483647 },\r\n' +
      '  {"quantity":0,"status":"pending","petId":-9223372036854775808},\r\n  {"petId":0,"status":"available","quantity":1}\r\n]\r\n'
    assert.deepEqual(await read('.json', text), [
      { petId: INT64_MAX, quantity: 2147483647, status: 'sold' },
      { petId: INT64_MIN, quantity: 0, status: 'pending' },
      { petId: 0n, quantity: 1, status: 'available' },
    ])
  })

  test('When the extension is upper case or the array is empty, then the file is still read', async () => {
    assert.deepEqual(await read('.JSON', '[{"petId":7,"quantity":1,"status":"sold"}]'), [{ petId: 7n, quantity: 1, status: 'sold' }])
    assert.deepEqual(await read('.json', ' [ ] '), [])
    assert.deepEqual(await read('.csv', 'petId,quantity,status\n'), [])
  })

  test('When CSV has a BOM, CRLF endings, reordered columns, quotes, spaces and blank lines, then the items are exact', async () => {
    const text =
      '\uFEFFstatus,quantity,petId\r\n' +
      'available,12,9223372036854775807\r\n' +
      '\r\n' +
      ' "sold" , 0 , -9223372036854775808 \r\n' +
      'pending,"4",9007199254740993\r\n'
    assert.deepEqual(await read('.csv', text), [
      { petId: INT64_MAX, quantity: 12, status: 'available' },
      { petId: INT64_MIN, quantity: 0, status: 'sold' },
      { petId: 9007199254740993n, quantity: 4, status: 'pending' },
    ])
  })

  test('When a UTF-8 JSON file starts with a BOM, then it is read like the CSV reader reads one', async () => {
    assert.deepEqual(await read('.json', '\uFEFF[{"petId":1,"quantity":2,"status":"sold"}]'), [{ petId: 1n, quantity: 2, status: 'sold' }])
  })
})

describe('readInventoryFile: invalid records name their entry or line', () => {
  const good = '{"petId":1,"quantity":1,"status":"sold"}'
  const jsonCases: [string, string, RegExp, string?][] = [
    ['no petId', '{"quantity":1,"status":"sold"}', /petId/],
    ['a string petId', '{"petId":"2","quantity":1,"status":"sold"}', /petId/],
    ['a null petId', '{"petId":null,"quantity":1,"status":"sold"}', /petId/],
    ['a fractional petId', '{"petId":2.5,"quantity":1,"status":"sold"}', /petId/],
    ['an exponent petId', '{"petId":2e3,"quantity":1,"status":"sold"}', /petId/],
    ['a petId of -0', '{"petId":-0,"quantity":1,"status":"sold"}', /petId/],
    ['a petId above int64', '{"petId":9223372036854775808,"quantity":1,"status":"sold"}', /petId/],
    ['a petId below int64', '{"petId":-9223372036854775809,"quantity":1,"status":"sold"}', /petId/],
    ['a string quantity', '{"petId":2,"quantity":"1","status":"sold"}', /quantity/],
    ['a negative quantity', '{"petId":2,"quantity":-1,"status":"sold"}', /quantity/],
    ['a fractional quantity', '{"petId":2,"quantity":1.5,"status":"sold"}', /quantity/],
    ['a quantity above int32', '{"petId":2,"quantity":2147483648,"status":"sold"}', /quantity/],
    ['a huge quantity', '{"petId":2,"quantity":1e400,"status":"sold"}', /quantity/],
    ['a null quantity', '{"petId":2,"quantity":null,"status":"sold"}', /quantity/],
    ['no quantity', '{"petId":2,"status":"sold"}', /quantity/],
    ['an unknown status', '{"petId":2,"quantity":1,"status":"lost"}', /available, pending, sold/],
    ['a status in the wrong case', '{"petId":2,"quantity":1,"status":"Sold"}', /status/],
    ['no status', '{"petId":2,"quantity":1}', /status/],
    ['an unknown field', '{"petId":2,"quantity":1,"status":"sold","name":"Rex"}', /name/],
    ['a number', '5', /object/],
    ['an array', '[1,1,"sold"]', /object/],
    ['null', 'null', /object/],
  ]
  for (const [label, entry, mentions, todo] of jsonCases) {
    test(`When a JSON entry has ${label}, then the error names entry 2 and the problem`, { todo }, async () => {
      await rejectsNaming(read('.json', `[${good},\n${entry}]`), /^entry 2\b/, mentions)
    })
  }

  const header = 'petId,quantity,status\n'
  const csvCases: [string, string, RegExp][] = [
    ['a non-numeric petId', 'abc,1,sold', /petId/],
    ['an empty petId', ',1,sold', /petId/],
    ['a petId with leading zeros', '007,1,sold', /petId/],
    ['a petId above int64', '9223372036854775808,1,sold', /petId/],
    ['a non-numeric quantity', '2,many,sold', /quantity/],
    ['an empty quantity', '2,,sold', /quantity/],
    ['a negative quantity', '2,-1,sold', /quantity/],
    ['a fractional quantity', '2,1.5,sold', /quantity/],
    ['a quantity above int32', '2,2147483648,sold', /quantity/],
    ['an unknown status', '2,1,lost', /available, pending, sold/],
    ['an empty status', '2,1,', /status/],
    ['too few fields', '2,1', /line 3/],
    ['too many fields', '2,1,sold,extra', /line 3/],
  ]
  for (const [label, row, mentions] of csvCases) {
    test(`When a CSV row has ${label}, then the error names line 3 and the problem`, async () => {
      await rejectsNaming(read('.csv', `${header}1,1,sold\n${row}\n`), /line 3\b/, mentions)
    })
  }

  test('When the CSV header is wrong, then the error names line 1', async () => {
    for (const head of ['petId,quantity', 'petId,quantity,status,name', 'petid,quantity,status', '1,2,sold']) {
      await rejectsNaming(read('.csv', `${head}\n1,2,sold\n`), /^line 1: the header must be petId,quantity,status/)
    }
  })

  test('When the CSV header repeats a column, then it is rejected', async () => {
    await rejectsNaming(read('.csv', 'petId,quantity,status,status\n1,2,available,sold\n'), /line 1/)
  })

  test('When the whole file is not an inventory, then InvalidInputError says why', async () => {
    await rejectsNaming(read('.json', '[{"petId":1,'), /Not valid JSON/)
    await rejectsNaming(read('.json', '{"petId":1,"quantity":1,"status":"sold"}'), /must be an array/)
    await rejectsNaming(read('.json', '[{"petId":1,"petId":2,"quantity":1,"status":"sold"}]'), /Not valid JSON.*petId/)
    await rejectsNaming(read('.txt', '[]'), /Unsupported file type '\.txt'/)
  })
})

describe('openInventoryFile: large files', () => {
  test('When a file holds more records than a chunk, then they come in chunks of at most the chunk size, in file order', async () => {
    const count = IMPORT_CHUNK_SIZE * 2 + 3
    const lines = Array.from({ length: count }, (_, i) => `${i + 1},${i},available`)
    const source = await openInventoryFile(write('.csv', `petId,quantity,status\n${lines.join('\n')}\n`), validate)
    const sizes: number[] = []
    let next = 1n
    for await (const chunk of source.chunks) {
      sizes.push(chunk.length)
      for (const { item, position } of chunk) {
        assert.equal(item.petId, next++)
        assert.equal(source.where(position), `line ${Number(item.petId) + 1}`)
      }
    }
    assert.deepEqual(sizes, [IMPORT_CHUNK_SIZE, IMPORT_CHUNK_SIZE, 3])
  })
})

describe('readInventoryFile: round trip', () => {
  const items = fc.uniqueArray(
    fc
      .record({
        petId: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
        quantity: fc.integer({ min: 0, max: MAX_QUANTITY }),
        status: fc.constantFrom(...PET_STATUSES),
      })
      .map((item): InventoryItem => ({ ...item })), // fc.record makes null-prototype objects
    { selector: (item) => item.petId, maxLength: 40 },
  )

  test('When any unique valid records are written as JSON with bare-digit petIds, then reading gives them back exactly', async () => {
    await fc.assert(
      fc.asyncProperty(items, async (records) => {
        assert.deepEqual(await read('.json', jsonText(records)), records)
      }),
      { numRuns: 300 },
    )
  })

  test('When any unique valid records are written as CSV, then reading gives them back exactly', async () => {
    await fc.assert(
      fc.asyncProperty(items, async (records) => {
        const text = `petId,quantity,status\n${records.map((r) => `${r.petId},${r.quantity},${r.status}`).join('\n')}\n`
        assert.deepEqual(await read('.csv', text), records)
      }),
      { numRuns: 300 },
    )
  })
})

/** Resolves with `promise`'s value, or rejects naming `what` after `ms`: a read that never ends fails the test instead of hanging it. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still reading after ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** C0 and C1 control characters, DEL included: none may reach a terminal through an error message. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

describe('openInventoryFile: only regular files are read', () => {
  for (const extension of ['.csv', '.json']) {
    test(`When x${extension} is a symlink to /dev/zero, then it is refused at once as a device`, async () => {
      const path = join(dir, `zero-${files++}`, `x${extension}`)
      mkdirSync(join(path, '..'))
      symlinkSync('/dev/zero', path)
      await rejectsNaming(
        within(readInventoryFile(path), 5000, path),
        /^Cannot read .*x\.(csv|json): it is a device; import reads regular files only$/,
      )
    })

    test(`When x${extension} is a FIFO, then it is refused without waiting for a writer`, async () => {
      const path = join(dir, `fifo-${files++}${extension}`)
      execFileSync('mkfifo', [path])
      try {
        await rejectsNaming(within(readInventoryFile(path), 5000, path), /^Cannot read .*: it is a FIFO; import reads regular files only$/)
      } finally {
        // A reader stuck opening the FIFO (the failure this guards against) is let go, so the run ends.
        try {
          closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK))
        } catch {
          // ENXIO: no reader is waiting, as it should be.
        }
      }
    })

    test(`When d${extension} is a directory, then it is refused as one`, async () => {
      const path = join(dir, `dir-${files++}`, `d${extension}`)
      mkdirSync(path, { recursive: true })
      await rejectsNaming(readInventoryFile(path), /^Cannot read .*d\.(csv|json): it is a directory; import reads regular files only$/)
    })

    test(`When x${extension} does not exist, then it is refused as no such file`, async () => {
      await rejectsNaming(readInventoryFile(join(dir, `missing${extension}`)), /^Cannot read .*missing\.(csv|json): no such file$/)
    })
  }
})

describe('openInventoryFile: a record past IMPORT_RECORD_LIMIT is refused', () => {
  const good = '{"petId":1,"quantity":1,"status":"sold"}'
  const huge = 'x'.repeat(200_000)
  const jsonCases: [string, string][] = [
    ['a string of 200,000 characters', `{"petId":2,"quantity":1,"status":"${huge}"}`],
    ['a key of 200,000 characters', `{"petId":2,"quantity":1,"status":"sold","${huge}":1}`],
    ['a number of 200,000 digits', `{"petId":2${'0'.repeat(200_000)},"quantity":1,"status":"sold"}`],
    [
      'an array of 40,000 small numbers',
      `{"petId":2,"quantity":1,"status":"sold","tags":[${Array.from({ length: 40_000 }, () => '1').join(',')}]}`,
    ],
  ]
  for (const [label, entry] of jsonCases) {
    test(`When a JSON entry holds ${label}, then it is refused naming the entry and the limit`, async () => {
      assert.equal(IMPORT_RECORD_LIMIT, 65536)
      await rejectsNaming(read('.json', `[${good},\n${entry},${good}]`), /^entry 2: larger than the limit of 65536 characters\b/)
    })
  }

  for (const [label, field] of [
    ['an unquoted', huge],
    ['a quoted', `"${huge}"`],
  ] as const) {
    test(`When a CSV line holds ${label} field of 200,000 characters, then it is refused naming the line and the limit`, async () => {
      await rejectsNaming(
        read('.csv', `petId,quantity,status\n1,1,sold\n2,1,${field}\n3,1,sold\n`),
        /^Not valid CSV: line 3: the record is larger than the limit of 65536 characters$/,
      )
    })
  }

  test('When a JSON entry is just under the limit, then it reaches the validator; just over, it is refused for its size', async () => {
    const entry = (length: number) => `{"petId":2,"quantity":1,"status":"${'x'.repeat(length)}"}`
    const under = read('.json', `[${good},${entry(IMPORT_RECORD_LIMIT - 200)}]`)
    await rejectsNaming(under, /^entry 2 \(petId 2\): record\.status must be one of: available, pending, sold$/)
    await rejectsNaming(read('.json', `[${good},${entry(IMPORT_RECORD_LIMIT + 1)}]`), /^entry 2: larger than the limit of 65536\b/)
  })

  test('When a CSV record is just under the limit, then it reaches the validator; just over, it is refused for its size', async () => {
    const file = (length: number) => `petId,quantity,status\n1,1,sold\n2,1,${'x'.repeat(length)}\n`
    await rejectsNaming(
      read('.csv', file(IMPORT_RECORD_LIMIT - 200)),
      /^line 3 \(petId 2\): record\.status must be one of: available, pending, sold$/,
    )
    await rejectsNaming(
      read('.csv', file(IMPORT_RECORD_LIMIT + 1)),
      /^Not valid CSV: line 3: the record is larger than the limit of 65536\b/,
    )
  })

  test('When several CSV records of half the limit each follow one another, then every one is read (the count starts again at each record)', async () => {
    // Trailing blanks count towards a record's size, and are trimmed before validation.
    const status = 'available'.padEnd(IMPORT_RECORD_LIMIT / 2, ' ')
    const csv = `petId,quantity,status\n${Array.from({ length: 5 }, (_, i) => `${i + 1},1,${status}`).join('\n')}\n`
    assert.deepEqual(
      (await read('.csv', csv)).map((i) => i.petId),
      [1n, 2n, 3n, 4n, 5n],
    )
  })
})

describe("openInventoryFile: messages never carry the file's control bytes", () => {
  const header = 'petId,quantity,status\n'
  const csvCases: [string, string, RegExp][] = [
    ['text after a closing quote', '1,1,"sold"\u001b]0;pwned\u0007x', /a quoted field goes on after its closing quote/],
    ['a quote inside a field', '1,1,so"ld\u001b[31mpwned\u0007', /a quote opens in the middle of a field/],
    ['a quote never closed', '1,1,"sold\u001b[2Jpwned\u0007', /a quoted field is never closed/],
  ]
  for (const [label, row, problem] of csvCases) {
    test(`When bad CSV quoting (${label}) holds ESC and BEL bytes, then the error describes it without quoting any of them`, async () => {
      await assert.rejects(read('.csv', `${header}${row}\n`), (error: unknown) => {
        assert.ok(error instanceof InvalidInputError, String(error))
        assert.match(error.message, /^Not valid CSV: line 2: /)
        assert.match(error.message, problem)
        assert.doesNotMatch(error.message, CONTROL)
        for (const raw of ['pwned', ']0;', '[31m', '[2J']) assert.ok(!error.message.includes(raw), error.message)
        return true
      })
    })
  }

  test('When a wrong CSV header holds control bytes and 500 characters, then the message is short, escaped and free of control characters', async () => {
    const head = `petId,quantity,\u001b]0;pwned\u0007\u009b31m${'y'.repeat(500)}`
    await assert.rejects(read('.csv', `${head}\n1,1,sold\n`), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError, String(error))
      assert.match(
        error.message,
        /^line 1: the header must be petId,quantity,status \(got "petId,quantity,\\u001b\]0;pwned\\u0007\\u009b31my+…"\)$/,
      )
      assert.doesNotMatch(error.message, CONTROL)
      assert.ok(error.message.length < 200, `${error.message.length} characters`)
      return true
    })
  })

  test('When a JSON entry repeats a key of control bytes and 500 characters, then the message quotes it short and escaped', async () => {
    const key = `\\u001b]0;pwned\\u0007\\u009b${'k'.repeat(500)}`
    await assert.rejects(read('.json', `[{"petId":1,"${key}":1,"${key}":2}]`), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError, String(error))
      assert.match(error.message, /^Not valid JSON: entry 1 repeats the key "\\u001b\]0;pwned\\u0007\\u009bk+…"$/)
      assert.doesNotMatch(error.message, CONTROL)
      assert.ok(error.message.length < 150, `${error.message.length} characters`)
      return true
    })
  })

  test("When JSON is broken by control bytes, then the parser's message quotes none of them", async () => {
    await assert.rejects(read('.json', '[{"petId":1\u001b]0;pwned\u0007}]'), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError, String(error))
      assert.match(error.message, /^Not valid JSON: /)
      assert.doesNotMatch(error.message, CONTROL)
      assert.ok(!error.message.includes('pwned'), error.message)
      return true
    })
  })

  test('When a JSON entry has an unknown field named with control bytes, then the message quotes it escaped', async () => {
    await assert.rejects(
      read('.json', `[{"petId":1,"quantity":1,"status":"sold","\\u001b]0;pwned\\u0007${'k'.repeat(500)}":1}]`),
      (error: unknown) => {
        assert.ok(error instanceof InvalidInputError, String(error))
        assert.match(error.message, /^entry 1 \(petId 1\): record has unknown field /)
        assert.doesNotMatch(error.message, CONTROL)
        assert.ok(error.message.length < 200, `${error.message.length} characters`)
        return true
      },
    )
  })
})
