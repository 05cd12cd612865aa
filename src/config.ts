import { Type, type TSchema } from 'typebox'
import { createValidator } from './validation.js'

export const ENVIRONMENTS = ['production', 'staging', 'development'] as const
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export interface Config {
  port: number
  host: string
  databaseUrl: string
  dbPoolSize: number
  workers: number
  dbTimeoutMs: number
  dbMigrationTimeoutMs: number
  shutdownGraceMs: number
  /** On SIGTERM: how long the service keeps serving (readiness failed, Connection: close) before it stops listening. */
  shutdownDrainMs: number
  headersTimeoutMs: number
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  maxHeaderBytes: number
  maxConnections: number
  maxInFlight: number
  /** Load shedding: mean event-loop delay (ms) past which new requests get 503; 0 turns it off. */
  shedEventLoopDelayMs: number
  /** Load shedding: event-loop utilization (0–1) past which new requests get 503; 0 turns it off. */
  shedEventLoopUtilization: number
  /** The metrics listener's port (GET /metrics); undefined when METRICS_PORT is unset: no metrics at all. */
  metricsPort: number | undefined
  metricsHost: string
  /** The bearer token a scrape must send; '' lets any client that reaches METRICS_HOST scrape. */
  metricsToken: string
  /** PATCH without If-Match is refused (428), so no client can overwrite a change it has not seen. */
  requireIfMatch: boolean
  /** Requests per window per API key; 0: no limit. */
  rateLimitPerKey: number
  /** Requests per window per client address whose key is not (yet) verified; 0: no limit. */
  rateLimitPerAddress: number
  rateLimitWindowS: number
  /** Where the rate-limit counters are shared by every instance and worker; '' keeps them per process. */
  redisUrl: string
  redisKeyPrefix: string
  /** Fastify's trustProxy: false, true, a hop count, or a comma-separated list of addresses or CIDRs. */
  trustProxy: boolean | number | string
  logLevel: (typeof LOG_LEVELS)[number]
  environment: (typeof ENVIRONMENTS)[number]
  /** Where clients reach this instance, without the /v1 segment; '' when not set. */
  publicBaseUrl: string
  productionBaseUrl: string
  stagingBaseUrl: string
  /** When GET /v1/pets/{petId} was deprecated: its Deprecation header. */
  petLookupDeprecatedAt: Date
  /** From when GET /v1/pets/{petId} answers 410 gone: its Sunset header. */
  petLookupSunsetAt: Date
  /** How often each process adds its counts of deprecated calls to the database. */
  deprecatedCallsFlushMs: number
  /** A comment line on every open change stream this often, so proxies keep it open. */
  streamHeartbeatMs: number
  /** Open change streams per API key, per process; one more is refused with 429. */
  streamMaxPerKey: number
  /** How long a webhook delivery waits for its answer. */
  webhookTimeoutMs: number
  /** The waits before each retry of a failed webhook delivery (ms); past the last, the subscription is disabled. */
  webhookRetryScheduleMs: number[]
  /** Webhook destinations on loopback, private, link-local and unique-local addresses are allowed (development, tests). */
  webhookAllowPrivate: boolean
  /** How long a process holds a webhook subscription's delivery without renewing it; another takes over after. */
  webhookLeaseMs: number
  /** BROKER_ALLOWED_HOSTS: the host:port pairs a nats:// or amqp:// subscription may name, as written. */
  brokerAllowedHosts: string[] | undefined
  /** LEDGER_RETENTION: ledger rows older than this (ms) are removed; undefined keeps every row. */
  ledgerRetentionMs: number | undefined
  /** OTEL_SDK_DISABLED: true keeps tracing off whatever else is set. */
  otelSdkDisabled: boolean
  /** OTEL_TRACES_EXPORTER: `otlp` turns tracing on, `none` keeps it off whatever else is set. */
  otelTracesExporter: 'otlp' | 'none' | undefined
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL (traces go to its /v1/traces); setting it turns tracing on. */
  otelEndpoint: string | undefined
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the traces URL itself, used as written; setting it turns tracing on. */
  otelTracesEndpoint: string | undefined
  otelProtocol: (typeof OTLP_PROTOCOLS)[number]
  /** OTEL_SERVICE_NAME; undefined: OTEL_RESOURCE_ATTRIBUTES' service.name, else `petstore`. */
  otelServiceName: string | undefined
  /** OTEL_RESOURCE_ATTRIBUTES, decoded. */
  otelResourceAttributes: Record<string, string>
  otelSampler: (typeof OTEL_SAMPLERS)[number]
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the traceidratio samplers (default 1). */
  otelSamplerRatio: number
  /** OTEL_LOG_LEVEL (any case): the level of the OpenTelemetry SDK's own diagnostics (default INFO). */
  otelLogLevel: (typeof OTEL_LOG_LEVELS)[number]
}

/** The OTLP transports this service exports traces over (gRPC is not one: it would need its own stack). */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const
/** OTEL_TRACES_SAMPLER's values, as the OpenTelemetry specification names them. */
export const OTEL_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const

/** OTEL_LOG_LEVEL's values, as the OpenTelemetry specification names them (read in any case). */
export const OTEL_LOG_LEVELS = ['NONE', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'VERBOSE', 'ALL'] as const

/**
 * Tracing is on when OTEL_TRACES_EXPORTER is `otlp`, or an OTLP endpoint is set and the exporter is
 * not `none`; never with OTEL_SDK_DISABLED=true (the specification's switch for every signal).
 */
export function tracingEnabled(
  config: Pick<Config, 'otelSdkDisabled' | 'otelTracesExporter' | 'otelEndpoint' | 'otelTracesEndpoint'>,
): boolean {
  if (config.otelSdkDisabled) return false
  if (config.otelTracesExporter !== undefined) return config.otelTracesExporter === 'otlp'
  return config.otelEndpoint !== undefined || config.otelTracesEndpoint !== undefined
}

/**
 * OTEL_RESOURCE_ATTRIBUTES (`key=value,key=value`, each percent-encoded as the specification says),
 * or undefined when it is not that.
 */
export function parseResourceAttributes(text: string): Record<string, string> | undefined {
  const attributes: Record<string, string> = {}
  if (text.trim() === '') return attributes
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) return undefined
    try {
      const key = decodeURIComponent(pair.slice(0, at).trim())
      const value = decodeURIComponent(pair.slice(at + 1).trim())
      if (key === '') return undefined
      attributes[key] = value
    } catch {
      return undefined
    }
  }
  return attributes
}

/**
 * What the OpenAPI document's servers list names until PRODUCTION_BASE_URL and STAGING_BASE_URL are
 * set: placeholders on a reserved domain, marked as such in the document.
 */
export const PLACEHOLDER_BASE_URLS = { production: 'https://petstore.example.com', staging: 'https://staging.petstore.example.com' }

// An http(s) base URL; the service adds /v1 itself, so a URL already ending in /v1 is refused.
const URL_PATTERN = 'https?://[^\\s/?#]+(/[^\\s?#]*)?(?<!/v1)(?<!/v1/)'
const url = Type.String({ pattern: `^${URL_PATTERN}$` })
const hostName = Type.String({ minLength: 1, pattern: '^[^\\s/]+$' })

// An RFC 3339 date-time (section 5.6), offset required; its calendar is checked by parseRfc3339.
const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/
const rfc3339 = Type.String({ pattern: RFC_3339.source })

/** The time an RFC 3339 date-time names, or undefined when it names none (a 30 February, a 25th hour). */
export function parseRfc3339(text: string): Date | undefined {
  const [, year, month, day, hour, minute, second, , , offsetHour = '0', offsetMinute = '0'] = RFC_3339.exec(text) ?? []
  if (year === undefined) return undefined
  const date = new Date(0)
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day))
  const calendar = date.getUTCFullYear() === Number(year) && date.getUTCMonth() === Number(month) - 1 && date.getUTCDate() === Number(day)
  // A leap second (:60) is refused: JavaScript times cannot name one.
  const clock = Number(hour) < 24 && Number(minute) < 60 && Number(second) < 60 && Number(offsetHour) < 24 && Number(offsetMinute) < 60
  const ms = Date.parse(text.toUpperCase())
  return calendar && clock && !Number.isNaN(ms) ? new Date(ms) : undefined
}

/**
 * A request waits for the database in at most three bounded steps (reading the change counters,
 * checking an unremembered key, then its read or write), each at most DB_TIMEOUT_MS. Shutdown's grace
 * must outlast them, or a drain could exit with a write still pending.
 */
const REQUEST_DB_STEPS = 3
export function minimumGraceMs(dbTimeoutMs: number): number {
  return REQUEST_DB_STEPS * dbTimeoutMs + 1000
}

const DURATION = '\\s*\\d{1,9}(ms|s|m|h)\\s*'
const MAX_RETRIES = 20
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** LEDGER_RETENTION's duration in milliseconds: a whole number with a unit s, m, h or d. */
export function parseRetention(text: string): number | undefined {
  const [, amount, unit] = /^\s*(\d{1,9})(s|m|h|d)\s*$/.exec(text) ?? []
  const ms = unit === undefined ? Number.NaN : Number(amount) * UNIT_MS[unit]!
  return ms >= 1000 ? ms : undefined
}

/** WEBHOOK_RETRY_SCHEDULE's durations in milliseconds, or undefined when one is past 24 hours. */
export function parseRetrySchedule(text: string): number[] | undefined {
  const waits = text.split(',').map((part) => {
    const [, amount, unit] = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(part) ?? []
    return unit === undefined ? Number.NaN : Number(amount) * UNIT_MS[unit]!
  })
  return waits.every((ms) => ms <= 24 * UNIT_MS.h!) ? waits : undefined
}

interface Variable {
  key: keyof Config
  /** Shown in the error line: what the variable accepts. */
  allowed: string
  schema: TSchema
  /** Converts a value the schema accepted; undefined refuses it. */
  convert?: (value: string) => unknown
  /** The value when the variable is unset; undefined leaves the setting off. */
  default: (config: Partial<Config>) => string | undefined
}

/** Every variable the service reads, in one table (docs/operations.md's configuration table mirrors it). */
const VARIABLES: Record<string, Variable> = {
  PORT: {
    key: 'port',
    allowed: 'an integer from 0 to 65535',
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    default: () => '8080',
  },
  HOST: {
    key: 'host',
    allowed: 'an interface address or host name to listen on',
    schema: hostName,
    default: () => '127.0.0.1',
  },
  DATABASE_URL: {
    key: 'databaseUrl',
    allowed: "'sqlite:PATH' (a file path, or :memory:) or a postgres:// (postgresql://) connection URL",
    schema: Type.String({ pattern: '^(sqlite:.+|postgres(ql)?://.+)$' }),
    default: () => 'sqlite:./data/petstore.db',
  },
  WORKERS: {
    key: 'workers',
    allowed: 'an integer from 1 to 64 (processes serving one port; `serve --workers N` overrides)',
    schema: Type.Integer({ minimum: 1, maximum: 64 }),
    default: () => '1',
  },
  DB_POOL_SIZE: {
    key: 'dbPoolSize',
    allowed: 'an integer from 1 to 1000 (PostgreSQL connections per process)',
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    default: () => '10',
  },
  DB_TIMEOUT_MS: {
    key: 'dbTimeoutMs',
    allowed: 'an integer from 100 to 600000 (milliseconds)',
    schema: Type.Integer({ minimum: 100, maximum: 600_000 }),
    default: () => '5000',
  },
  DB_MIGRATION_TIMEOUT_MS: {
    key: 'dbMigrationTimeoutMs',
    allowed: 'an integer from 1000 to 86400000 (milliseconds)',
    schema: Type.Integer({ minimum: 1000, maximum: 86_400_000 }),
    default: () => '600000',
  },
  SHUTDOWN_GRACE_MS: {
    key: 'shutdownGraceMs',
    allowed: `an integer from 1000 to 86400000 (milliseconds), at least ${REQUEST_DB_STEPS} × DB_TIMEOUT_MS + 1000`,
    schema: Type.Integer({ minimum: 1000, maximum: 86_400_000 }),
    default: (config) => String(Math.max(10_000, minimumGraceMs(config.dbTimeoutMs ?? 5000))),
  },
  SHUTDOWN_DRAIN_MS: {
    key: 'shutdownDrainMs',
    allowed: 'an integer from 0 to 600000 (milliseconds)',
    schema: Type.Integer({ minimum: 0, maximum: 600_000 }),
    default: () => '5000',
  },
  HEADERS_TIMEOUT_MS: {
    key: 'headersTimeoutMs',
    allowed: 'an integer from 1000 to 600000 (milliseconds), at most REQUEST_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 1000, maximum: 600_000 }),
    default: () => '10000',
  },
  REQUEST_TIMEOUT_MS: {
    key: 'requestTimeoutMs',
    allowed: 'an integer from 1000 to 3600000 (milliseconds)',
    schema: Type.Integer({ minimum: 1000, maximum: 3_600_000 }),
    default: () => '30000',
  },
  KEEP_ALIVE_TIMEOUT_MS: {
    key: 'keepAliveTimeoutMs',
    allowed: 'an integer from 1000 to 3600000 (milliseconds)',
    schema: Type.Integer({ minimum: 1000, maximum: 3_600_000 }),
    default: () => '72000',
  },
  MAX_HEADER_BYTES: {
    key: 'maxHeaderBytes',
    allowed: 'an integer from 1024 to 1048576 (bytes)',
    schema: Type.Integer({ minimum: 1024, maximum: 1_048_576 }),
    default: () => '16384',
  },
  MAX_CONNECTIONS: {
    key: 'maxConnections',
    allowed: 'an integer from 1 to 1000000 (open connections per process)',
    schema: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    default: () => '10000',
  },
  MAX_IN_FLIGHT: {
    key: 'maxInFlight',
    allowed: 'an integer from 1 to 1000000 (requests being handled at once per process)',
    schema: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    default: () => '1000',
  },
  LOAD_SHED_EVENT_LOOP_DELAY_MS: {
    key: 'shedEventLoopDelayMs',
    allowed: 'an integer from 0 to 60000 (milliseconds; 0 turns it off)',
    schema: Type.Integer({ minimum: 0, maximum: 60_000 }),
    default: () => '500',
  },
  LOAD_SHED_EVENT_LOOP_UTILIZATION: {
    key: 'shedEventLoopUtilization',
    allowed: 'a number from 0 to 1 (0 turns it off)',
    schema: Type.Number({ minimum: 0, maximum: 1 }),
    default: () => '0',
  },
  METRICS_PORT: {
    key: 'metricsPort',
    allowed: 'an integer from 1 to 65535, other than PORT (unset: no metrics listener)',
    schema: Type.Integer({ minimum: 1, maximum: 65_535 }),
    default: () => undefined,
  },
  METRICS_HOST: {
    key: 'metricsHost',
    allowed: 'an interface address or host name for the metrics listener (default: loopback, whatever HOST is)',
    schema: hostName,
    default: () => '127.0.0.1',
  },
  METRICS_TOKEN: {
    key: 'metricsToken',
    allowed: 'empty (no token), or 16 to 256 visible ASCII characters that GET /metrics then requires as Authorization: Bearer …',
    schema: Type.String({ pattern: '^([!-~]{16,256})?$' }),
    default: () => '',
  },
  REQUIRE_IF_MATCH: {
    key: 'requireIfMatch',
    allowed: 'true or false (true: a PATCH without If-Match is refused with 428)',
    schema: Type.Boolean(),
    default: () => 'false',
  },
  RATE_LIMIT_PER_KEY: {
    key: 'rateLimitPerKey',
    allowed: 'an integer from 0 to 100000000 (requests per window per API key; 0 turns the limit off)',
    schema: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
    default: () => '6000',
  },
  RATE_LIMIT_PER_ADDRESS: {
    key: 'rateLimitPerAddress',
    allowed: 'an integer from 0 to 100000000 (requests per window per client address with a key not yet verified; 0 turns the limit off)',
    schema: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
    default: () => '60',
  },
  RATE_LIMIT_WINDOW_S: {
    key: 'rateLimitWindowS',
    allowed: 'an integer from 1 to 86400 (seconds)',
    schema: Type.Integer({ minimum: 1, maximum: 86_400 }),
    default: () => '60',
  },
  REDIS_URL: {
    key: 'redisUrl',
    allowed: 'a redis:// or rediss:// URL, or empty (counters per process)',
    schema: Type.String({ pattern: '^(rediss?://\\S+)?$' }),
    default: () => '',
  },
  REDIS_KEY_PREFIX: {
    key: 'redisKeyPrefix',
    allowed: 'up to 64 letters, digits and . : _ - (prepended to every Redis key)',
    schema: Type.String({ pattern: '^[A-Za-z0-9.:_-]{0,64}$' }),
    default: () => 'petstore:',
  },
  TRUST_PROXY: {
    key: 'trustProxy',
    allowed: 'false, true, a number of proxy hops, or a comma-separated list of proxy addresses or CIDRs',
    schema: Type.String({ pattern: '^(false|true|\\d{1,2}|[0-9A-Fa-f.:/]+(\\s*,\\s*[0-9A-Fa-f.:/]+)*)$' }),
    default: () => 'false',
  },
  LOG_LEVEL: {
    key: 'logLevel',
    allowed: LOG_LEVELS.join(', '),
    schema: Type.Unsafe({ type: 'string', enum: [...LOG_LEVELS] }),
    default: () => 'info',
  },
  PETSTORE_ENV: {
    key: 'environment',
    allowed: ENVIRONMENTS.join(', '),
    schema: Type.Unsafe({ type: 'string', enum: [...ENVIRONMENTS] }),
    default: () => 'development',
  },
  PUBLIC_BASE_URL: {
    key: 'publicBaseUrl',
    allowed: 'an http(s) URL without the /v1 segment, e.g. https://petstore.example.com',
    schema: Type.String({ pattern: `^(${URL_PATTERN})?$` }),
    default: () => '',
  },
  PRODUCTION_BASE_URL: {
    key: 'productionBaseUrl',
    allowed: 'an http(s) URL without the /v1 segment',
    schema: url,
    default: () => PLACEHOLDER_BASE_URLS.production,
  },
  STAGING_BASE_URL: {
    key: 'stagingBaseUrl',
    allowed: 'an http(s) URL without the /v1 segment',
    schema: url,
    default: () => PLACEHOLDER_BASE_URLS.staging,
  },
  PET_LOOKUP_DEPRECATED_AT: {
    key: 'petLookupDeprecatedAt',
    allowed: 'an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z (GET /v1/pets/{petId} sends it as Deprecation)',
    schema: rfc3339,
    convert: parseRfc3339,
    default: () => '2026-01-01T00:00:00Z',
  },
  PET_LOOKUP_SUNSET_AT: {
    key: 'petLookupSunsetAt',
    allowed:
      'an RFC 3339 date-time, not before PET_LOOKUP_DEPRECATED_AT (GET /v1/pets/{petId} sends it as Sunset, and answers 410 from then on)',
    schema: rfc3339,
    convert: parseRfc3339,
    default: () => '2027-07-01T00:00:00Z',
  },
  STREAM_HEARTBEAT_MS: {
    key: 'streamHeartbeatMs',
    allowed: 'an integer from 100 to 600000 (milliseconds between comment lines on an open change stream)',
    schema: Type.Integer({ minimum: 100, maximum: 600_000 }),
    default: () => '15000',
  },
  STREAM_MAX_PER_KEY: {
    key: 'streamMaxPerKey',
    allowed: 'an integer from 1 to 100000 (open change streams per API key, per process)',
    schema: Type.Integer({ minimum: 1, maximum: 100_000 }),
    default: () => '10',
  },
  WEBHOOK_TIMEOUT_MS: {
    key: 'webhookTimeoutMs',
    allowed: 'an integer from 100 to 120000 (milliseconds a webhook delivery waits for its answer)',
    schema: Type.Integer({ minimum: 100, maximum: 120_000 }),
    default: () => '10000',
  },
  WEBHOOK_RETRY_SCHEDULE: {
    key: 'webhookRetryScheduleMs',
    allowed: `1 to ${MAX_RETRIES} comma-separated durations, each a whole number with a unit ms, s, m or h, at most 24h (e.g. 5s,5m,30m,2h)`,
    schema: Type.String({ pattern: `^${DURATION}(,${DURATION}){0,${MAX_RETRIES - 1}}$` }),
    convert: parseRetrySchedule,
    default: () => '5s,5m,30m,2h,5h,10h,10h',
  },
  LEDGER_RETENTION: {
    key: 'ledgerRetentionMs',
    allowed: 'a duration of at least 1s, a whole number with a unit s, m, h or d (e.g. 30d); unset keeps every ledger row',
    schema: Type.String({ pattern: '^\\s*\\d{1,9}(s|m|h|d)\\s*$' }),
    convert: parseRetention,
    default: () => undefined,
  },
  WEBHOOK_ALLOW_PRIVATE: {
    key: 'webhookAllowPrivate',
    allowed:
      'true or false (true: webhooks may deliver to loopback, private, link-local and unique-local addresses; for development and tests)',
    schema: Type.Boolean(),
    default: () => 'false',
  },
  WEBHOOK_LEASE_MS: {
    key: 'webhookLeaseMs',
    allowed:
      'an integer from 1000 to 600000 (milliseconds; another instance takes a subscription over this long after its deliverer stops)',
    schema: Type.Integer({ minimum: 1000, maximum: 600_000 }),
    default: () => '10000',
  },
  BROKER_ALLOWED_HOSTS: {
    key: 'brokerAllowedHosts',
    allowed:
      'comma-separated host:port pairs (e.g. nats.internal:4222,127.0.0.1:5672): the brokers a nats:// or amqp:// webhook subscription may publish to, compared as written; unset: none',
    schema: Type.String({ pattern: '^\\s*[^\\s,:]+:\\d{1,5}\\s*(,\\s*[^\\s,:]+:\\d{1,5}\\s*)*$' }),
    convert: (text: string) => text.split(',').map((pair) => pair.trim()),
    default: () => undefined,
  },
  OTEL_SDK_DISABLED: {
    key: 'otelSdkDisabled',
    allowed: 'true or false (true: tracing off whatever else is set, as the OpenTelemetry specification says)',
    schema: Type.Boolean(),
    default: () => 'false',
  },
  OTEL_TRACES_EXPORTER: {
    key: 'otelTracesExporter',
    allowed: 'otlp (turns tracing on) or none; unset: on when an OTLP endpoint is set',
    schema: Type.Union([Type.Literal('otlp'), Type.Literal('none')]),
    default: () => undefined,
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    key: 'otelEndpoint',
    allowed: "an http(s) URL: the OTLP collector's base, traces sent to its /v1/traces (turns tracing on)",
    schema: Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s]*)?$' }),
    default: () => undefined,
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    key: 'otelTracesEndpoint',
    allowed: 'an http(s) URL, where traces are sent as written (turns tracing on)',
    schema: Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s]*)?$' }),
    default: () => undefined,
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    key: 'otelProtocol',
    allowed: OTLP_PROTOCOLS.join(' or '),
    schema: Type.Union(OTLP_PROTOCOLS.map((p) => Type.Literal(p))),
    default: () => 'http/protobuf',
  },
  OTEL_SERVICE_NAME: {
    key: 'otelServiceName',
    allowed: "a name for this service in the traces (default: OTEL_RESOURCE_ATTRIBUTES' service.name, else petstore)",
    schema: Type.String({ minLength: 1, maxLength: 255 }),
    default: () => undefined,
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    key: 'otelResourceAttributes',
    allowed: 'comma-separated key=value pairs, percent-encoded (e.g. deployment.environment.name=production)',
    schema: Type.String({ maxLength: 4096 }),
    convert: parseResourceAttributes,
    default: () => '',
  },
  OTEL_TRACES_SAMPLER: {
    key: 'otelSampler',
    allowed: OTEL_SAMPLERS.join(', '),
    schema: Type.Union(OTEL_SAMPLERS.map((s) => Type.Literal(s))),
    default: () => 'parentbased_always_on',
  },
  OTEL_TRACES_SAMPLER_ARG: {
    key: 'otelSamplerRatio',
    allowed: 'a number from 0 to 1: the share of traces the traceidratio samplers keep',
    schema: Type.Number({ minimum: 0, maximum: 1 }),
    default: () => '1',
  },
  OTEL_LOG_LEVEL: {
    key: 'otelLogLevel',
    allowed: `${OTEL_LOG_LEVELS.slice(0, -1).join(', ')} or ALL, in any case: how much of the OpenTelemetry SDK's own diagnostics is logged (default INFO)`,
    schema: Type.String(),
    convert: (text: string) => OTEL_LOG_LEVELS.find((level) => level === text.toUpperCase()),
    default: () => 'INFO',
  },
  DEPRECATED_CALLS_FLUSH_MS: {
    key: 'deprecatedCallsFlushMs',
    allowed: 'an integer from 100 to 3600000 (milliseconds between writes of the counted deprecated calls)',
    schema: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
    default: () => '10000',
  },
}

export class ConfigError extends Error {}

/** The variables whose values may hold a password: never printed as they are. */
const SECRET_URLS = new Set(['DATABASE_URL', 'REDIS_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'])
/** The variables that are secrets whole: never printed at all. */
const SECRETS = new Set(['METRICS_TOKEN'])

/**
 * A connection URL with its password replaced by `***`, wherever it stands (userinfo, or a
 * `password=` query parameter), for every message and log line. Works on text that is not a valid URL
 * too, and errs towards hiding: after `user:`, everything up to the last `@` is taken for the
 * password (a raw `/` or `@` in it must not reveal the rest); a Redis or NATS URL's lone userinfo is its
 * password. In a message (`whole` false) a URL ends at white space; a variable's value is one URL
 * whole, white space included.
 */
export function maskUrl(text: string, whole = false): string {
  const userinfo = whole ? /^([a-z][\w+.-]*:\/\/)([^/?#@:]*):.*@/is : /([a-z][\w+.-]*:\/\/)([^\s/?#@:]*):\S*@/gi
  // A user without a password: a token (Redis, NATS), masked whole.
  const redis = whole ? /^(rediss?:\/\/|nats:\/\/)[^/?#@:]+@/i : /(rediss?:\/\/|nats:\/\/)[^\s/?#@:]+@/gi
  return text
    .replace(userinfo, '$1$2:***@')
    .replace(redis, '$1***@')
    .replace(/([?&][^=&#\s]*password=)[^&#\s]*/gi, '$1***')
}

const ajv = createValidator([])

/** Reads and validates the environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const config: Partial<Config> = {}
  const problems: string[] = []
  /** The text each variable was read from, for the messages. */
  const raws: Record<string, string | undefined> = {}
  for (const [name, variable] of Object.entries(VARIABLES)) {
    const raw = env[name]?.trim() || variable.default(config)
    raws[name] = raw
    if (raw === undefined) {
      Object.assign(config, { [variable.key]: undefined })
      continue
    }
    const schema = variable.schema as { type?: string }
    const value =
      (schema.type === 'integer' && /^-?\d+$/.test(raw)) || (schema.type === 'number' && /^-?(\d+\.?\d*|\.\d+)$/.test(raw))
        ? Number(raw)
        : schema.type === 'boolean' && (raw === 'true' || raw === 'false')
          ? raw === 'true'
          : raw
    const converted = ajv.validate(variable.schema, value) ? (variable.convert ? variable.convert(raw) : value) : undefined
    if (converted !== undefined) {
      Object.assign(config, { [variable.key]: converted })
    } else {
      const shown = SECRETS.has(name) ? '***' : SECRET_URLS.has(name) ? maskUrl(raw, true) : raw
      problems.push(`${name}=${JSON.stringify(shown)} is invalid: expected ${variable.allowed}`)
    }
  }
  if (problems.length === 0 && config.shutdownGraceMs! < minimumGraceMs(config.dbTimeoutMs!)) {
    problems.push(
      `SHUTDOWN_GRACE_MS=${JSON.stringify(String(config.shutdownGraceMs))} is invalid: expected at least ` +
        `${minimumGraceMs(config.dbTimeoutMs!)} (${REQUEST_DB_STEPS} × DB_TIMEOUT_MS + 1000), so requests waiting on the database finish before shutdown gives up`,
    )
  }
  if (problems.length === 0 && config.headersTimeoutMs! > config.requestTimeoutMs!) {
    problems.push(
      `HEADERS_TIMEOUT_MS=${JSON.stringify(String(config.headersTimeoutMs))} is invalid: expected at most REQUEST_TIMEOUT_MS (${config.requestTimeoutMs}), which bounds the whole request, headers included`,
    )
  }
  // The metrics must never be served on the public listener (with PORT 0, the kernel picks another port).
  if (problems.length === 0 && config.metricsPort === config.port) {
    problems.push(
      `METRICS_PORT=${JSON.stringify(String(config.metricsPort))} is invalid: expected a port other than PORT (${config.port}), so the metrics never share the public listener`,
    )
  }
  if (problems.length === 0 && config.petLookupSunsetAt! < config.petLookupDeprecatedAt!) {
    problems.push(
      `PET_LOOKUP_SUNSET_AT=${JSON.stringify(raws.PET_LOOKUP_SUNSET_AT)} is invalid: expected a time at or after PET_LOOKUP_DEPRECATED_AT (${config.petLookupDeprecatedAt!.toISOString()}): an operation cannot be removed before it is deprecated`,
    )
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'))
  const proxy = config.trustProxy as string
  config.trustProxy = proxy === 'true' ? true : proxy === 'false' ? false : /^\d+$/.test(proxy) ? Number(proxy) : proxy
  for (const key of ['publicBaseUrl', 'productionBaseUrl', 'stagingBaseUrl'] as const) {
    config[key] = config[key]?.replace(/\/+$/, '')
  }
  return Object.freeze(config as Config)
}

/** The table for docs/operations.md and `petstore --help`. */
export function describeVariables(): { name: string; allowed: string }[] {
  return Object.entries(VARIABLES).map(([name, v]) => ({ name, allowed: v.allowed }))
}
