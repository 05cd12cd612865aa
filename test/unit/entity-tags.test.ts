import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { entityTag, ifMatch, noneMatch, parseTags } from '../../src/entity-tags.js'

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

  const matchCases: [string, boolean][] = [
    [tag, true],
    ['*', true],
    [`"other", ${tag}`, true],
    [`W/${tag}`, false],
    ['"other"', false],
  ]
  for (const [header, expected] of matchCases) {
    test(`When If-Match is ${header}, then it ${expected ? 'holds' : 'does not hold'} (strong comparison)`, () => {
      assert.equal(ifMatch(header, tag), expected)
    })
  }

  test('When a header is not * or a list of entity tags, then it does not parse', () => {
    for (const header of ['', 'abc', '"a" "b"', '"a",,x', 'W/abc', '"unterminated']) {
      assert.equal(parseTags(header), undefined, header)
    }
    assert.deepEqual(parseTags(' "a" , W/"b" '), [
      { weak: false, opaque: '"a"' },
      { weak: true, opaque: '"b"' },
    ])
  })
})
