// Verifies a webhook message as Standard Webhooks 1.0 signs it: HMAC-SHA256 over
// `<webhook-id>.<webhook-timestamp>.<body>` with the secret's bytes (`whsec_` + base64), compared in
// constant time by Web Crypto, and a timestamp within a tolerance, so a captured message cannot be
// replayed later.
import { WebhookVerificationError } from './errors.js'
import { parseExact, supportsExactJson } from './json.js'
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
 * re-serialized object). Headers may be a fetch `Headers` or a record such as node:http's
 * `req.headers` (names in any case; repeated `webhook-signature` values are all tried). Rejects with a
 * plain Error on a runtime that cannot read int64s exactly (no JSON.parse source text access).
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<WebhookMessage> {
  // Without JSON.parse's source text, int64s would come out rounded, typed as bigints: refuse instead.
  if (!supportsExactJson()) {
    throw new Error(
      'petstore-client needs JSON.parse source text access and JSON.rawJSON (Node.js 22+, current browsers) to read int64s exactly',
    )
  }
  const id = single(headers, 'webhook-id')
  const timestamp = single(headers, 'webhook-timestamp')
  // Several signatures (a secret being rotated) come space-separated, or as repeated headers.
  const signatures = values(headers, 'webhook-signature')?.join(' ')
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('Missing webhook-id, webhook-timestamp or webhook-signature (or one given twice, differently)')
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not a number of seconds')
  const seconds = Number(timestamp)
  const now = (options.now ?? new Date()).getTime() / 1000
  const tolerance = options.toleranceSeconds ?? 300
  // Written so that a NaN (an invalid `now` or tolerance) rejects rather than lets any timestamp through.
  if (!(Math.abs(now - seconds) <= tolerance)) throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`)

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

/** A header's values, its name in any case; undefined when absent or empty. */
function values(headers: WebhookHeaders, name: string): string[] | undefined {
  let found: string | string[] | null | undefined
  if (typeof (headers as Headers).get === 'function') found = (headers as Headers).get(name)
  else {
    const record = headers as Record<string, string | string[] | undefined>
    found = record[name]
    // Node's http module gives lower-case names; other frameworks and hand-made records may not.
    if (found === undefined) for (const key of Object.keys(record)) if (key.toLowerCase() === name) found = record[key]
  }
  const list = (Array.isArray(found) ? found : [found]).filter((v): v is string => typeof v === 'string' && v.trim() !== '')
  return list.length === 0 ? undefined : list.map((v) => v.trim())
}

/** A header that must have one value: undefined when absent, empty, or given twice with different values. */
function single(headers: WebhookHeaders, name: string): string | undefined {
  const list = values(headers, name)
  return list?.every((v) => v === list[0]) ? list[0] : undefined
}

function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const bytes = base64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret)
  // A misconfiguration, not a forged message: a TypeError, so a handler does not answer it as one.
  if (bytes === undefined || bytes.length === 0) throw new TypeError('The webhook secret is not whsec_ and base64')
  return bytes
}

function base64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}
