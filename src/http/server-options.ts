import { LogController, type FastifyHttpOptions, type FastifyServerOptions } from 'fastify'
import type { Server } from 'node:http'
import type { Config } from '../config.js'
import { stdoutLog } from '../log-destination.js'
import type { Metrics } from '../metrics/metrics.js'
import type { Deprecation } from './deprecation.js'
import { handleClientError, handleError } from './errors.js'
import { lazySerializers } from './lazy-serializers.js'
import { withDeprecationOnUnrouted } from './plugins/deprecation.js'
import { countedClientErrors, countedFrameworkErrors } from './plugins/metrics.js'

/** The documented request body limit (64 KiB). */
export const BODY_LIMIT = 64 * 1024

export type ServerSettings = Pick<
  Config,
  'logLevel' | 'trustProxy' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'headersTimeoutMs' | 'maxHeaderBytes'
>

export interface ServerParts {
  /** A logger of the caller's (tests, scripts); otherwise one at LOG_LEVEL with the Authorization header redacted. */
  logger?: FastifyServerOptions['logger']
  /** This process's metrics, when there are any: they count what is answered before routing. */
  metrics?: Metrics | undefined
  /** The deprecated operation: a request refused before routing on its path carries its headers too. */
  deprecated: { url: string; deprecation: Deprecation }
}

/**
 * What only Fastify's constructor can set: the logger, the limits and timeouts of the HTTP server,
 * and the handlers of what is refused before any plugin sees it (by the HTTP parser, or by the router).
 */
export function serverOptions(settings: ServerSettings, { logger, metrics, deprecated }: ServerParts): FastifyHttpOptions<Server> {
  return {
    logger: logger ?? {
      level: settings.logLevel,
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
      // stdout, one write per event-loop turn (see log-destination.ts for why not pino's own).
      stream: stdoutLog(),
    },
    // One log line per request, written by the request-log plugin.
    logController: new LogController({ disableRequestLogging: true }),
    // The request-ids plugin decides which X-Request-Id to keep.
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    // Behind a load balancer the client's address comes from X-Forwarded-For, trusted as configured.
    trustProxy: settings.trustProxy as boolean | string,
    // Slow or idle clients must not hold sockets forever. A client gets HEADERS_TIMEOUT_MS to send its
    // headers and REQUEST_TIMEOUT_MS for the whole request (408 past either); an idle keep-alive
    // connection lasts KEEP_ALIVE_TIMEOUT_MS, longer than a load balancer's idle timeout, so the
    // balancer, not the service, closes it (no request lost in the race). Node enforces the first two
    // only every connectionsCheckingInterval (30 s by default): 1 s here, so the bounds hold to the second.
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    http: {
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
      maxHeaderSize: settings.maxHeaderBytes,
    },
    return503OnClosing: false,
    // Response serializers compiled when first used, not all at start (lazy-serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: lazySerializers() } },
    // A long petId must reach the validator (400), not fall out of the router as a 404.
    routerOptions: { maxParamLength: 8192 },
    clientErrorHandler: metrics ? countedClientErrors(metrics) : handleClientError,
    frameworkErrors: withDeprecationOnUnrouted(
      metrics ? countedFrameworkErrors(metrics) : handleError,
      deprecated.url,
      deprecated.deprecation,
    ),
  }
}
