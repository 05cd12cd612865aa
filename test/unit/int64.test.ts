import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { INT64_MAX, INT64_MIN, parseInt64 } from '../../src/int64.js'

describe('parseInt64', () => {
  test('When the constants are read, then they are exactly -2^63 and 2^63-1', () => {
    assert.equal(INT64_MIN, -9223372036854775808n)
    assert.equal(INT64_MAX, 9223372036854775807n)
  })

  test('When any int64 is written in decimal, then parsing gives back exactly that value', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), (n) => {
        assert.equal(parseInt64(String(n)), n)
      }),
      { numRuns: 2000 },
    )
  })

  test('When the value is near a boundary or beyond 2^53, then it stays exact', () => {
    const values = [
      0n,
      1n,
      -1n,
      INT64_MIN,
      INT64_MIN + 1n,
      INT64_MAX,
      INT64_MAX - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
      10n ** 18n,
      -(10n ** 18n),
    ]
    for (const n of values) assert.equal(parseInt64(String(n)), n, String(n))
  })

  test('When the value is just outside the int64 range, then it is undefined', () => {
    for (const n of [INT64_MAX + 1n, INT64_MIN - 1n, INT64_MAX + 2n, 2n ** 64n, -(2n ** 64n), 10n ** 19n, 10n ** 30n]) {
      assert.equal(parseInt64(String(n)), undefined, String(n))
    }
  })

  test('When any integer outside the range is written in decimal, then it is undefined', () => {
    const outside = fc.oneof(fc.bigInt({ min: INT64_MAX + 1n, max: 2n ** 200n }), fc.bigInt({ min: -(2n ** 200n), max: INT64_MIN - 1n }))
    fc.assert(
      fc.property(outside, (n) => {
        assert.equal(parseInt64(String(n)), undefined)
      }),
    )
  })

  const nonCanonical: [string, string[]][] = [
    ['leading zeros', ['00', '01', '007', '-01', '-007', '0009223372036854775807', '-0009223372036854775808']],
    ['a signed zero', ['-0', '+0', '-00']],
    ['a plus sign', ['+1', '+9223372036854775807']],
    ['an exponent', ['1e3', '1E3', '1e0', '-1e3', '9.2e18']],
    ['a fraction', ['1.5', '1.0', '1.', '.5', '-0.0']],
    ['spaces', [' 1', '1 ', ' ', '1 2', '\t1', '1\n', '\n1', '- 1', '\u00a01']],
    ['an empty string', ['']],
    [
      'non-digits',
      ['abc', '1a', 'a1', '0x10', '0b1', '0o7', '-', '--1', '1-', 'NaN', 'Infinity', '-Infinity', '1_000', '1,000', 'null', 'true'],
    ],
    ['non-ASCII digits', ['١٢٣', '１２３', '²']],
  ]
  for (const [label, texts] of nonCanonical) {
    test(`When the text has ${label}, then it is undefined`, () => {
      for (const text of texts) assert.equal(parseInt64(text), undefined, JSON.stringify(text))
    })
  }

  test('When any text is not the canonical decimal of its value, then it is undefined', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'0123456789-+e. x'.split('')), maxLength: 22 }), (text) => {
        const parsed = parseInt64(text)
        // Exactly the canonical texts parse: one text per value, and it is String(value).
        if (parsed !== undefined) assert.equal(String(parsed), text)
        else if (/^-?\d+$/.test(text)) {
          const n = BigInt(text)
          assert.ok(String(n) !== text || n < INT64_MIN || n > INT64_MAX, text)
        }
      }),
      { numRuns: 2000 },
    )
  })
})
