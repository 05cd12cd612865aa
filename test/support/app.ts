// The service in this process: the production app (buildApp) on a real fresh database, configured by
// loadConfig, the same function the server uses, and asked through app.inject instead of a socket.
// For the suites where a process and a socket are not the point; see helpers.ts for real processes.
import { after, before } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { Lifecycle } from '../../src/http/lifecycle.js'
import { KeysService } from '../../src/keys/keys.service.js'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage } from '../../src/storage/ports.js'
import {
  type Backend,
  type CliResult,
  createKey,
  parseExact,
  type RequestOptions,
  type Response,
  runCliInProcess,
  type SeedItem,
  seed,
  type TestDatabase,
} from './helpers.js'

/**
 * What the suites set for every in-process app unless they ask otherwise: the same as startServer
 * (no drain, no rate limits), no request log, which nothing in this process reads, and no load
 * shedding: the app shares the test runner's event loop, whose own pauses on 2 busy cores passed
 * the default delay and refused a request a test was about (test/operations/load-shedding runs real
 * servers with limits of its own).
 */
export const APP_ENV: Record<string, string> = {
  LOG_LEVEL: 'silent',
  SHUTDOWN_DRAIN_MS: '0',
  RATE_LIMIT_PER_KEY: '0',
  RATE_LIMIT_PER_ADDRESS: '0',
  LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
}

/** The app of `petstore serve`, built in this process; `request` answers as TestServer's does. */
export class TestApp {
  constructor(
    readonly app: FastifyInstance,
    /** The environment the app was configured from; the CLI runs with it, on the same database. */
    readonly env: Record<string, string>,
    private readonly storage: Storage,
  ) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    let payload: string | undefined = options.rawBody
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await this.app.inject({
      method: method as 'GET',
      url: path,
      headers,
      ...(payload === undefined ? {} : { payload }),
    })
    const answered = new Headers()
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue
      if (Array.isArray(value)) for (const v of value) answered.append(name, v)
      else answered.set(name, String(value))
    }
    const text = res.body
    const isJson = answered.get('content-type')?.startsWith('application/json')
    return { status: res.statusCode, headers: answered, text, body: isJson && text ? parseExact(text) : undefined }
  }

  /** Runs a `petstore` command line (in-process) against the app's database. */
  cli(args: string[]): Promise<CliResult> {
    return runCliInProcess(args, this.env)
  }

  /** As the server closes: the app first (its onClose hooks still write), then the storage. */
  async close(): Promise<void> {
    try {
      await this.app.close()
    } finally {
      await this.storage.close()
    }
  }
}

/** Opens storage and builds the app exactly as `petstore serve` does (src/server.ts), without listening. */
export async function startApp(databaseUrl: string, extraEnv: Record<string, string> = {}): Promise<TestApp> {
  const env = { DATABASE_URL: databaseUrl, ...APP_ENV, ...extraEnv }
  const config = loadConfig(env)
  const storage = await openStorage(config)
  try {
    // The server makes the first key when there is none; its token is printed, not needed here.
    await new KeysService(storage).createFirstKeyIfNone()
    const lifecycle = new Lifecycle()
    const app = await buildApp(config, { storage, lifecycle })
    await app.ready()
    lifecycle.listeningSince = performance.now()
    return new TestApp(app, env, storage)
  } catch (error) {
    await storage.close()
    throw error
  }
}

export interface AppSuiteOptions {
  env?: Record<string, string>
  /** Entries loaded before the app is built. */
  seed?: SeedItem[]
}

export interface AppSuite {
  database: TestDatabase
  /** Named as in useSuite's Suite, so a suite moves between the two by how it is made. */
  server: TestApp
  token: string
}

/**
 * useSuite's in-process twin: inside a describe(), a fresh database on `backend`, seeded, with a
 * key, and the app built on it; closed and dropped after the describe.
 */
export function useAppSuite(backend: Backend, options: AppSuiteOptions = {}): AppSuite {
  const suite = {} as AppSuite
  before(async () => {
    suite.database = await backend.create()
    suite.token = await createKey(suite.database.url, 'suite')
    if (options.seed) await seed(suite.database.url, options.seed)
    suite.server = await startApp(suite.database.url, options.env)
  })
  after(async () => {
    await suite.server?.close()
    await suite.database?.drop()
  })
  return suite
}
