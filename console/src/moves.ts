// What every stock write from the console shares: the numbers it takes, and an Idempotency-Key kept
// for a write whose outcome is not known, so that sending it again cannot count its units twice.
import { PetstoreConnectionError, PetstoreError, PetstoreUnknownOutcomeError } from 'petstore-client'

/** The largest quantity (and number of units) the API takes. */
export const MAX = 2147483647

/** A whole number typed in a field (digits only, spaces around allowed), or undefined. */
export const wholeNumber = (text: string) => (/^\s*\d{1,10}\s*$/.test(text) ? Number(text) : undefined)

/** Whether a failed write may have been applied all the same (no answer, or a failure on the way). */
export const uncertain = (error: unknown) =>
  error instanceof PetstoreUnknownOutcomeError ||
  error instanceof PetstoreConnectionError ||
  (error instanceof PetstoreError && error.status >= 500)

/** A write's body as text, to tell the same write sent again (ids are bigints, which JSON.stringify refuses). */
export const bodyText = (body: object) => JSON.stringify(body, (_, value) => (typeof value === 'bigint' ? String(value) : value))

/** A random UUID v4 (crypto.randomUUID exists only in secure contexts; getRandomValues everywhere). */
export function newKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
