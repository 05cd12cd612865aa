// The array literals stock writes send PostgreSQL (src/storage/postgres/array-literals.ts) must read
// back as exactly the values written, whatever text a client put in a note or a request id.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { intArray, textArray } from '../../src/storage/postgres/array-literals.js'
import { postgresAdmin, postgresUnavailable } from '../support/databases.js'

const unavailable = await postgresUnavailable()
const skip = unavailable !== undefined && !process.env.CI && unavailable

test('text arrays read back exactly: quotes, backslashes, braces, commas, NULL as text, empty strings, nulls', { skip }, async () => {
  await postgresAdmin(async (client) => {
    const read = async (values: (string | null)[]) =>
      (await client.query<{ v: (string | null)[] }>('SELECT $1::text[] AS v', [textArray(values)])).rows[0]!.v
    const tricky = ['a', '', 'NULL', 'null', '"', '\\', '\\"', '{a,b}', 'x, y', ' lead', 'trail ', 'ü ✓ 🐶', '\t\n', null]
    assert.deepEqual(await read(tricky), tricky)
    assert.deepEqual(await read([]), [])
    // Any text PostgreSQL can hold (no NUL), as fast-check writes it.
    const noNul = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replaceAll('\0', ''))
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(noNul, { nil: null }), { maxLength: 20 }), async (values) => {
        assert.deepEqual(await read(values), values)
      }),
      { numRuns: 200 },
    )
  })
})

test('integer arrays read back exactly, int64 bounds and nulls included', { skip }, async () => {
  await postgresAdmin(async (client) => {
    const values = [-(2n ** 63n), 2n ** 63n - 1n, 0n, null, 7n]
    const { rows } = await client.query<{ v: (string | null)[] }>('SELECT $1::bigint[]::text[] AS v', [intArray(values)])
    assert.deepEqual(rows[0]!.v, ['-9223372036854775808', '9223372036854775807', '0', null, '7'])
    const ints = await client.query<{ v: (number | null)[] }>('SELECT $1::integer[] AS v', [
      intArray([2147483647, -2147483648, undefined, 0]),
    ])
    assert.deepEqual(ints.rows[0]!.v, [2147483647, -2147483648, null, 0])
  })
})
