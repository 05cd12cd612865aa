import { maskUrl } from '../../config.js'
import type { Webhook, WebhookTarget } from '../../domain.js'
import type { WebhookFailure, WebhookStore } from '../ports.js'
import type { PostgresConnection } from './connection.js'

/*
 * Webhook subscriptions. Leases are on the database's clock (now()), which every instance shares
 * whatever its own clock says.
 */

interface WebhookRow {
  id: number
  url: string
  description: string | null
  secret: string
  message_tag: string
  created_at: Date
  delivered_through: string
  last_success_at: Date | null
  failing_since: Date | null
  failed_attempts: number
  next_attempt_at: Date | null
  last_error: string | null
  disabled_at: Date | null
  disabled_reason: string | null
}

/** The advisory lock every subscription's creation takes (an arbitrary constant, unique in this schema). */
const CREATE_LOCK = 727_003

const COLUMNS = `id, url, description, secret, message_tag, created_at, delivered_through::text AS delivered_through,
  last_success_at, failing_since, failed_attempts, next_attempt_at, last_error, disabled_at, disabled_reason`

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: maskUrl(r.url, true),
  description: r.description,
  createdAt: r.created_at.toISOString(),
  deliveredThrough: BigInt(r.delivered_through),
  lastSuccessAt: iso(r.last_success_at),
  failingSince: iso(r.failing_since),
  failedAttempts: r.failed_attempts,
  nextAttemptAt: iso(r.next_attempt_at),
  lastError: r.last_error,
  disabledAt: iso(r.disabled_at),
  disabledReason: r.disabled_reason,
})

const toTarget = (r: WebhookRow): WebhookTarget => ({ ...toWebhook(r), destination: r.url, secret: r.secret, messageTag: r.message_tag })

export function postgresWebhooks(db: PostgresConnection): WebhookStore {
  const rows = (sql: string, values: unknown[] = []) => db.query<WebhookRow>(sql, values)
  return {
    async createWebhook({ url, description, secret, messageTag, createdAt }, max) {
      // The count and the insert under one lock: two creates racing at max - 1 must not both succeed.
      // A lock of the creates' own, which only other creates wait for: a table lock (SHARE ROW
      // EXCLUSIVE) waited for every instance's lease renewal, an UPDATE of each subscription it holds
      // that keeps its ROW EXCLUSIVE lock until its commit is flushed, and every delivery's write queued
      // behind the waiting create. Taken before the statement that counts, so under READ COMMITTED
      // (as the inventory's row locks assume too) that count sees every create committed before it.
      const row = await db.transaction(Date.now() + db.timeoutMs, async (run) => {
        await run('SELECT pg_advisory_xact_lock($1)', [CREATE_LOCK])
        // The ledger's end is the last committed seq: a row committed after this statement has a higher one.
        const [created] = await run<WebhookRow>(
          `INSERT INTO webhooks (url, description, secret, message_tag, created_at, delivered_through)
           SELECT $1, $2, $3, $4, $5, (SELECT coalesce(max(seq), 0) FROM inventory_changes)
           WHERE (SELECT count(*) FROM webhooks) < $6 RETURNING ${COLUMNS}`,
          [url, description, secret, messageTag, createdAt, max],
        )
        return created
      })
      return row && toWebhook(row)
    },
    listWebhooks: async () => (await rows(`SELECT ${COLUMNS} FROM webhooks ORDER BY id`)).map(toWebhook),
    async getWebhook(id) {
      const [row] = await rows(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id])
      return row && toWebhook(row)
    },
    deleteWebhook: async (id) => (await rows('DELETE FROM webhooks WHERE id = $1 RETURNING id', [id])).length > 0,
    async enableWebhook(id, expiredBefore, end) {
      const [row] = await rows(
        `UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failed_attempts = 0, next_attempt_at = NULL,
           delivered_through = CASE WHEN delivered_through < $2 THEN $3 ELSE delivered_through END
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, String(expiredBefore), String(end)],
      )
      return row && toWebhook(row)
    },
    async leaseWebhooks(owner, leaseMs) {
      const leased = await rows(
        `UPDATE webhooks SET lease_owner = $1, lease_expires_at = now() + $2 * interval '1 millisecond'
         WHERE disabled_at IS NULL AND (lease_owner = $1 OR lease_owner IS NULL OR lease_expires_at < now())
         RETURNING ${COLUMNS}`,
        [owner, leaseMs],
      )
      return leased.map(toTarget).sort((a, b) => a.id - b.id)
    },
    async releaseWebhooks(owner) {
      await rows('UPDATE webhooks SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1', [owner])
    },
    recordDelivery: async (id, owner, seq, at) =>
      (
        await rows(
          `UPDATE webhooks SET delivered_through = $3, last_success_at = $4, failing_since = NULL,
           failed_attempts = 0, next_attempt_at = NULL, last_error = NULL
           WHERE id = $1 AND lease_owner = $2 AND delivered_through < $3 RETURNING id`,
          [id, owner, String(seq), at],
        )
      ).length > 0,
    recordFailure: async (id, owner, { at, error, failedAttempts, nextAttemptAt }: WebhookFailure) =>
      (
        await rows(
          `UPDATE webhooks SET failing_since = coalesce(failing_since, $3), failed_attempts = $5,
           next_attempt_at = $6, last_error = $4,
           disabled_at = CASE WHEN $6::timestamptz IS NULL THEN $3::timestamptz END,
           disabled_reason = CASE WHEN $6::timestamptz IS NULL THEN $4 END,
           lease_owner = CASE WHEN $6::timestamptz IS NULL THEN NULL ELSE lease_owner END
           WHERE id = $1 AND lease_owner = $2 RETURNING id`,
          [id, owner, at, error, failedAttempts, nextAttemptAt ?? null],
        )
      ).length > 0,
  }
}
