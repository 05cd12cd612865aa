import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { addressPartition } from '../../src/http/rate-limit.js'

describe('addressPartition: where a client address is counted', () => {
  test('When the address is IPv4 (plain or IPv6-mapped), then it is counted as itself', () => {
    assert.equal(addressPartition('203.0.113.7'), '203.0.113.7')
    assert.equal(addressPartition('::ffff:203.0.113.7'), '203.0.113.7')
  })

  test('When addresses share an IPv6 /64, in any notation, then they are counted together', () => {
    const same = ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:DB8:1:2:0:0:0:0', '2001:db8:1:2:a::b']
    for (const address of same) assert.equal(addressPartition(address), '2001:db8:1:2::/64', address)
    assert.equal(addressPartition('2001:db8::1'), '2001:db8:0:0::/64')
    assert.equal(addressPartition('::1'), '0:0:0:0::/64')
  })

  test('When IPv6 addresses differ within their first 64 bits, then they are counted apart', () => {
    assert.notEqual(addressPartition('2001:db8:1:2::1'), addressPartition('2001:db8:1:3::1'))
  })
})
