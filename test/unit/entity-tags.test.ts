import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { entityTag, noneMatch } from '../../src/http/entity-tags.js'

describe('entity tags', () => {
  const tag = entityTag('{"petId":1,"quantity":5,"status":"available"}')

  test('When the same bytes are tagged twice, then the tags are equal, strong and quoted; other bytes differ', () => {
    assert.equal(entityTag('{"petId":1,"quantity":5,"status":"available"}'), tag)
    assert.match(tag, /^"[A-Za-z0-9_-]{22}"$/)
    assert.notEqual(entityTag('{"petId":1,"quantity":6,"status":"available"}'), tag)
    assert.equal(entityTag(Buffer.from('abc')), entityTag('abc'))
  })

  const cases: [string | undefined, boolean][] = [
    [undefined, false],
    [tag, true],
    [`W/${tag}`, true],
    ['*', true],
    [' * ', true],
    [`"other", ${tag}`, true],
    [`"other",W/${tag}`, true],
    [`"other"`, false],
    [`"a", "b"`, false],
    [tag.slice(1, -1), false],
    ['', false],
    [`${tag}x`, false],
  ]
  for (const [header, expected] of cases) {
    test(`When If-None-Match is ${JSON.stringify(header)}, then it ${expected ? 'matches' : 'does not match'}`, () => {
      assert.equal(noneMatch(header, tag), expected)
    })
  }
})
