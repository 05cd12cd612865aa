/** One place for petId parsing: canonical decimal int64 text to an exact bigint. */
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

// Canonical form only: no sign on zero, no leading zeros, no exponent, no '+'. One text per value.
const CANONICAL_INT = /^(?:0|-?[1-9][0-9]{0,18})$/

/** Returns the exact value, or undefined when `text` is not a canonical decimal int64. */
export function parseInt64(text: string): bigint | undefined {
  if (!CANONICAL_INT.test(text)) return undefined
  const value = BigInt(text)
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}
