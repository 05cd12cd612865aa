import { createHash } from 'node:crypto'

/**
 * A strong entity tag for the exact bytes of a representation: equal bytes give equal tags on every
 * instance and across restarts, and any change of the bytes changes the tag. 128 bits of SHA-256.
 */
export function entityTag(bytes: string | Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`
}

// An entity-tag (RFC 9110 §8.8.3): an optional W/ and a quoted string of etagc characters.
const TAG = /\s*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)/y

/**
 * Whether an If-None-Match value matches `current` (RFC 9110 §13.1.2): `*` matches any current
 * representation, otherwise the weak comparison against each listed tag. A value that does not parse
 * matches nothing, so the full response is sent.
 */
export function noneMatch(header: string | undefined, current: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  const opaque = current.replace(/^W\//, '')
  TAG.lastIndex = 0
  for (let m = TAG.exec(header); m; m = TAG.exec(header)) {
    if (m[2] === opaque) return true
    if (TAG.lastIndex >= header.length) break
  }
  return false
}
