import pg from 'pg'
import { UnavailableError } from '../../errors.js'
import type { PetStatus } from '../../inventory/inventory.schema.js'
import { GroupCommit } from '../group-commit.js'
import type { ApiKey, InventoryItem, Storage, Versions } from '../storage.js'
import { migratePostgres } from './migrate.js'

export interface PostgresOptions {
  /** Connections in this process's pool. */
  poolSize: number
  /** Bound on connecting and on each query: past it the request gets 503 instead of hanging. */
  timeoutMs: number
}

interface KeyRow {
  id: number
  name: string
  created_at: Date
  last_used_at: Date | null
  revoked_at: Date | null
}

const toKey = (row: KeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at.toISOString(),
  lastUsedAt: row.last_used_at?.toISOString() ?? null,
  revokedAt: row.revoked_at?.toISOString() ?? null,
})

// SQLSTATE classes that mean "the database is not reachable or not accepting work right now".
const UNAVAILABLE_CLASSES = ['08', '53', '57']

/**
 * Errors raised by the server about the statement itself keep their meaning; anything else from the
 * driver (refused, reset, timed out, terminated) means the database is unavailable: a 503.
 */
function classify(error: unknown): unknown {
  if (error instanceof pg.DatabaseError && !UNAVAILABLE_CLASSES.includes(error.code?.slice(0, 2) ?? '')) return error
  return new UnavailableError('The database is unavailable; retry shortly')
}

/**
 * Every transaction that writes the inventory takes the inventory_version row's lock first. The
 * version trigger needs that lock before commit anyway, so writers already commit one at a time;
 * taking it first gives every writer the same lock order (version row, then pet rows), so a batch of
 * PATCHes and a multi-statement import, here or in other instances, can never deadlock.
 */
async function lockInventory(client: pg.PoolClient) {
  await client.query('SELECT version FROM inventory_version FOR UPDATE')
}

export class PostgresStorage implements Storage {
  readonly dialect = 'postgres'
  private readonly groupCommit: GroupCommit<{ petId: bigint; quantity: number }, InventoryItem | undefined>

  private constructor(
    private readonly pool: pg.Pool,
    readonly migrationsApplied: string[],
    poolSize: number,
  ) {
    // Half the pool commits batches; the rest stays free for reads and authentication.
    this.groupCommit = new GroupCommit((batch) => this.commitQuantities(batch), Math.max(1, poolSize >> 1))
  }

  static async open(url: string, options: PostgresOptions): Promise<PostgresStorage> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize,
      connectionTimeoutMillis: options.timeoutMs,
      query_timeout: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      keepAlive: true,
      idleTimeoutMillis: 30_000,
      application_name: 'petstore',
      // A 200 means durable, whatever the server's default: commits wait for the WAL flush.
      // Every statement here is short: JIT compilation (picked on cost estimates) would only add milliseconds.
      options: '-c synchronous_commit=on -c jit=off',
    })
    // An idle connection dropped by the server emits here; without a listener it would crash the process.
    pool.on('error', () => {})
    try {
      return new PostgresStorage(pool, await migratePostgres(pool), options.poolSize)
    } catch (error) {
      await pool.end()
      throw error
    }
  }

  private async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows
    } catch (error) {
      throw classify(error)
    }
  }

  async versions(): Promise<Versions> {
    const rows = await this.query<Versions>(
      'SELECT (SELECT version FROM inventory_version)::text AS inventory, (SELECT version FROM keys_version)::text AS keys',
    )
    return rows[0]!
  }

  async listInventory(): Promise<InventoryItem[]> {
    const rows = await this.query<{ pet_id: string; quantity: number; status: PetStatus }>(
      'SELECT i.pet_id::text AS pet_id, i.quantity, i.status FROM inventory AS i ORDER BY i.pet_id',
    )
    return rows.map((r) => ({ petId: BigInt(r.pet_id), quantity: r.quantity, status: r.status }))
  }

  setQuantity(petId: bigint, quantity: number): Promise<InventoryItem | undefined> {
    return this.groupCommit.submit({ petId, quantity })
  }

  /**
   * One transaction, one commit, for a whole batch. When a pet appears more than once, the batch is
   * applied as if in submission order: the last value is stored, and each caller gets its own value.
   * Like every inventory writer, it locks the inventory_version row first (see lockInventory).
   */
  private async commitQuantities(batch: { petId: bigint; quantity: number }[]) {
    const last = new Map<bigint, number>()
    for (const { petId, quantity } of batch) last.set(petId, quantity)
    const ids = [...last.keys()].map(String)
    const rows = await this.transaction(async (client) => {
      await lockInventory(client)
      const result = await client.query<{ pet_id: string; status: PetStatus }>(
        `UPDATE inventory AS i SET quantity = v.quantity
         FROM unnest($1::bigint[], $2::integer[]) AS v(pet_id, quantity)
         WHERE i.pet_id = v.pet_id
         RETURNING i.pet_id::text AS pet_id, i.status`,
        [ids, [...last.values()]],
      )
      return result.rows
    })
    const status = new Map(rows.map((r) => [BigInt(r.pet_id), r.status]))
    return batch.map(({ petId, quantity }) => {
      const s = status.get(petId)
      return s && { petId, quantity, status: s }
    })
  }

  /** Inserts or replaces every item, all in one transaction. */
  async upsertInventory(items: InventoryItem[]): Promise<void> {
    await this.transaction(async (client) => {
      await lockInventory(client)
      for (let i = 0; i < items.length; i += 10_000) {
        const chunk = items.slice(i, i + 10_000)
        await client.query(
          `INSERT INTO inventory (pet_id, quantity, status)
           SELECT * FROM unnest($1::bigint[], $2::integer[], $3::text[])
           ON CONFLICT (pet_id) DO UPDATE SET quantity = excluded.quantity, status = excluded.status`,
          [chunk.map((x) => String(x.petId)), chunk.map((x) => x.quantity), chunk.map((x) => x.status)],
        )
      }
    })
  }

  private async transaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw classify(error)
    })
    let broken: unknown
    try {
      await client.query('BEGIN')
      const result = await body(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      broken = error
      await client.query('ROLLBACK').catch(() => {})
      throw classify(error)
    } finally {
      // A client whose connection failed mid-transaction is discarded, not returned to the pool.
      client.release(broken instanceof pg.DatabaseError ? undefined : (broken as Error | undefined))
    }
  }

  async findActiveKey(hash: Buffer) {
    const rows = await this.query<{ id: number; hash: Buffer }>(
      'SELECT id, key_hash AS hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
      [hash],
    )
    return rows[0]
  }

  async touchKey(id: number, at: string): Promise<void> {
    await this.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id])
  }

  async createKey(name: string, hash: Buffer, at: string): Promise<ApiKey> {
    const rows = await this.query<KeyRow>(
      'INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, $3) RETURNING *',
      [name, hash, at],
    )
    return toKey(rows[0]!)
  }

  async listKeys(): Promise<ApiKey[]> {
    return (await this.query<KeyRow>('SELECT * FROM api_keys ORDER BY id')).map(toKey)
  }

  async revokeKey(nameOrId: string | number, at: string): Promise<ApiKey | undefined> {
    const rows =
      typeof nameOrId === 'number'
        ? await this.query<KeyRow>(
            'UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING *',
            [at, nameOrId],
          )
        : await this.query<KeyRow>(
            'UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL RETURNING *',
            [at, nameOrId],
          )
    return rows[0] && toKey(rows[0])
  }

  async countKeys(): Promise<number> {
    const rows = await this.query<{ n: number }>('SELECT count(*)::integer AS n FROM api_keys')
    return rows[0]!.n
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1')
  }

  async close(): Promise<void> {
    await this.groupCommit.drain()
    await this.pool.end()
  }
}
