import { maskUrl } from '../../config.js'
import type Database from 'better-sqlite3'
import type { Webhook, WebhookTarget } from '../../domain.js'
import type { WebhookFailure, WebhookStore } from '../ports.js'
import type { SqliteConnection } from './connection.js'

/*
 * Webhook subscriptions. Each statement commits on its own, except a delivery's cursor, which rides
 * the stock writes' next group commit (`alongside`); none touches the inventory, so none moves this
 * process's inventory counter. Leases are on this machine's clock, which every process
 * of one SQLite file shares.
 */

interface WebhookRow {
  id: bigint
  url: string
  description: string | null
  secret: string
  message_tag: string
  created_at: string
  delivered_through: bigint
  last_success_at: string | null
  failing_since: string | null
  failed_attempts: bigint
  next_attempt_at: string | null
  last_error: string | null
  disabled_at: string | null
  disabled_reason: string | null
}

export const toWebhook = (r: WebhookRow): Webhook => ({
  id: Number(r.id),
  url: maskUrl(r.url, true),
  description: r.description,
  createdAt: r.created_at,
  deliveredThrough: r.delivered_through,
  lastSuccessAt: r.last_success_at,
  failingSince: r.failing_since,
  failedAttempts: Number(r.failed_attempts),
  nextAttemptAt: r.next_attempt_at,
  lastError: r.last_error,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
})

const toTarget = (r: WebhookRow): WebhookTarget => ({ ...toWebhook(r), destination: r.url, secret: r.secret, messageTag: r.message_tag })

export function sqliteWebhooks(conn: SqliteConnection, alongside: <T>(write: () => T) => Promise<T>): WebhookStore {
  const { db } = conn
  const rows = (sql: string) => db.prepare(sql).safeIntegers()
  const st = {
    // The cursor starts at the ledger's end, read in the same statement (one transaction).
    create: rows(`INSERT INTO webhooks (url, description, secret, message_tag, created_at, delivered_through)
      SELECT @url, @description, @secret, @messageTag, @createdAt, (SELECT coalesce(max(seq), 0) FROM inventory_changes)
      WHERE (SELECT count(*) FROM webhooks) < @max RETURNING *`),
    list: rows('SELECT * FROM webhooks ORDER BY id'),
    get: rows('SELECT * FROM webhooks WHERE id = ?'),
    delete: rows('DELETE FROM webhooks WHERE id = ? RETURNING id'),
    enable: rows(`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failed_attempts = 0, next_attempt_at = NULL,
      delivered_through = CASE WHEN delivered_through < @expiredBefore THEN @end ELSE delivered_through END
      WHERE id = @id RETURNING *`),
    // Read first: a process with nothing to take writes nothing (a write would take the lock, and
    // move data_version, which every other process's caches watch).
    leasable: db.prepare(
      'SELECT 1 FROM webhooks WHERE disabled_at IS NULL AND (lease_owner = @owner OR lease_owner IS NULL OR lease_expires_at < @now) LIMIT 1',
    ),
    lease: rows(`UPDATE webhooks SET lease_owner = @owner, lease_expires_at = @until
      WHERE disabled_at IS NULL AND (lease_owner = @owner OR lease_owner IS NULL OR lease_expires_at < @now) RETURNING *`),
    release: rows('UPDATE webhooks SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?'),
    delivered: rows(`UPDATE webhooks SET delivered_through = @seq, last_success_at = @at, failing_since = NULL,
      failed_attempts = 0, next_attempt_at = NULL, last_error = NULL
      WHERE id = @id AND lease_owner = @owner AND delivered_through < @seq RETURNING id`),
    failed: rows(`UPDATE webhooks SET failing_since = coalesce(failing_since, @at), failed_attempts = @failedAttempts,
      next_attempt_at = @nextAttemptAt, last_error = @error,
      disabled_at = CASE WHEN @nextAttemptAt IS NULL THEN @at END,
      disabled_reason = CASE WHEN @nextAttemptAt IS NULL THEN @error END,
      lease_owner = CASE WHEN @nextAttemptAt IS NULL THEN NULL ELSE lease_owner END
      WHERE id = @id AND lease_owner = @owner RETURNING id`),
  }
  // .all(), never .get(): a RETURNING statement left unfinished holds a read mark that stops WAL checkpoints.
  const all = (statement: Database.Statement, ...args: unknown[]) => conn.retryBusy(() => statement.all(...args) as WebhookRow[])

  return {
    async createWebhook(webhook, max) {
      const [row] = await all(st.create, { ...webhook, max })
      return row && toWebhook(row)
    },
    listWebhooks: async () => (await all(st.list)).map(toWebhook),
    async getWebhook(id) {
      const [row] = await all(st.get, id)
      return row && toWebhook(row)
    },
    deleteWebhook: async (id) => (await all(st.delete, id)).length > 0,
    async enableWebhook(id, expiredBefore, end) {
      const [row] = await all(st.enable, { id, expiredBefore, end })
      return row && toWebhook(row)
    },
    async leaseWebhooks(owner, leaseMs) {
      const now = Date.now()
      if (!(await conn.retryBusy(() => st.leasable.get({ owner, now })))) return []
      return (await all(st.lease, { owner, now, until: now + leaseMs })).map(toTarget).sort((a, b) => a.id - b.id)
    },
    async releaseWebhooks(owner) {
      await conn.retryBusy(() => st.release.run(owner))
    },
    // Durable when it resolves, as every commit here (synchronous=FULL), sharing the fsync of the PATCHes beside it.
    recordDelivery: async (id, owner, seq, at) => (await alongside(() => st.delivered.all({ id, owner, seq, at }))).length > 0,
    recordFailure: async (id, owner, failure: WebhookFailure) =>
      (await all(st.failed, { id, owner, ...failure, nextAttemptAt: failure.nextAttemptAt ?? null })).length > 0,
  }
}
