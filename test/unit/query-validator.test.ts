import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { compileQueryValidator } from '../../src/validation.js'

const validate = compileQueryValidator({
  properties: {
    after: { type: 'integer', format: 'int64', minimum: 0, default: 0 },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    status: { type: 'string', enum: ['placed', 'approved'] },
  },
})

describe('query parameters: exact, bounded, declared', () => {
  test('When nothing is given, then the defaults fill in, an int64 as a bigint', () => {
    assert.deepEqual(validate({}), { value: { after: 0n, limit: 100 } })
  })

  test('When an int64 beyond 2^53 is given, then it comes back exact', () => {
    assert.deepEqual(validate({ after: '9223372036854775807' }).value?.after, 9223372036854775807n)
  })

  test('When values are at their bounds, then they are accepted', () => {
    assert.deepEqual(validate({ limit: '1', status: 'approved' }).value, { after: 0n, limit: 1, status: 'approved' })
    assert.equal(validate({ limit: '1000' }).value?.limit, 1000)
  })

  for (const [label, query] of [
    ['limit 0', { limit: '0' }],
    ['limit 1001', { limit: '1001' }],
    ['a negative after', { after: '-1' }],
    ['after past int64', { after: '9223372036854775808' }],
    ['a leading zero', { limit: '07' }],
    ['an exponent', { limit: '1e2' }],
    ['a fraction', { limit: '1.0' }],
    ['a plus sign', { limit: '+5' }],
    ['an empty value', { limit: '' }],
    ['a parameter given twice', { limit: ['1', '2'] }],
    ['a status outside the enum', { status: 'lost' }],
    ['an undeclared parameter', { petid: '1' }],
  ] as const) {
    test(`When the query has ${label}, then it is refused naming the parameter`, () => {
      const result = validate(query as Record<string, unknown>)
      assert.ok('error' in result && result.error instanceof Error, label)
      assert.match(result.error.message, new RegExp(Object.keys(query)[0]!))
    })
  }
})
