import type { Webhook } from '../domain.js'

/** Where a subscription's delivery stands, in one word. */
export function webhookState(w: Webhook): 'active' | 'failing' | 'disabled' {
  if (w.disabledAt !== null) return 'disabled'
  return w.failedAttempts > 0 ? 'failing' : 'active'
}

const str = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

// Hand-written for the exact int64 cursor (see inventory.json.ts). Never the secret.
export function webhookJson(w: Webhook): string {
  return (
    `{"id":${w.id},"url":${str(w.url)},"description":${str(w.description)},"createdAt":"${w.createdAt}",` +
    `"state":"${webhookState(w)}","deliveredThrough":${w.deliveredThrough},"lastSuccessAt":${str(w.lastSuccessAt)},` +
    `"failingSince":${str(w.failingSince)},"failedAttempts":${w.failedAttempts},"nextAttemptAt":${str(w.nextAttemptAt)},` +
    `"lastError":${str(w.lastError)},"disabledAt":${str(w.disabledAt)},"disabledReason":${str(w.disabledReason)}}`
  )
}
