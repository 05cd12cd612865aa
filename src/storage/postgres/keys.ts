import type { Scope } from '../../domain.js'
import { scopesColumn, scopesOf } from '../key-scopes.js'
import type { ApiKey, KeyStore } from '../ports.js'
import type { PostgresConnection } from './connection.js'
import { type KeyRow, toKey } from './rows.js'

/** A key's columns with the locations it is held to (null: every one), for `FROM api_keys`. */
const KEY_COLUMNS = `*, (SELECT array_agg(l.location_id ORDER BY l.location_id) FROM api_key_locations AS l
    WHERE l.key_id = api_keys.id) AS locations`

/** The advisory lock the creation of the first key takes (an arbitrary constant, unique in this schema). */
const FIRST_KEY_LOCK = 7_265_001

export function postgresKeys(db: PostgresConnection): KeyStore {
  return {
    async findActiveKey(hash: Buffer) {
      const rows = await db.query<{ id: number; hash: Buffer; scopes: string; locations: number[] | null }>(
        `SELECT id, key_hash AS hash, scopes, (SELECT array_agg(l.location_id ORDER BY l.location_id) FROM api_key_locations AS l
           WHERE l.key_id = api_keys.id) AS locations FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
        [hash],
      )
      const row = rows[0]
      if (!row) return undefined
      const key = { id: row.id, hash: row.hash, scopes: scopesOf(row.scopes) }
      return row.locations === null ? key : { ...key, locations: row.locations }
    },

    async touchKey(id: number, at: string): Promise<void> {
      await db.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id])
    },

    /** Conflicts on the active name index only: the loser of a race waits for the winner's commit, then learns the name is taken. */
    async createKey(
      name: string,
      scopes: readonly Scope[],
      hash: Buffer,
      at: string,
      locations?: readonly number[],
    ): Promise<ApiKey | undefined> {
      const rows = await db.transaction(Date.now() + db.timeoutMs, async (run) => {
        const made = await run<KeyRow>(
          `INSERT INTO api_keys (name, scopes, key_hash, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
          [name, scopesColumn(scopes), hash, at],
        )
        if (made[0] && locations !== undefined) {
          await run('INSERT INTO api_key_locations (key_id, location_id) SELECT $1, unnest($2::integer[])', [made[0].id, [...locations]])
          made[0].locations = [...locations].sort((a, b) => a - b)
        }
        return made
      })
      return rows[0] && toKey(rows[0])
    },

    /**
     * Racing callers are serialised by a transaction-level advisory lock, and the check that no key
     * exists runs after it, in a statement of its own: under READ COMMITTED each statement sees what
     * committed before it began, so the second caller sees the first one's key, whatever its name.
     */
    async createFirstKey(name: string, scopes: readonly Scope[], hash: Buffer, at: string): Promise<ApiKey | undefined> {
      const rows = await db.transaction(Date.now() + db.timeoutMs, async (run) => {
        await run('SELECT pg_advisory_xact_lock($1)', [FIRST_KEY_LOCK])
        return run<KeyRow>(
          `INSERT INTO api_keys (name, scopes, key_hash, created_at)
         SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM api_keys)
         ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
          [name, scopesColumn(scopes), hash, at],
        )
      })
      return rows[0] && toKey(rows[0])
    },

    async listKeys(): Promise<ApiKey[]> {
      return (await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`)).map(toKey)
    },

    async getActiveKey(id: number): Promise<ApiKey | undefined> {
      const rows = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [id])
      return rows[0] && toKey(rows[0])
    },

    async revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined> {
      const rows =
        typeof nameOrId === 'number'
          ? await db.query<KeyRow>('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING *', [at, nameOrId])
          : await db.query<KeyRow>('UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL RETURNING *', [at, nameOrId])
      return rows[0] && toKey(rows[0])
    },
  }
}
