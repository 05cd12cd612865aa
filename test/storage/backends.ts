// The backends the storage contract suites run against, and fresh storages on fresh databases for them.
import { randomBytes } from 'node:crypto'
import { after, afterEach, before, beforeEach } from 'node:test'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage, StorageObserver } from '../../src/storage/ports.js'
import { postgresAdmin, postgresDatabase, postgresUnavailable, sqliteDatabase, type TestDatabase } from '../support/databases.js'

export interface StorageBackend {
  name: 'sqlite' | 'postgres'
  create: () => Promise<TestDatabase>
}

const postgresReason = await postgresUnavailable()

const admin = postgresAdmin

/** This process's migrated PostgreSQL database, copied for each fresh one: a copy is several times faster than creating and migrating. */
let template: Promise<TestDatabase> | undefined
/** Drops still running: a test does not wait for its database to go, the file does, at its end. */
const drops: Promise<unknown>[] = []

/** A fresh PostgreSQL database, already migrated (a copy of this process's template), dropped afterwards. */
async function postgresCopy(): Promise<TestDatabase> {
  template ??= (async () => {
    const database = await postgresDatabase()
    await (await openOn(database)).close()
    return database
  })()
  const source = new URL((await template).url)
  const name = `${source.pathname.slice(1)}_${randomBytes(3).toString('hex')}`
  await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${source.pathname.slice(1)}`))
  const url = new URL(source)
  url.pathname = `/${name}`
  return {
    name: 'postgres',
    url: url.toString(),
    drop: async () => {
      drops.push(admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
    },
  }
}

after(async () => {
  await Promise.all(drops)
  if (template) await (await template).drop()
})

/**
 * SQLite always; PostgreSQL when a server is reachable. Under CI a missing PostgreSQL is not skipped:
 * its backend stays in the list and every one of its tests fails, saying why.
 */
export const BACKENDS: StorageBackend[] = [{ name: 'sqlite', create: async () => sqliteDatabase() }]
if (postgresReason === undefined) BACKENDS.push({ name: 'postgres', create: postgresCopy })
else if (process.env.CI) {
  BACKENDS.push({
    name: 'postgres',
    create: async () => {
      throw new Error(`CI requires PostgreSQL for the storage contract: ${postgresReason}`)
    },
  })
}

/** The settings the suites open storages with: a small pool, generous timeouts (two cores, shared). */
export const STORAGE_SETTINGS = { dbPoolSize: 4, dbTimeoutMs: 20_000, dbMigrationTimeoutMs: 60_000 }

/** Opens (and migrates) a storage on the database, as the service does. */
export function openOn(database: TestDatabase, observer?: StorageObserver): Promise<Storage> {
  return openStorage({ databaseUrl: database.url, ...STORAGE_SETTINGS }, observer)
}

export interface StorageFixture {
  /** The storage opened on the fixture's database (throws outside a test). */
  readonly storage: Storage
  readonly database: TestDatabase
  /** Another storage on the same database, as a second instance or the CLI would open; closed with the fixture. */
  another(observer?: StorageObserver): Promise<Storage>
}

/**
 * A fresh database and a storage on it, for each test (`scope: 'test'`) or for the enclosing describe
 * (`'describe'`), closed and dropped afterwards. Call it inside a describe: it registers that describe's hooks.
 */
export function useStorage(
  backend: StorageBackend,
  options: { scope?: 'test' | 'describe'; observer?: StorageObserver } = {},
): StorageFixture {
  let database: TestDatabase | undefined
  let storage: Storage | undefined
  let others: Storage[] = []
  const setUp = async () => {
    database = await backend.create()
    storage = await openOn(database, options.observer)
  }
  const tearDown = async () => {
    const closing = [...others, ...(storage ? [storage] : [])]
    others = []
    storage = undefined
    try {
      for (const s of closing) await s.close()
    } finally {
      await database?.drop()
      database = undefined
    }
  }
  if (options.scope === 'describe') {
    before(setUp)
    after(tearDown)
  } else {
    beforeEach(setUp)
    afterEach(tearDown)
  }
  return {
    get storage() {
      if (!storage) throw new Error('No storage open: use the fixture inside a test')
      return storage
    },
    get database() {
      if (!database) throw new Error('No database: use the fixture inside a test')
      return database
    },
    async another(observer?: StorageObserver) {
      if (!database) throw new Error('No database: use the fixture inside a test')
      const s = await openOn(database, observer)
      others.push(s)
      return s
    },
  }
}
