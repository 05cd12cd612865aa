import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig, maskUrl, parseResourceAttributes, parseRetrySchedule, tracingEnabled } from '../../src/config.js'

const badSettings: [string, string][] = [
  ['OTEL_SDK_DISABLED', 'yes'],
  ['OTEL_TRACES_EXPORTER', 'jaeger'],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'ftp://collector/v1/traces'],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
  ['OTEL_TRACES_SAMPLER', 'traceidratio_parentbased'],
  ['OTEL_TRACES_SAMPLER_ARG', '-0.1'],
  ['OTEL_TRACES_SAMPLER_ARG', 'half'],
  ['OTEL_RESOURCE_ATTRIBUTES', 'team'],
  ['PORT', 'abc'],
  ['PORT', '70000'],
  ['PORT', '-1'],
  ['PORT', '80.5'],
  ['LOG_LEVEL', 'loud'],
  ['PETSTORE_ENV', 'prod'],
  ['DATABASE_URL', 'mysql://x'],
  ['DATABASE_URL', '/var/lib/petstore.db'],
  ['PUBLIC_BASE_URL', 'not-a-url'],
  ['PUBLIC_BASE_URL', 'ftp://petstore.example.com'],
  ['PRODUCTION_BASE_URL', 'petstore.example.com'],
  ['STAGING_BASE_URL', 'https://staging.example.com/v1?x=1'],
  ['HOST', 'a host'],
  ['WORKERS', '0'],
  ['WORKERS', '65'],
  ['DB_POOL_SIZE', '0'],
  ['DB_TIMEOUT_MS', '99'],
  ['DB_MIGRATION_TIMEOUT_MS', '999'],
  ['SHUTDOWN_GRACE_MS', 'soon'],
  ['REQUIRE_IF_MATCH', 'yes'],
  ['REQUIRE_IF_MATCH', '1'],
  ['PUBLIC_BASE_URL', 'https://petstore.example.com/v1'],
  ['PRODUCTION_BASE_URL', 'https://petstore.example.com/api/v1/'],
  ['SHUTDOWN_DRAIN_MS', '-1'],
  ['SHUTDOWN_DRAIN_MS', '600001'],
  ['HEADERS_TIMEOUT_MS', '999'],
  ['REQUEST_TIMEOUT_MS', '10s'],
  ['KEEP_ALIVE_TIMEOUT_MS', '0'],
  ['MAX_HEADER_BYTES', '1023'],
  ['MAX_CONNECTIONS', '0'],
  ['MAX_IN_FLIGHT', '1.5'],
  ['LOAD_SHED_EVENT_LOOP_DELAY_MS', '-5'],
  ['LOAD_SHED_EVENT_LOOP_UTILIZATION', '1.01'],
  ['LOAD_SHED_EVENT_LOOP_UTILIZATION', 'high'],
  ['LOAD_SHED_EVENT_LOOP_UTILIZATION', '0.9.1'],
  ['RATE_LIMIT_PER_KEY', '-1'],
  ['RATE_LIMIT_PER_ADDRESS', 'many'],
  ['RATE_LIMIT_WINDOW_S', '0'],
  ['RATE_LIMIT_WINDOW_S', '86401'],
  ['REDIS_URL', 'localhost:6379'],
  ['REDIS_URL', 'http://127.0.0.1:6379'],
  ['REDIS_KEY_PREFIX', 'has space'],
  ['TRUST_PROXY', 'yes'],
  ['TRUST_PROXY', '10.0.0.0/8; rm'],
  ['METRICS_PORT', '0'],
  ['METRICS_PORT', '65536'],
  ['METRICS_PORT', '9464.5'],
  ['METRICS_PORT', 'metrics'],
  ['METRICS_HOST', 'a host'],
  ['METRICS_HOST', 'http://127.0.0.1'],
  ['PET_LOOKUP_DEPRECATED_AT', '2026-01-01'],
  ['PET_LOOKUP_DEPRECATED_AT', '2026-01-01T00:00:00'],
  ['PET_LOOKUP_DEPRECATED_AT', '2026-01-01 00:00:00Z'],
  ['PET_LOOKUP_DEPRECATED_AT', 'tomorrow'],
  ['PET_LOOKUP_DEPRECATED_AT', '1767225600'],
  ['PET_LOOKUP_SUNSET_AT', '2027-02-29T00:00:00Z'],
  ['PET_LOOKUP_SUNSET_AT', '2027-13-01T00:00:00Z'],
  ['PET_LOOKUP_SUNSET_AT', '2027-07-01T24:00:00Z'],
  ['PET_LOOKUP_SUNSET_AT', '2027-07-01T00:00:60Z'],
  ['PET_LOOKUP_SUNSET_AT', '2027-07-01T00:00:00+25:00'],
  ['DEPRECATED_CALLS_FLUSH_MS', '99'],
  ['DEPRECATED_CALLS_FLUSH_MS', '3600001'],
  ['DEPRECATED_CALLS_FLUSH_MS', '10s'],
  ['STREAM_HEARTBEAT_MS', '99'],
  ['STREAM_HEARTBEAT_MS', '600001'],
  ['STREAM_HEARTBEAT_MS', '15s'],
  ['STREAM_MAX_PER_KEY', '0'],
  ['STREAM_MAX_PER_KEY', '100001'],
  ['STREAM_MAX_PER_KEY', '2.5'],
  ['WEBHOOK_TIMEOUT_MS', '99'],
  ['WEBHOOK_TIMEOUT_MS', '120001'],
  ['WEBHOOK_TIMEOUT_MS', 'ten'],
  ['LEDGER_RETENTION', '0s'],
  ['LEDGER_RETENTION', '500ms'],
  ['LEDGER_RETENTION', '30'],
  ['LEDGER_RETENTION', '1w'],
  ['LEDGER_RETENTION', '1d,2d'],
  ['WEBHOOK_RETRY_SCHEDULE', '25h'],
  ['WEBHOOK_RETRY_SCHEDULE', '5s,1441m'],
  ['WEBHOOK_RETRY_SCHEDULE', '86400001ms'],
  ['WEBHOOK_RETRY_SCHEDULE', '5x'],
  ['WEBHOOK_RETRY_SCHEDULE', '5'],
  ['WEBHOOK_RETRY_SCHEDULE', '5S'],
  ['WEBHOOK_RETRY_SCHEDULE', '1.5h'],
  ['WEBHOOK_RETRY_SCHEDULE', '-5s'],
  ['WEBHOOK_RETRY_SCHEDULE', ',5s'],
  ['WEBHOOK_RETRY_SCHEDULE', '5s,'],
  ['WEBHOOK_RETRY_SCHEDULE', '5s,,5m'],
  ['WEBHOOK_RETRY_SCHEDULE', ','],
  ['WEBHOOK_RETRY_SCHEDULE', '5s 5m'],
  ['WEBHOOK_RETRY_SCHEDULE', Array(21).fill('1s').join(',')],
  ['WEBHOOK_ALLOW_PRIVATE', 'yes'],
  ['WEBHOOK_ALLOW_PRIVATE', '1'],
  ['WEBHOOK_LEASE_MS', '999'],
  ['WEBHOOK_LEASE_MS', '600001'],
  ['WEBHOOK_LEASE_MS', '10s'],
]

/** The ConfigError loadConfig throws for `env`. */
function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error))
    return error
  }
  assert.fail(`accepted ${JSON.stringify(env)}`)
}

describe('loadConfig', () => {
  test('When nothing is set, then every documented default applies', () => {
    assert.deepEqual(
      { ...loadConfig({}) },
      {
        port: 8080,
        host: '127.0.0.1',
        databaseUrl: 'sqlite:./data/petstore.db',
        workers: 1,
        dbPoolSize: 10,
        dbTimeoutMs: 5000,
        dbMigrationTimeoutMs: 600000,
        shutdownGraceMs: 16000,
        shutdownDrainMs: 5000,
        headersTimeoutMs: 10000,
        requestTimeoutMs: 30000,
        keepAliveTimeoutMs: 72000,
        maxHeaderBytes: 16384,
        maxConnections: 10000,
        maxInFlight: 1000,
        shedEventLoopDelayMs: 500,
        shedEventLoopUtilization: 0,
        metricsPort: undefined,
        metricsHost: '127.0.0.1',
        metricsToken: '',
        requireIfMatch: false,
        rateLimitPerKey: 6000,
        rateLimitPerAddress: 60,
        rateLimitWindowS: 60,
        redisUrl: '',
        redisKeyPrefix: 'petstore:',
        trustProxy: false,
        logLevel: 'info',
        environment: 'development',
        publicBaseUrl: '',
        productionBaseUrl: 'https://petstore.example.com',
        stagingBaseUrl: 'https://staging.petstore.example.com',
        petLookupDeprecatedAt: new Date('2026-01-01T00:00:00Z'),
        petLookupSunsetAt: new Date('2027-07-01T00:00:00Z'),
        deprecatedCallsFlushMs: 10000,
        streamHeartbeatMs: 15000,
        streamMaxPerKey: 10,
        webhookTimeoutMs: 10000,
        webhookRetryScheduleMs: [5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000],
        webhookAllowPrivate: false,
        webhookLeaseMs: 10000,
        ledgerRetentionMs: undefined,
        brokerAllowedHosts: undefined,
        otelSdkDisabled: false,
        otelTracesExporter: undefined,
        otelEndpoint: undefined,
        otelTracesEndpoint: undefined,
        otelProtocol: 'http/protobuf',
        otelServiceName: undefined,
        otelResourceAttributes: {},
        otelSampler: 'parentbased_always_on',
        otelSamplerRatio: 1,
        otelLogLevel: 'INFO',
      },
    )
  })

  test('When the OTEL_* variables are set, then tracing is on as the OpenTelemetry specification says, and off with none', () => {
    assert.equal(tracingEnabled(loadConfig({})), false)
    assert.equal(tracingEnabled(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })), false)
    assert.equal(tracingEnabled(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' })), true)
    assert.equal(tracingEnabled(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })), true)
    assert.equal(tracingEnabled(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/v1/traces' })), true)
    assert.equal(tracingEnabled(loadConfig({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })), false)
    const endpoint = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    assert.equal(tracingEnabled(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' })), false)
    assert.equal(tracingEnabled(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'false' })), true)
    const config = loadConfig({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=a%2Cb, team = ops%3Dnight', OTEL_TRACES_SAMPLER_ARG: '0.25' })
    assert.deepEqual(config.otelResourceAttributes, { 'service.name': 'a,b', team: 'ops=night' })
    assert.equal(config.otelSamplerRatio, 0.25)
    for (const bad of ['a', '=b', 'a=%zz', 'a=1,,b=2']) assert.equal(parseResourceAttributes(bad), undefined, bad)
  })

  for (const [name, value] of badSettings) {
    test(`When ${name}=${value}, then it is refused naming ${name} and quoting the value`, () => {
      const { message } = refusal({ [name]: value })
      assert.match(message, new RegExp(`^${name}=`))
      assert.ok(message.includes(JSON.stringify(value)), message)
      assert.match(message, /expected /)
    })
  }

  test('When several variables are bad, then every one of them is named, one line each', () => {
    const { message } = refusal({ PORT: 'abc', LOG_LEVEL: 'loud', PETSTORE_ENV: 'prod' })
    assert.deepEqual(
      message.split('\n').map((line) => line.split('=')[0]),
      ['PORT', 'LOG_LEVEL', 'PETSTORE_ENV'],
    )
  })

  test('When a value is empty or blank, then it counts as unset', () => {
    assert.equal(loadConfig({ PORT: '', LOG_LEVEL: '  ' }).port, 8080)
    assert.equal(loadConfig({ LOG_LEVEL: '  ' }).logLevel, 'info')
  })

  test('When base URLs end in a slash, then it is removed (the service adds /v1 itself)', () => {
    const config = loadConfig({ PUBLIC_BASE_URL: 'https://a.example/', PRODUCTION_BASE_URL: 'https://b.example/api//' })
    assert.equal(config.publicBaseUrl, 'https://a.example')
    assert.equal(config.productionBaseUrl, 'https://b.example/api')
  })

  test("When DB_TIMEOUT_MS is raised, then the default shutdown grace outlasts a request's database waits", () => {
    assert.equal(loadConfig({ DB_TIMEOUT_MS: '1000' }).shutdownGraceMs, 10_000)
    assert.equal(loadConfig({ DB_TIMEOUT_MS: '60000' }).shutdownGraceMs, 181_000)
  })

  test('When SHUTDOWN_GRACE_MS is shorter than a request can wait for the database, then it is refused', () => {
    const { message } = refusal({ DB_TIMEOUT_MS: '5000', SHUTDOWN_GRACE_MS: '15999' })
    assert.match(message, /^SHUTDOWN_GRACE_MS="15999" is invalid: expected at least 16000 \(3 × DB_TIMEOUT_MS \+ 1000\)/)
    assert.equal(loadConfig({ DB_TIMEOUT_MS: '5000', SHUTDOWN_GRACE_MS: '16000' }).shutdownGraceMs, 16_000)
  })

  test('When HEADERS_TIMEOUT_MS exceeds REQUEST_TIMEOUT_MS, then it is refused (the request timeout bounds the headers too)', () => {
    const { message } = refusal({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '15000' })
    assert.match(message, /^HEADERS_TIMEOUT_MS="20000" is invalid: expected at most REQUEST_TIMEOUT_MS \(15000\)/)
    assert.equal(loadConfig({ HEADERS_TIMEOUT_MS: '15000', REQUEST_TIMEOUT_MS: '15000' }).headersTimeoutMs, 15000)
  })

  test('When LOAD_SHED_EVENT_LOOP_UTILIZATION is a fraction, then it is a number', () => {
    assert.equal(loadConfig({ LOAD_SHED_EVENT_LOOP_UTILIZATION: '0.95' }).shedEventLoopUtilization, 0.95)
    assert.equal(loadConfig({ LOAD_SHED_EVENT_LOOP_UTILIZATION: '.5' }).shedEventLoopUtilization, 0.5)
    assert.equal(loadConfig({ LOAD_SHED_EVENT_LOOP_UTILIZATION: '1' }).shedEventLoopUtilization, 1)
  })

  test('When TRUST_PROXY is set, then it is a boolean, a hop count or a list of addresses, as Fastify takes it', () => {
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2)
    assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1')
  })

  test('When METRICS_PORT is set, then it is a port, and METRICS_HOST stays on loopback unless set, whatever HOST is', () => {
    assert.equal(loadConfig({ METRICS_PORT: '9464' }).metricsPort, 9464)
    assert.equal(loadConfig({ METRICS_PORT: ' ' }).metricsPort, undefined)
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).host, '0.0.0.0')
    assert.equal(loadConfig({ HOST: '0.0.0.0' }).metricsHost, '127.0.0.1')
    assert.equal(loadConfig({ HOST: '::', METRICS_PORT: '9464' }).metricsHost, '127.0.0.1')
    assert.equal(loadConfig({ HOST: '0.0.0.0', METRICS_HOST: '10.0.0.5' }).metricsHost, '10.0.0.5')
    assert.equal(loadConfig({ METRICS_HOST: '0.0.0.0' }).metricsHost, '0.0.0.0')
  })

  test('When METRICS_PORT is PORT, then it is refused (the metrics never share the public listener), unless PORT is 0', () => {
    const { message } = refusal({ PORT: '9464', METRICS_PORT: '9464' })
    assert.match(message, /^METRICS_PORT="9464" is invalid: expected a port other than PORT \(9464\)/)
    assert.equal(message.split('\n').length, 1)
    assert.equal(loadConfig({ PORT: '0', METRICS_PORT: '9464' }).metricsPort, 9464)
  })

  test('When REQUIRE_IF_MATCH is true or false, then it is a boolean', () => {
    assert.equal(loadConfig({ REQUIRE_IF_MATCH: 'true' }).requireIfMatch, true)
    assert.equal(loadConfig({ REQUIRE_IF_MATCH: 'false' }).requireIfMatch, false)
  })

  test('When the pet lookup dates are RFC 3339 date-times with offsets or fractions, then they are the times they name', () => {
    const config = loadConfig({ PET_LOOKUP_DEPRECATED_AT: '2026-03-01t02:00:00.5+02:00', PET_LOOKUP_SUNSET_AT: '2028-02-29T23:59:59.999z' })
    assert.equal(config.petLookupDeprecatedAt.toISOString(), '2026-03-01T00:00:00.500Z')
    assert.equal(config.petLookupSunsetAt.toISOString(), '2028-02-29T23:59:59.999Z')
  })

  test('When the pet lookup sunset precedes its deprecation, then it is refused in one line; the same moment is fine', () => {
    const { message } = refusal({ PET_LOOKUP_DEPRECATED_AT: '2026-06-01T00:00:00Z', PET_LOOKUP_SUNSET_AT: '2026-05-31T23:59:59Z' })
    assert.match(message, /^PET_LOOKUP_SUNSET_AT="2026-05-31T23:59:59Z" is invalid: expected a time at or after PET_LOOKUP_DEPRECATED_AT/)
    assert.equal(message.split('\n').length, 1)
    // Only the default sunset is earlier than this deprecation: it is refused too, rather than silently moved.
    assert.throws(() => loadConfig({ PET_LOOKUP_DEPRECATED_AT: '2028-01-01T00:00:00Z' }), ConfigError)
    const same = loadConfig({ PET_LOOKUP_DEPRECATED_AT: '2026-06-01T02:00:00+02:00', PET_LOOKUP_SUNSET_AT: '2026-06-01T00:00:00Z' })
    assert.equal(same.petLookupSunsetAt.getTime(), same.petLookupDeprecatedAt.getTime())
  })

  test('When the stream and webhook limits are set at their bounds, then they are taken as integers', () => {
    const low = loadConfig({ STREAM_HEARTBEAT_MS: '100', STREAM_MAX_PER_KEY: '1', WEBHOOK_TIMEOUT_MS: '100', WEBHOOK_LEASE_MS: '1000' })
    assert.deepEqual([low.streamHeartbeatMs, low.streamMaxPerKey, low.webhookTimeoutMs, low.webhookLeaseMs], [100, 1, 100, 1000])
    const high = loadConfig({
      STREAM_HEARTBEAT_MS: '600000',
      STREAM_MAX_PER_KEY: '100000',
      WEBHOOK_TIMEOUT_MS: '120000',
      WEBHOOK_LEASE_MS: '600000',
    })
    assert.deepEqual(
      [high.streamHeartbeatMs, high.streamMaxPerKey, high.webhookTimeoutMs, high.webhookLeaseMs],
      [600000, 100000, 120000, 600000],
    )
  })

  test('When WEBHOOK_ALLOW_PRIVATE is true or false, then it is a boolean', () => {
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true)
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'false' }).webhookAllowPrivate, false)
  })

  test('When WEBHOOK_RETRY_SCHEDULE is a list of durations, then it is their milliseconds, in order', () => {
    const schedule = (value: string) => loadConfig({ WEBHOOK_RETRY_SCHEDULE: value }).webhookRetryScheduleMs
    assert.deepEqual(schedule('5s,5m,30m,2h,5h,10h,10h'), [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000])
    assert.deepEqual(schedule('100ms'), [100])
    assert.deepEqual(schedule('24h'), [86_400_000])
    assert.deepEqual(schedule('1440m,86400s,86400000ms'), [86_400_000, 86_400_000, 86_400_000])
    assert.deepEqual(schedule(' 1s , 2m '), [1_000, 120_000])
    assert.deepEqual(schedule('10m,1s'), [600_000, 1_000], 'kept in the order given')
    assert.deepEqual(schedule(Array(20).fill('1s').join(',')), Array(20).fill(1_000), 'up to 20 retries')
    assert.deepEqual(schedule(''), schedule('5s,5m,30m,2h,5h,10h,10h'), 'empty counts as unset, as for every variable')
  })

  test('When WEBHOOK_RETRY_SCHEDULE is refused, then the message says what it takes', () => {
    for (const value of ['25h', '5x', ',5s', Array(21).fill('1s').join(',')]) {
      const { message } = refusal({ WEBHOOK_RETRY_SCHEDULE: value })
      assert.equal(
        message,
        `WEBHOOK_RETRY_SCHEDULE=${JSON.stringify(value)} is invalid: expected 1 to 20 comma-separated durations, ` +
          'each a whole number with a unit ms, s, m or h, at most 24h (e.g. 5s,5m,30m,2h)',
      )
    }
  })

  test('When parseRetrySchedule reads a schedule the pattern let through, then it gives milliseconds, or undefined past 24 hours', () => {
    assert.deepEqual(
      parseRetrySchedule('5s,5m,30m,2h,5h,10h,10h'),
      [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    )
    assert.deepEqual(parseRetrySchedule('100ms'), [100])
    assert.deepEqual(parseRetrySchedule('24h'), [86_400_000])
    assert.equal(parseRetrySchedule('25h'), undefined)
    assert.equal(parseRetrySchedule('5s,86400001ms'), undefined)
  })

  test('When LEDGER_RETENTION is set, then it is read in milliseconds; unset, every ledger row is kept', () => {
    assert.equal(loadConfig({ LEDGER_RETENTION: '30d' }).ledgerRetentionMs, 30 * 86_400_000)
    assert.equal(loadConfig({ LEDGER_RETENTION: ' 12h ' }).ledgerRetentionMs, 12 * 3_600_000)
    assert.equal(loadConfig({ LEDGER_RETENTION: '90m' }).ledgerRetentionMs, 90 * 60_000)
    assert.equal(loadConfig({ LEDGER_RETENTION: '1s' }).ledgerRetentionMs, 1000)
    assert.equal(loadConfig({}).ledgerRetentionMs, undefined)
  })

  test('When the configuration is loaded, then it is frozen', () => {
    assert.ok(Object.isFrozen(loadConfig({})))
  })
})

describe('maskUrl', () => {
  const cases: [string, string, string][] = [
    ['a PostgreSQL password', 'postgres://u:s3cret@h/db', 'postgres://u:***@h/db'],
    ['a password holding / and @', 'postgresql://u:pa/ss@wo@rd@h:5432/db', 'postgresql://u:***@h:5432/db'],
    ['a password holding ? # and :', 'postgres://u:a?b#c:d@h/db?sslmode=require', 'postgres://u:***@h/db?sslmode=require'],
    ['a Redis password with an empty user', 'redis://:pw@h:6379', 'redis://:***@h:6379'],
    ['a Redis lone userinfo (the password)', 'redis://pw@h:6379/0', 'redis://***@h:6379/0'],
    ['a TLS Redis user and password', 'rediss://u:pw@h', 'rediss://u:***@h'],
    [
      'a password= query parameter',
      'postgres://h/db?user=u&password=s3cret&sslmode=require',
      'postgres://h/db?user=u&password=***&sslmode=require',
    ],
    ['a password= first in the query', 'postgres://h/db?password=s3cret', 'postgres://h/db?password=***'],
    ['an upper-case scheme', 'POSTGRES://u:s3cret@h/db', 'POSTGRES://u:***@h/db'],
  ]
  for (const [label, text, masked] of cases) {
    test(`When a URL holds ${label}, then the password is replaced by ***`, () => {
      assert.equal(maskUrl(text), masked)
    })
  }

  test('When a URL has a user and no password, or no userinfo at all, then it is kept as it is', () => {
    for (const text of ['postgres://u@h/db', 'postgres://h:5432/db', 'sqlite:./x.db', 'sqlite:/var/lib/petstore.db', 'redis://h:6379']) {
      assert.equal(maskUrl(text), text)
    }
  })

  test('When URLs stand inside a longer message, then each password is masked and the rest is kept', () => {
    const text =
      'Cannot open the database postgres://app:s3cret@db1/inv: connect to redis://:pw2@cache:6379 failed\n    at x (file:///srv/app/dist/src/cli.js:10:5)'
    assert.equal(
      maskUrl(text),
      'Cannot open the database postgres://app:***@db1/inv: connect to redis://:***@cache:6379 failed\n    at x (file:///srv/app/dist/src/cli.js:10:5)',
    )
  })
})

describe('loadConfig: secrets never appear in its messages', () => {
  test('When DATABASE_URL is invalid and holds a password, then the refusal names DATABASE_URL with the password masked', () => {
    const { message } = refusal({ DATABASE_URL: 'mysql://u:topsecret@h/db' })
    assert.match(message, /^DATABASE_URL="mysql:\/\/u:\*\*\*@h\/db" is invalid: expected /)
    assert.ok(!message.includes('topsecret'), message)
  })

  test('When REDIS_URL is invalid and holds a password, then the refusal names REDIS_URL with the password masked', () => {
    for (const value of ['redis://u:topsecret@h/ x', 'redis://:topsecret@h x', 'redis://topsecret@h x', 'http://u:topsecret@h:6379']) {
      const { message } = refusal({ REDIS_URL: value })
      assert.match(message, /^REDIS_URL="[^"]*\*\*\*@h[^"]*" is invalid: expected /)
      assert.ok(!message.includes('topsecret'), message)
    }
  })

  test('When an OTLP endpoint is invalid and holds a password, then the refusal names the variable with the password masked', () => {
    for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
      const { message } = refusal({ [name]: 'https://u:topsecret@collector:4318/v1 traces' })
      assert.match(message, new RegExp(`^${name}="https://u:\\*\\*\\*@collector:4318/v1 traces" is invalid: expected `))
      assert.ok(!message.includes('topsecret'), message)
    }
  })

  test('When METRICS_TOKEN is invalid, then the refusal names METRICS_TOKEN without any of its text', () => {
    for (const value of ['tooShort-s3cret', 'has a space inside it 0123456789', `${'x'.repeat(16)}é`, 'y'.repeat(257)]) {
      const { message } = refusal({ METRICS_TOKEN: value })
      assert.match(message, /^METRICS_TOKEN="\*\*\*" is invalid: expected /)
      assert.ok(!message.includes(value.slice(0, 8)), message)
    }
  })

  test('When METRICS_TOKEN is 16 to 256 visible ASCII characters, then it is taken; unset, it is empty', () => {
    assert.equal(loadConfig({ METRICS_TOKEN: 'A'.repeat(16) }).metricsToken, 'A'.repeat(16))
    assert.equal(loadConfig({ METRICS_TOKEN: '~!'.repeat(128) }).metricsToken, '~!'.repeat(128))
    assert.equal(loadConfig({ METRICS_TOKEN: ' ' }).metricsToken, '')
    assert.equal(loadConfig({}).metricsToken, '')
  })

  test('When a bad secret stands beside other bad variables, then each is named and only the secrets are hidden', () => {
    const { message } = refusal({ PORT: 'abc', DATABASE_URL: 'mysql://u:topsecret@h/db', METRICS_TOKEN: 'short' })
    assert.deepEqual(
      message.split('\n').map((line) => line.split('=')[0]),
      ['PORT', 'DATABASE_URL', 'METRICS_TOKEN'],
    )
    assert.match(message, /^PORT="abc" is invalid/m)
    assert.match(message, /^DATABASE_URL="mysql:\/\/u:\*\*\*@h\/db" is invalid/m)
    assert.match(message, /^METRICS_TOKEN="\*\*\*" is invalid/m)
    assert.ok(!message.includes('topsecret') && !message.includes('"short"'), message)
  })

  test("When an invalid URL's password holds white space, then no part of it is shown", () => {
    const { message } = refusal({ REDIS_URL: 'redis://u:top secret@h' })
    assert.ok(!message.includes('top') && !message.includes('secret'), message)
  })
})
