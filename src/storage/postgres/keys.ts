import type { Scope } from '../../domain.js'
import { scopesColumn, scopesOf } from '../key-scopes.js'
import type { ApiKey, KeyStore } from '../ports.js'
import type { PostgresConnection } from './connection.js'
import { type KeyRow, toKey } from './rows.js'

/** The advisory lock the creation of the first key takes (an arbitrary constant, unique in this schema). */
const FIRST_KEY_LOCK = 7_265_001

export function postgresKeys(db: PostgresConnection): KeyStore {
  return {
    async findActiveKey(hash: Buffer) {
      const rows = await db.query<{ id: number; hash: Buffer; scopes: string }>(
        'SELECT id, key_hash AS hash, scopes FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
        [hash],
      )
      return rows[0] && { id: rows[0].id, hash: rows[0].hash, scopes: scopesOf(rows[0].scopes) }
    },

    async touchKey(id: number, at: string): Promise<void> {
      await db.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id])
    },

    /** Conflicts on the active name index only: the loser of a race waits for the winner's commit, then learns the name is taken. */
    async createKey(name: string, scopes: readonly Scope[], hash: Buffer, at: string): Promise<ApiKey | undefined> {
      const rows = await db.query<KeyRow>(
        `INSERT INTO api_keys (name, scopes, key_hash, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
        [name, scopesColumn(scopes), hash, at],
      )
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
      return (await db.query<KeyRow>('SELECT * FROM api_keys ORDER BY id')).map(toKey)
    },

    async getActiveKey(id: number): Promise<ApiKey | undefined> {
      const rows = await db.query<KeyRow>('SELECT * FROM api_keys WHERE id = $1 AND revoked_at IS NULL', [id])
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
