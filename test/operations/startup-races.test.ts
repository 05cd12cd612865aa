import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { UnavailableError } from '../../src/errors.js'
import { KeysService } from '../../src/keys/keys.service.js'
import { openStorage } from '../../src/storage/open-storage.js'
import { BACKENDS, runCli, useResources, type TestServer } from '../support/helpers.js'

const TOKEN = /psk_[A-Za-z0-9_-]{43}/g

/** The keys on the database, read with the service's own storage code. */
async function keysOn(databaseUrl: string) {
  const storage = await openStorage(loadConfig({ DATABASE_URL: databaseUrl }))
  try {
    return await storage.listKeys()
  } finally {
    await storage.close()
  }
}

/** Every token the servers printed, once the one that made the first key has printed it. */
async function printedTokens(servers: TestServer[]): Promise<string[]> {
  await Promise.any(servers.map((s) => s.waitForStderr(TOKEN)))
  return servers.flatMap((s) => s.stderr.match(TOKEN) ?? [])
}

for (const backend of BACKENDS) {
  describe(`starting on a fresh database (${backend.name})`, () => {
    const resources = useResources()

    test('When four instances start at once on a fresh database, then all of them serve and exactly one first key is made', async () => {
      const database = await resources.database(backend)
      const servers = await Promise.all(Array.from({ length: 4 }, () => resources.server(database.url)))
      const keys = await keysOn(database.url)
      assert.deepEqual(
        keys.map((k) => k.name),
        ['default'],
      )
      const tokens = await printedTokens(servers)
      assert.equal(tokens.length, 1, 'one key printed, by one instance')
      for (const server of servers) {
        const res = await server.request('GET', '/v1/inventory', { token: tokens[0] })
        assert.equal(res.status, 200, JSON.stringify(res.body))
        assert.doesNotMatch(server.stderr, /Unexpected failure/)
      }
    })

    // Processes rarely start close enough together to overlap; connections of one process can be made to.
    test('When eight connections race to make the first key at the same moment, then exactly one makes it and none fails', async () => {
      const database = await resources.database(backend)
      const storages = await Promise.all(Array.from({ length: 8 }, () => openStorage(loadConfig({ DATABASE_URL: database.url }))))
      try {
        const results = await Promise.all(storages.map((storage) => new KeysService(storage).createFirstKeyIfNone()))
        assert.equal(results.filter((r) => r !== undefined).length, 1)
      } finally {
        await Promise.all(storages.map((s) => s.close()))
      }
      assert.deepEqual(
        (await keysOn(database.url)).map((k) => k.name),
        ['default'],
      )
    })

    test('When the first key is committed but the answer is lost, then the retry finds it and its token is shown; when the database stays away, then it gives up', async () => {
      const database = await resources.database(backend)
      const storage = await openStorage(loadConfig({ DATABASE_URL: database.url }))
      try {
        // The real storage, whose first answer is lost after the commit (as when DB_TIMEOUT_MS passes
        // while COMMIT is on its way back).
        let calls = 0
        const losing = {
          ...storage,
          async createFirstKey(...args: Parameters<typeof storage.createFirstKey>) {
            calls++
            const made = await storage.createFirstKey(...args)
            if (calls === 1) throw new UnavailableError('The database is unavailable; retry shortly', 'database')
            return made
          },
        }
        const first = await new KeysService(losing).createFirstKeyIfNone(5000)
        assert.equal(calls, 2)
        assert.ok(first, 'the first key, though its first answer was lost')
        assert.equal(first.key.name, 'default')
        assert.deepEqual(await new KeysService(storage).authenticate(`Bearer ${first.token}`, 'v'), {
          id: first.key.id,
          scopes: first.key.scopes,
        })
        assert.equal((await storage.listKeys()).length, 1)

        const away = { ...storage, createFirstKey: async () => Promise.reject(new UnavailableError('away', 'database')) }
        const started = Date.now()
        await assert.rejects(new KeysService(away).createFirstKeyIfNone(600), UnavailableError)
        const ms = Date.now() - started
        assert.ok(ms >= 200 && ms < 2000, `gave up after ${ms} ms`)
        await assert.rejects(new KeysService(away).createFirstKeyIfNone(), UnavailableError)
      } finally {
        await storage.close()
      }
    })

    test('When serve --workers 4 starts on a fresh database, then all four workers listen and one first key is made', async () => {
      const database = await resources.database(backend)
      const server = await resources.server(database.url, {}, { args: ['--workers', '4'] })
      assert.deepEqual(
        (await keysOn(database.url)).map((k) => k.name),
        ['default'],
      )
      const tokens = await printedTokens([server])
      assert.equal(tokens.length, 1)
      assert.equal((await server.request('GET', '/v1/inventory', { token: tokens[0] })).status, 200)
    })

    test('When two keys with one name are created at once, then one is made and the other fails with a clear error', async () => {
      const database = await resources.database(backend)
      await resources.server(database.url)
      const env = { DATABASE_URL: database.url }
      const results = await Promise.all([1, 2, 3].map(() => runCli(['keys', 'create', '--name', 'twin'], env)))
      const made = results.filter((r) => r.code === 0)
      const refused = results.filter((r) => r.code !== 0)
      assert.equal(made.length, 1, results.map((r) => r.stderr).join('\n'))
      assert.match(made[0]!.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
      for (const r of refused) {
        assert.equal(r.code, 1)
        assert.equal(r.stdout, '')
        assert.match(r.stderr, /^Error: An active key named 'twin' already exists\n$/)
      }
      assert.equal((await keysOn(database.url)).filter((k) => k.name === 'twin').length, 1)
    })
  })
}
