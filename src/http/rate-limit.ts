import type { FastifyInstance, FastifyReply } from 'fastify'
import { isIPv6 } from 'node:net'
import { Type } from 'typebox'
import type { Config } from '../config.js'
import { RateLimitedError } from '../errors.js'
import { errorResponses } from './error.schema.js'
import { MemoryCounterStore, RedisCounterStore, type CounterStore, type RedisStoreEvents } from '../ratelimit/counter-store.js'

export type PolicyName = 'per-key' | 'per-address'

/** Told of every refusal, for the metrics. */
export interface RateLimitObserver {
  refused(policy: PolicyName): void
}

/** One limit a request was counted against, for its RateLimit headers (reply.rateLimits, plugins/rate-limits.ts). */
export interface Counted {
  policy: PolicyName
  quota: number
  remaining: number
  resetS: number
}

/**
 * The partition a client address is counted in: an IPv4 address as it is, an IPv6 address by its
 * /64 prefix, the smallest block a client is usually given (one host may use the whole /64, so
 * counting each address apart would let it guess keys without limit).
 */
export function addressPartition(address: string): string {
  if (!isIPv6(address)) return address
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)) return address.slice(7)
  const [head = '', tail] = address.toLowerCase().split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}

/** The rate-limit response headers, as the OpenAPI document declares them. */
export const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': Type.String({
    description:
      'The limits this request was counted against (draft-ietf-httpapi-ratelimit-headers): `"per-key";q=QUOTA;w=WINDOW_SECONDS` ' +
      'for requests with a verified API key, `"per-address";q=…;w=…` for requests whose key the service has not verified yet ' +
      '(missing, malformed, unknown, or used for the first time).',
  }),
  RateLimit: Type.String({
    description: 'What is left of each limit: `"per-key";r=REMAINING;t=SECONDS_UNTIL_THE_WINDOW_RESETS`, and likewise for `"per-address"`.',
  }),
}

/** The 429 response's own header, beside the RateLimit ones. */
export const RETRY_AFTER_HEADER = {
  'Retry-After': Type.Integer({ description: 'Seconds until the window resets and the request may be retried.' }),
}

/**
 * Statuses answered before authentication counts the request, so without RateLimit headers: by the
 * HTTP server (408, 431), the router (414) or the 405 routes.
 */
const UNCOUNTED_STATUSES = new Set(['405', '408', '414', '431'])

/**
 * Declares, on every response of every operation registered in `scope` (the authenticated API),
 * the RateLimit headers it carries while rate limits are on (the default), and the 429 response.
 */
export function documentRateLimits(scope: FastifyInstance) {
  scope.addHook('onRoute', (route) => {
    const responses = route.schema?.response as Record<string, { headers?: object }> | undefined
    if (!responses) return
    responses['429'] ??= errorResponses(429)[429] as { headers?: object }
    for (const [status, response] of Object.entries(responses)) {
      if (UNCOUNTED_STATUSES.has(status)) continue
      const own = status === '429' ? RETRY_AFTER_HEADER : {}
      responses[status] = { ...response, headers: { ...response.headers, ...own, ...RATE_LIMIT_HEADERS } }
    }
  })
}

/**
 * Rate limits with fixed windows of RATE_LIMIT_WINDOW_S: per API key, and per client address for
 * requests whose key is not verified yet, which is what throttles key guessing before any lookup.
 * Counters live in this process, or with REDIS_URL in Redis, shared by every instance and worker.
 * Each response carries the RateLimit-Policy and RateLimit headers of the limits it was counted
 * against (draft-ietf-httpapi-ratelimit-headers-11); over a limit: 429 rate_limited with Retry-After.
 */
/** The settings the rate limits use. */
export type RateLimitSettings = Pick<Config, 'rateLimitPerKey' | 'rateLimitPerAddress' | 'rateLimitWindowS' | 'redisUrl' | 'redisKeyPrefix'>

export class RateLimits {
  private readonly windowMs: number
  private readonly quotas: Record<PolicyName, number>

  constructor(
    private readonly store: CounterStore,
    private readonly prefix: string,
    config: Pick<Config, 'rateLimitPerKey' | 'rateLimitPerAddress' | 'rateLimitWindowS'>,
    private readonly observer?: RateLimitObserver,
  ) {
    this.windowMs = config.rateLimitWindowS * 1000
    this.quotas = { 'per-key': config.rateLimitPerKey, 'per-address': config.rateLimitPerAddress }
  }

  static fromSettings(settings: RateLimitSettings, events: RedisStoreEvents, observer?: RateLimitObserver): RateLimits {
    const store = settings.redisUrl ? new RedisCounterStore(settings.redisUrl, events) : new MemoryCounterStore()
    return new RateLimits(store, settings.redisKeyPrefix, settings, observer)
  }

  enabled(policy: PolicyName): boolean {
    return this.quotas[policy] > 0
  }

  /** Counts this request against `policy` for `partition`; throws RateLimitedError past the quota. */
  async count(reply: FastifyReply, policy: PolicyName, partition: string): Promise<void> {
    const quota = this.quotas[policy]
    const now = Date.now()
    const windowStart = now - (now % this.windowMs)
    const resetMs = windowStart + this.windowMs - now
    const hits = await this.store.hit(`${this.prefix}rate:${policy}:${partition}:${windowStart}`, resetMs)
    const resetS = Math.ceil(resetMs / 1000)
    reply.rateLimits ??= []
    const counted = reply.rateLimits
    counted.push({ policy, quota, remaining: Math.max(0, quota - hits), resetS })
    const windowS = this.windowMs / 1000
    reply.header('ratelimit-policy', counted.map((c) => `"${c.policy}";q=${c.quota};w=${windowS}`).join(', '))
    reply.header('ratelimit', counted.map((c) => `"${c.policy}";r=${c.remaining};t=${c.resetS}`).join(', '))
    if (hits > quota) {
      this.observer?.refused(policy)
      reply.header('retry-after', String(resetS))
      const whose = policy === 'per-key' ? 'this API key' : 'this address without a verified key'
      throw new RateLimitedError(`Rate limit exceeded: ${quota} requests per ${windowS} s for ${whose}; retry in ${resetS} s`)
    }
  }

  ready(): Promise<void> {
    return this.store.ready()
  }

  close(): Promise<void> {
    return this.store.close()
  }
}
