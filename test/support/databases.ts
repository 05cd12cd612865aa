// Fresh databases for tests and benchmarks: a SQLite file in its own temporary folder, or a uniquely
// named PostgreSQL database on the local server, dropped afterwards.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'

/** A database the tests own: a fresh SQLite file in its own temporary folder. */
export interface TestDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

export function sqliteDatabase(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  return {
    name: 'sqlite',
    url: `sqlite:${join(dir, 'petstore.db')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** The server the PostgreSQL runs use; each suite creates and drops its own database there. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** Runs `body` on a connection of its own to the PostgreSQL server as its administrator, then ends it. */
export async function postgresAdmin<T>(body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await client.connect()
  try {
    return await body(client)
  } finally {
    await client.end()
  }
}

/** Why PostgreSQL cannot be used here, or undefined when it can. */
export async function postgresUnavailable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return undefined
  } catch (error) {
    return `PostgreSQL at ${POSTGRES_ADMIN_URL} is unreachable (${(error as Error).message || String(error)})`
  } finally {
    await client.end().catch(() => {})
  }
}

export async function postgresDatabase(): Promise<TestDatabase> {
  const name = `petstore_test_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  return {
    name: 'postgres',
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await client.end()
      }
    },
  }
}

/** Runs SQL statements on a database directly, outside the service, as an operator's mistake (or a bug) would. */
export async function runStatements(url: string, statements: string[]): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    try {
      for (const s of statements) db.exec(s)
    } finally {
      db.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (const s of statements) await client.query(s)
  } finally {
    await client.end()
  }
}
