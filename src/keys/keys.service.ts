import { bearerToken } from '../bearer-token.js'
import type { VersionedLru } from '../cache/versioned.js'
import { type AuthenticatedKey, isScope, LOCATION_LIMITS, SCOPES, type Scope } from '../domain.js'
import { ConflictError, InvalidInputError, LocationInactiveError, NotFoundError, UnauthorizedError, UnavailableError } from '../errors.js'
import type { ApiKey, KeyStore, LocationStore, Storage } from '../storage/ports.js'
import { dbSpan, inSpan } from '../spans.js'
import { KEY_NAME_PATTERN, generateKey, hashKey, isWellFormedKey, sameHash } from './api-key.js'

/** last_used_at is kept to the minute: writing it on every request would cost a commit each. */
const TOUCH_INTERVAL_MS = 60_000
const FIRST_KEY_NAME = 'default'
/** The pause between attempts to make the first key while the database is unavailable. */
const START_RETRY_MS = 200
/** Key ids are 32-bit in both schemas: a larger number names no key (and must not reach the database). */
export const MAX_KEY_ID = 2147483647

/**
 * A scope list as people write it (`inventory:read,orders:read`), in the order of SCOPES; an unknown
 * or repeated scope, or none at all, is refused naming the scopes there are.
 */
export function parseScopeList(text: string): Scope[] {
  const names = text.split(',').map((name) => name.trim())
  const unknown = names.filter((name) => !isScope(name))
  if (unknown.length > 0) {
    throw new InvalidInputError(`Unknown scope '${unknown[0] ?? ''}': the scopes are ${SCOPES.join(', ')}`)
  }
  if (new Set(names).size !== names.length) throw new InvalidInputError('A scope is named twice')
  return SCOPES.filter((scope) => names.includes(scope))
}

export class KeysService {
  private readonly touchedAt = new Map<number, number>()
  /**
   * @param verified where verified tokens are remembered (see FreshCache); without it, every request
   * looks its key up (the CLI's case)
   */
  constructor(
    private readonly storage: KeyStore & Pick<LocationStore, 'listLocations'> & Pick<Storage, 'dialect'>,
    private readonly verified?: VersionedLru<string, AuthenticatedKey>,
  ) {}

  /**
   * Resolves with the key for a valid `Authorization` header value; throws UnauthorizedError
   * otherwise. `keysVersion` is the storage's keys version read at the start of the request: a key
   * created or revoked since any earlier request moves it, so a remembered verification is never stale.
   */
  async authenticate(authorization: string | undefined, keysVersion: string): Promise<AuthenticatedKey> {
    if (!authorization) throw new UnauthorizedError('Missing API key: send Authorization: Bearer <API_KEY>')
    const token = bearerToken(authorization)
    if (!token || !isWellFormedKey(token)) throw new UnauthorizedError('Malformed API key', true)
    const known = this.verified?.get(token, keysVersion)
    if (known !== undefined) {
      this.touch(known.id)
      return known
    }
    const hash = hashKey(token)
    const key = await inSpan('SELECT api_keys', dbSpan(this.storage.dialect, 'SELECT', { 'db.collection.name': 'api_keys' }), () =>
      this.storage.findActiveKey(hash),
    )
    // The lookup is by hash, so it reveals nothing about the token; the compare is constant-time anyway.
    if (!key || !sameHash(key.hash, hash)) {
      // A key verified before and revoked since is forgotten, so its next use is counted per address
      // before any lookup, like any other bad key.
      this.verified?.delete(token)
      throw new UnauthorizedError('Unknown or revoked API key', true)
    }
    // Only keys that verified are remembered, so a flood of bad tokens cannot evict good ones.
    const verified: AuthenticatedKey =
      key.locations === undefined ? { id: key.id, scopes: key.scopes } : { id: key.id, scopes: key.scopes, locations: key.locations }
    this.verified?.set(token, keysVersion, verified)
    this.touch(key.id)
    return verified
  }

  /**
   * Whether this Authorization value carries a token this process has verified before, at any keys
   * version: such requests are not counted per address. Only a hint; authenticate() decides.
   */
  wasVerified(authorization: string | undefined): boolean {
    const token = authorization && bearerToken(authorization)
    return token !== undefined && token !== '' && this.verified?.has(token) === true
  }

  private touch(id: number) {
    const now = Date.now()
    if (now - (this.touchedAt.get(id) ?? 0) < TOUCH_INTERVAL_MS) return
    this.touchedAt.set(id, now)
    // Best effort: a failure here must not fail the request it rides on.
    this.storage.touchKey(id, new Date(now).toISOString()).catch(() => this.touchedAt.delete(id))
  }

  /**
   * Creates a key with these scopes (every scope when none are given), held to `locations` when they
   * are given (each an active location); the token is returned once and only its hash is stored.
   */
  async create(name: string, scopes: readonly Scope[] = SCOPES, locations?: readonly number[]): Promise<{ key: ApiKey; token: string }> {
    if (!KEY_NAME_PATTERN.test(name)) {
      throw new InvalidInputError('Key name must start with a letter and hold up to 64 letters, digits, dots, dashes or underscores')
    }
    if (scopes.length === 0) throw new InvalidInputError(`A key needs at least one scope: ${SCOPES.join(', ')}`)
    if (locations !== undefined) await this.checkLocations(locations)
    const token = generateKey()
    const key = await this.storage.createKey(name, scopes, hashKey(token), new Date().toISOString(), locations)
    if (!key) throw new ConflictError('key_name_taken', `An active key named '${name}' already exists`)
    return { key, token }
  }

  /** Locations a key is held to: 1 to LOCATION_LIMITS.perKey distinct ones, each there and active. */
  private async checkLocations(locations: readonly number[]) {
    if (locations.length === 0 || locations.length > LOCATION_LIMITS.perKey)
      throw new InvalidInputError(`A key is held to 1 to ${LOCATION_LIMITS.perKey} locations`)
    if (new Set(locations).size !== locations.length) throw new InvalidInputError('A location is named twice')
    const known = new Map((await this.storage.listLocations()).map((l) => [l.id, l]))
    for (const id of locations) {
      const location = known.get(id)
      if (!location) throw new NotFoundError(`No location ${id}`)
      if (!location.active) throw new LocationInactiveError(id)
    }
  }

  /** Every key, revoked ones too (the CLI's listing). */
  list(): Promise<ApiKey[]> {
    return this.storage.listKeys()
  }

  /** The active keys (what the API lists: a revoked key is gone from it). */
  async listActive(): Promise<ApiKey[]> {
    return (await this.storage.listKeys()).filter((key) => key.revokedAt === null)
  }

  async get(id: number): Promise<ApiKey> {
    const key = await this.storage.getActiveKey(id)
    if (!key) throw new NotFoundError(`No active key numbered ${id}`)
    return key
  }

  /** Accepts a key name or its numeric id. */
  async revoke(nameOrId: string): Promise<ApiKey> {
    const target = /^\d+$/.test(nameOrId) ? Number(nameOrId) : nameOrId
    const key =
      typeof target === 'number' && target > MAX_KEY_ID ? undefined : await this.storage.revokeKey(target, new Date().toISOString())
    if (!key) throw new NotFoundError(`No active key named or numbered '${nameOrId}'`)
    return key
  }

  /**
   * On a database that has never had a key, creates the first one so the service is usable. Atomic:
   * of several instances starting together on a fresh database, exactly one creates it.
   */
  async createFirstKeyIfNone(retryForMs = 0): Promise<{ key: ApiKey; token: string } | undefined> {
    const token = generateKey()
    const hash = hashKey(token)
    const giveUpAt = Date.now() + retryForMs
    for (let attempt = 1; ; attempt++) {
      try {
        const key = await this.storage.createFirstKey(FIRST_KEY_NAME, SCOPES, hash, new Date().toISOString())
        if (key) return { key, token }
        // None made: another instance made the first key, or an earlier attempt of ours committed and
        // only its answer was lost; then the key is ours and its token must still be shown.
        if (attempt === 1) return undefined
        const ours = await this.storage.findActiveKey(hash)
        return ours && { key: await this.get(ours.id), token }
      } catch (error) {
        // Starting is not a request: a database slower than DB_TIMEOUT_MS for a moment (a busy machine,
        // other instances starting) is waited for, the same token offered again, until `retryForMs`.
        if (!(error instanceof UnavailableError) || Date.now() + START_RETRY_MS > giveUpAt) throw error
        await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS))
      }
    }
  }
}
