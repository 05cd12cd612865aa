import { answerOf, storedAnswer, type StoredAnswer, type StoredClaim } from '../../stock/claims.js'
import type { SqliteConnection } from './connection.js'

type ClaimRow = [
  fingerprint: string,
  outcome: string,
  orderId: bigint | null,
  available: bigint | null,
  answer: string | null,
  petId: bigint | null,
  quantity: bigint | null,
  placedAt: string | null,
]

/** A stored, unexpired claim of an Idempotency-Key (created after `since`), with the order it placed. */
export function readClaim(conn: SqliteConnection, keyId: number, key: string, since: string): StoredClaim | undefined {
  const row = conn
    .query(`SELECT c.fingerprint, c.outcome, c.order_id, c.available, c.answer, o.pet_id, o.quantity, o.placed_at
      FROM idempotency_keys c LEFT JOIN orders o ON o.id = c.order_id
      WHERE c.key_id = ? AND c.idempotency_key = ? AND c.created_at > ?`)
    .get(keyId, key, since) as ClaimRow | undefined
  if (!row) return undefined
  const [fingerprint, outcome, orderId, available, answer, petId, quantity, placedAt] = row
  return {
    keyId,
    key,
    fingerprint,
    answer: answerOf({
      outcome: outcome as StoredAnswer['outcome'],
      orderId,
      available: available === null ? null : Number(available),
      answer,
      order: petId === null ? undefined : { petId, quantity: Number(quantity), placedAt: placedAt! },
    }),
  }
}

/** Stores claims; an expired claim of the same key may still be there, and the new one replaces it. */
export function writeClaims(conn: SqliteConnection, claims: StoredClaim[], at: string): void {
  const put = conn.statement(`INSERT OR REPLACE INTO idempotency_keys
    (key_id, idempotency_key, fingerprint, outcome, order_id, available, answer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
  for (const { keyId, key, fingerprint, answer: a } of claims) {
    const { outcome, orderId, available, answer } = storedAnswer(a)
    put.run(keyId, key, fingerprint, outcome, orderId, available, answer, at)
  }
}

/** Removes up to a hundred expired claims (created at or before `since`): the table stays small without a job of its own. */
export function purgeClaims(conn: SqliteConnection, since: string): void {
  conn
    .statement(`DELETE FROM idempotency_keys WHERE rowid IN
      (SELECT rowid FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT 100)`)
    .run(since)
}
