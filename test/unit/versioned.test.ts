import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { VersionedValue } from '../../src/cache/versioned.js'

describe('VersionedValue', () => {
  test('When many callers arrive with the same version during a build, then they share one build', async () => {
    const value = new VersionedValue<string>()
    let builds = 0
    let finish!: (v: string) => void
    const build = () => {
      builds++
      return new Promise<string>((resolve) => (finish = resolve))
    }
    const callers = Array.from({ length: 50 }, () => value.get('7', build))
    finish('list at 7')
    assert.deepEqual(new Set(await Promise.all(callers)), new Set(['list at 7']))
    assert.equal(builds, 1)
    assert.equal(await value.get('7', build), 'list at 7', 'then it is served from memory')
    assert.equal(builds, 1)
  })

  test('When the version moves, then the next caller builds again, and never gets the old value', async () => {
    const value = new VersionedValue<string>()
    assert.equal(await value.get('1', async () => 'one'), 'one')
    assert.equal(await value.get('2', async () => 'two'), 'two')
    assert.equal(await value.get('2', async () => 'not built'), 'two')
  })

  test('When a build fails, then its callers get the error and the next caller builds afresh', async () => {
    const value = new VersionedValue<string>()
    await assert.rejects(
      value.get('1', async () => Promise.reject(new Error('db down'))),
      /db down/,
    )
    assert.equal(await value.get('1', async () => 'recovered'), 'recovered')
  })

  test('When builds for two versions overlap, then each caller gets the build of its own version', async () => {
    const value = new VersionedValue<string>()
    const gates: Record<string, (v: string) => void> = {}
    const build = (v: string) => () => new Promise<string>((resolve) => (gates[v] = resolve))
    const old = value.get('1', build('1'))
    const fresh = value.get('2', build('2'))
    gates['2']!('two')
    gates['1']!('one')
    assert.equal(await old, 'one')
    assert.equal(await fresh, 'two')
  })
})
