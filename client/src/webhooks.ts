// Verifies a webhook message as Standard Webhooks 1.0 signs it: HMAC-SHA256 over
// `<webhook-id>.<webhook-timestamp>.<body>` with the secret's bytes (`whsec_` + base64), compared in
// constant time by Web Crypto, and a timestamp within a tolerance, so a captured message cannot be
// replayed later.
import { WebhookVerificationError } from './errors.js'
import { parseExact } from './json.js'
import type { InventoryChange } from './types.js'

/** A verified message: `data` is the ledger row, int64s exact. */
export interface WebhookMessage {
  /** `webhook-id`: the same on every retry of the message; deduplicate on it. */
  id: string
  timestamp: Date
  type: 'inventory.changed'
  data: InventoryChange
}

/** Headers as fetch's Request has them, or as Node's http module gives them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>

export interface VerifyOptions {
  /** How far the timestamp may be from now, in seconds, either way (default 300). */
  toleranceSeconds?: number
  /** Now, for tests. */
  now?: Date
}

/**
 * Checks the message's signature and timestamp and returns it parsed, or rejects with a
 * WebhookVerificationError. Pass the body exactly as received (the raw bytes or text, not a
 * re-serialized object).
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<WebhookMessage> {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature')
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds')
  const seconds = Number(timestamp)
  const now = (options.now ?? new Date()).getTime() / 1000
  const tolerance = options.toleranceSeconds ?? 300
  if (Math.abs(now - seconds) > tolerance) throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`)

  const key = await crypto.subtle.importKey('raw', secretBytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify'])
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`)
  const signed = new Uint8Array(prefix.length + bytes.length)
  signed.set(prefix)
  signed.set(bytes, prefix.length)
  let valid = false
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',', 2)
    if (version !== 'v1' || signature === undefined) continue
    const candidate = base64(signature)
    if (candidate !== undefined && (await crypto.subtle.verify('HMAC', key, candidate, signed))) valid = true
  }
  if (!valid) throw new WebhookVerificationError('No webhook-signature matches the message')

  let message: { type?: unknown; data?: unknown }
  try {
    message = parseExact(typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body))
  } catch {
    throw new WebhookVerificationError('The body is not JSON')
  }
  if (message?.type !== 'inventory.changed' || typeof message.data !== 'object' || message.data === null) {
    throw new WebhookVerificationError('The body is not an inventory.changed message')
  }
  return { id, timestamp: new Date(seconds * 1000), type: 'inventory.changed', data: message.data as InventoryChange }
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const value = (headers as Record<string, string | string[] | undefined>)[name]
  return Array.isArray(value) ? value[0] : value
}

function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const bytes = base64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret)
  if (bytes === undefined || bytes.length === 0) throw new WebhookVerificationError('The secret is not whsec_ and base64')
  return bytes
}

function base64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}
