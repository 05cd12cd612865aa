import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** One place for the key format: a recognisable prefix and 256 random bits, base64url. */
export const KEY_PREFIX = 'psk_'
export const KEY_PATTERN = /^psk_[A-Za-z0-9_-]{43}$/
export const KEY_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

export function isWellFormedKey(token: string): boolean {
  return KEY_PATTERN.test(token)
}

// The tokens are random and high-entropy, so a plain SHA-256 is enough: no salt or slow hash is needed.
export function hashKey(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}
