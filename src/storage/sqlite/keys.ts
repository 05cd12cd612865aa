import type Database from 'better-sqlite3'
import type { Scope } from '../../domain.js'
import { scopesColumn, scopesOf } from '../key-scopes.js'
import type { ApiKey, KeyStore } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { toKey, type KeyRow } from './rows.js'

/** The locations a key is held to, comma-separated by id (null: every one), for `FROM api_keys`. */
const HELD_TO = `(SELECT group_concat(location_id, ',') FROM (SELECT location_id FROM api_key_locations AS l
    WHERE l.key_id = api_keys.id ORDER BY location_id)) AS locations`

export function sqliteKeys(conn: SqliteConnection): KeyStore {
  const { db } = conn
  const st = {
    find: db.prepare(`SELECT id, key_hash AS hash, scopes, ${HELD_TO} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL`),
    get: db.prepare(`SELECT *, ${HELD_TO} FROM api_keys WHERE id = ? AND revoked_at IS NULL`),
    touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    // Conflicts on the active name index only: the loser of a race learns the name is taken.
    create: db.prepare(`INSERT INTO api_keys (name, scopes, key_hash, created_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`),
    createFirst: db.prepare(`INSERT INTO api_keys (name, scopes, key_hash, created_at)
      SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM api_keys)
      ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`),
    list: db.prepare(`SELECT *, ${HELD_TO} FROM api_keys ORDER BY id`),
    hold: db.prepare('INSERT INTO api_key_locations (key_id, location_id) VALUES (?, ?)'),
    revokeByName: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL RETURNING *'),
    revokeById: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING *'),
  }

  // .all(), never .get(): a RETURNING statement left unfinished holds a read mark that stops WAL checkpoints.
  const insert = async (
    statement: Database.Statement,
    name: string,
    scopes: readonly Scope[],
    hash: Buffer,
    at: string,
    locations?: readonly number[],
  ) => {
    const row = await conn.commit(() => {
      const made = statement.all(name, scopesColumn(scopes), hash, at)[0] as KeyRow | undefined
      if (made && locations !== undefined) {
        for (const locationId of locations) st.hold.run(made.id, locationId)
        made.locations = [...locations].sort((a, b) => a - b).join(',')
      }
      return made
    })
    if (!row) return undefined
    conn.ownKeyWrites++
    return toKey(row)
  }

  return {
    async findActiveKey(hash: Buffer) {
      const row = await conn.retryBusy(
        () => st.find.get(hash) as { id: number; hash: Buffer; scopes: string; locations: string | null } | undefined,
      )
      if (!row) return undefined
      const key = { id: row.id, hash: row.hash, scopes: scopesOf(row.scopes) }
      return row.locations === null ? key : { ...key, locations: row.locations.split(',').map(Number) }
    },
    /** One attempt: a busy database makes it fail fast, and the caller tries again later. */
    async touchKey(id: number, at: string): Promise<void> {
      st.touch.run(at, id)
    },
    createKey: (name, scopes, hash, at, locations) => insert(st.create, name, scopes, hash, at, locations),
    createFirstKey: (name, scopes, hash, at) => insert(st.createFirst, name, scopes, hash, at),
    listKeys: async (): Promise<ApiKey[]> => (await conn.retryBusy(() => st.list.all() as KeyRow[])).map(toKey),
    async getActiveKey(id: number): Promise<ApiKey | undefined> {
      const row = await conn.retryBusy(() => st.get.get(id) as KeyRow | undefined)
      return row && toKey(row)
    },
    async revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined> {
      const rows = (await conn.retryBusy(() =>
        typeof nameOrId === 'number' ? st.revokeById.all(at, nameOrId) : st.revokeByName.all(at, nameOrId),
      )) as KeyRow[]
      conn.ownKeyWrites++
      return rows[0] && toKey(rows[0])
    },
  }
}
