import { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'

/** A fixed-window counter: how many hits its key has had in the window, after this one. */
export interface CounterStore {
  /** Counts one hit on `key`, which expires with its window `ttlMs` from now. */
  hit(key: string, ttlMs: number): Promise<number>
  /** Resolves once the store can count (a shared one has connected, or given up for now). */
  ready(): Promise<void>
  close(): Promise<void>
}

/** Counters kept by keys under attack are bounded: the least recently used go first. */
const MAX_COUNTERS = 100_000

/**
 * This process's own counters (one instance, one worker). Keys name their window, so a past
 * window's counters are never read again: they need no expiry of their own (which would cost a clock
 * read per hit) and are simply the first to go when the bound is reached.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly counts = new LRUCache<string, number>({ max: MAX_COUNTERS })

  async hit(key: string): Promise<number> {
    const count = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, count)
    return count
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {}
}

/** INCR and, on a window's first hit, its expiry: one atomic round trip. */
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`

/** How long a request waits for Redis before it is counted in this process instead. */
export const REDIS_TIMEOUT_MS = 250
const CONNECT_TIMEOUT_MS = 2000

export interface RedisStoreEvents {
  /** Redis failed a hit (the first of an outage, then one per failed hit: for the metrics). */
  onFailure(error: Error, first: boolean): void
  /** A hit succeeded again after failures. */
  onRecovery(): void
}

/**
 * Counters shared by every instance and worker, in Redis. A rate limit must never take the service
 * down with it: while Redis is unreachable (refused, hung past REDIS_TIMEOUT_MS), hits are counted in
 * this process instead, so limits still hold per process, and Redis is used again once it answers.
 * Nothing waits for a reconnection: commands fail at once while the connection is down.
 */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis
  private readonly fallback = new MemoryCounterStore()
  private failing = false

  constructor(
    url: string,
    private readonly events: RedisStoreEvents,
  ) {
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Hits of one event-loop turn go out as one pipeline.
      enableAutoPipelining: true,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      lazyConnect: false,
    })
    // Connection errors are reported through the failed hits; without a listener they would crash.
    this.redis.on('error', () => {})
    this.redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
  }

  async hit(key: string, ttlMs: number): Promise<number> {
    try {
      const count = Number(
        await (this.redis as unknown as { rateLimitHit(k: string, ttl: number): Promise<number> }).rateLimitHit(key, ttlMs),
      )
      if (this.failing) {
        this.failing = false
        this.events.onRecovery()
      }
      return count
    } catch (error) {
      this.events.onFailure(error as Error, !this.failing)
      this.failing = true
      return this.fallback.hit(key)
    }
  }

  /**
   * Waits for the first connection, up to its connect timeout, so the first requests are counted in
   * Redis; a Redis that is down at start does not hold the start up (its failures are reported as hits fail).
   */
  async ready(): Promise<void> {
    if (this.redis.status === 'ready') return
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.redis.off('ready', done)
        resolve()
      }
      const timer = setTimeout(done, CONNECT_TIMEOUT_MS)
      this.redis.once('ready', done)
    })
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }
}
