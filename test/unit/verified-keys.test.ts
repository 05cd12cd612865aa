import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { VersionedLru } from '../../src/cache/versioned.js'
import { KeysService } from '../../src/keys/keys.service.js'
import { SqliteStorage } from '../../src/storage/sqlite/sqlite.storage.js'

describe('remembered key verifications', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-keys-'))
  let storage: SqliteStorage
  /** How often the service had to look a key up in the database. */
  let lookups = 0
  const tokens: Record<string, string> = {}

  before(async () => {
    storage = SqliteStorage.open(join(dir, 'petstore.db'))
    const setup = new KeysService(storage)
    for (const name of ['a', 'b', 'c']) tokens[name] = (await setup.create(name)).token
    const findActiveKey = storage.findActiveKey.bind(storage)
    storage.findActiveKey = (hash) => {
      lookups++
      return findActiveKey(hash)
    }
  })
  after(async () => {
    await storage.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('When one token arrives with different spellings of the header, then it is looked up once', async () => {
    const keys = new KeysService(storage, new VersionedLru(10))
    const { keys: version } = await storage.versions()
    lookups = 0
    for (const header of [`Bearer ${tokens.a}`, `bearer ${tokens.a}`, `BEARER   ${tokens.a} `]) {
      assert.ok((await keys.authenticate(header, version)).id > 0)
    }
    assert.equal(lookups, 1)
  })

  test('When more keys are used than it remembers, then the least recently used is forgotten first', async () => {
    const keys = new KeysService(storage, new VersionedLru(2))
    const { keys: version } = await storage.versions()
    const use = (name: string) => keys.authenticate(`Bearer ${tokens[name]}`, version)
    await use('a')
    await use('b')
    await use('a') // a is now the most recently used
    await use('c') // evicts b, not a
    lookups = 0
    await use('a')
    assert.equal(lookups, 0, 'a was kept')
    await use('b')
    assert.equal(lookups, 1, 'b was forgotten')
  })

  test('When the keys version moves, then a remembered key is checked again', async () => {
    const keys = new KeysService(storage, new VersionedLru(10))
    await keys.authenticate(`Bearer ${tokens.a}`, 'v1')
    lookups = 0
    await keys.authenticate(`Bearer ${tokens.a}`, 'v2')
    assert.equal(lookups, 1)
  })
})
