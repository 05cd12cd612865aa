import fp from 'fastify-plugin'
import { type Counted, type RateLimitObserver, RateLimits, type RateLimitSettings } from '../rate-limit.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The rate limits, or null when both are off (RATE_LIMIT_PER_KEY=0 and RATE_LIMIT_PER_ADDRESS=0). */
    rateLimits: RateLimits | null
  }
  interface FastifyReply {
    /** The limits this request was counted against, for its RateLimit headers. */
    rateLimits: Counted[] | null
  }
}

export interface RateLimitsOptions extends RateLimitSettings {
  /** This process's metrics, when there are any: told of every refusal and every failure of the store. */
  observer?: RateLimitObserver & { storeFailed(): void }
}

/**
 * The rate limits (rate-limit.ts) the settings ask for, if any, their counter store connected before
 * the app is ready, and closed with it. Authentication does the counting (plugins/auth.ts); each
 * route group documents the headers and the 429 (documentRateLimits).
 */
export const rateLimits = fp<RateLimitsOptions>(
  async (app, { observer, ...settings }) => {
    const enabled = settings.rateLimitPerKey !== 0 || settings.rateLimitPerAddress !== 0
    const limits = enabled
      ? RateLimits.fromSettings(
          settings,
          {
            onFailure: (error, first) => {
              observer?.storeFailed()
              if (first) app.log.error({ err: error }, 'rate limit store (Redis) unavailable: counting in this process until it answers')
            },
            onRecovery: () => app.log.info('rate limit store (Redis) available again'),
          },
          observer,
        )
      : null
    app.decorate('rateLimits', limits)
    app.decorateReply('rateLimits', null)
    if (!limits) return
    app.addHook('onClose', () => limits.close())
    await limits.ready()
  },
  { name: 'petstore-rate-limits' },
)
