import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Deprecation } from '../../src/http/deprecation.js'

describe('Deprecation', () => {
  const deprecation = new Deprecation(new Date('2026-01-01T00:00:00.999Z'), new Date('2027-07-01T00:00:00Z'), '/v1/docs#/pets/getPetById')

  test('When its headers are written, then Deprecation is @ and whole Unix seconds, Sunset an IMF-fixdate, Link both relations', () => {
    assert.deepEqual(deprecation.headers, {
      deprecation: '@1767225600',
      sunset: 'Thu, 01 Jul 2027 00:00:00 GMT',
      link: '</v1/docs#/pets/getPetById>; rel="deprecation", </v1/docs#/pets/getPetById>; rel="sunset"',
    })
  })

  test('When the sunset is reached, then it is gone from that very millisecond on', () => {
    const sunset = Date.parse('2027-07-01T00:00:00Z')
    assert.equal(deprecation.isGone(sunset - 1), false)
    assert.equal(deprecation.isGone(sunset), true)
    assert.equal(deprecation.isGone(sunset + 1), true)
  })
})
