import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import { isLosslessNumber, parse } from 'lossless-json'
import { runCli as runCommandLine } from '../../src/cli/run.js'
import { loadConfig } from '../../src/config.js'
import type { Scope } from '../../src/domain.js'
import { InventoryService } from '../../src/inventory/inventory.service.js'
import { KeysService } from '../../src/keys/keys.service.js'
import { openStorage } from '../../src/storage/open-storage.js'
import type { Storage } from '../../src/storage/ports.js'
import { postgresDatabase, postgresUnavailable, sqliteDatabase, type TestDatabase } from './databases.js'

export { POSTGRES_ADMIN_URL, postgresDatabase, postgresUnavailable, sqliteDatabase, type TestDatabase } from './databases.js'

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url))

export interface Backend {
  name: 'sqlite' | 'postgres'
  create: () => Promise<TestDatabase>
}

/**
 * The backends every HTTP-level suite runs against: SQLite always, PostgreSQL when a server is
 * reachable (test/operations/postgres-availability.test.ts reports the skip, and fails it under CI).
 */
export const BACKENDS: Backend[] = [{ name: 'sqlite', create: async () => sqliteDatabase() }]
if ((await postgresUnavailable()) === undefined) BACKENDS.push({ name: 'postgres', create: postgresDatabase })

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a program to its end, with only `env` in its environment, and collects what it printed. */
export function runProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; stdin?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.stdin ?? '')
  })
}

/**
 * Runs a `petstore` command line in this process, as the real command does (src/cli/run.ts), with
 * only `env` as its environment, and collects what it printed. Tests whose point is the process
 * itself (exit status, memory limits, `serve`, racing processes) use runCli.
 */
export async function runCliInProcess(args: string[], env: Record<string, string>): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  const code = await runCommandLine(args, {
    env: { LOG_LEVEL: 'warn', ...env },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  })
  return { code, stdout, stderr }
}

/** Runs the real `petstore` CLI as a process, with only PATH and `env` in its environment. */
export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult> {
  return runProcess(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env },
    ...(stdin === undefined ? {} : { stdin }),
  })
}

/**
 * `petstore check` as a real process on the database at `url`: every invariant the service promises
 * holds (the crash tests run it after each kill -9). Fails with what it printed otherwise.
 */
export async function assertInvariants(url: string, when: string): Promise<void> {
  const result = await runCli(['check'], { DATABASE_URL: url })
  assert.equal(result.code, 0, `petstore check ${when}:\n${result.stdout}${result.stderr}`)
}

export interface Response {
  status: number
  headers: Headers
  text: string
  /** Parsed exactly: petId as bigint, every other number as a JS number. */
  body: any
}

export function parseExact(text: string): unknown {
  return parse(text, (key, value) => (isLosslessNumber(value) ? (key === 'petId' ? BigInt(value.value) : Number(value.value)) : value))
}

export interface RequestOptions {
  token?: string
  body?: unknown
  rawBody?: string
  headers?: Record<string, string>
}

/** What a test asks of the service, whether a real process (TestServer) or in-process (TestApp in app.ts). */
export interface Served {
  readonly env: Record<string, string>
  request(method: string, path: string, options?: RequestOptions): Promise<Response>
  cli(args: string[]): Promise<CliResult>
}

export type LogLine = Record<string, unknown>

/** Resolves with `promise`'s value, or rejects naming `what` after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Longer than any test's drain and grace together (18 s at most), far shorter than a hung run. */
const EXIT_BOUND_MS = 45_000

/** A `petstore serve` process: its JSON log lines and stderr as they arrive, and HTTP to it. */
export class TestServer implements Served {
  readonly stdoutLines: string[] = []
  stderr = ''
  baseUrl = ''
  private readonly events = new EventEmitter()
  private readonly exited: Promise<number | null>

  constructor(
    readonly child: ChildProcess,
    readonly env: Record<string, string>,
    private readonly detached = false,
  ) {
    let buffered = ''
    child.stdout!.on('data', (d) => {
      buffered += d
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) {
        this.stdoutLines.push(line)
        if (line.startsWith('{')) this.events.emit('log', JSON.parse(line))
      }
    })
    child.stderr!.on('data', (d) => {
      this.stderr += d
      this.events.emit('stderr')
    })
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
    void this.exited.then(() => this.events.emit('exit'))
  }

  get port(): number {
    return Number(new URL(this.baseUrl).port)
  }

  /** The JSON log lines the server has written so far. */
  logs(): LogLine[] {
    return this.stdoutLines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  }

  /** Resolves with the first log line, already written or still to come, that `match` accepts. */
  waitForLog(match: (line: LogLine) => boolean, ms = 10_000): Promise<LogLine> {
    return this.waitFor(() => this.logs().find(match), 'log', ms, 'the expected log line')
  }

  /** Resolves with stderr once it matches `pattern`. */
  waitForStderr(pattern: RegExp, ms = 10_000): Promise<string> {
    return this.waitFor(() => (pattern.test(this.stderr) ? this.stderr : undefined), 'stderr', ms, `stderr ${pattern}`)
  }

  private waitFor<T>(check: () => T | undefined, event: string, ms: number, what: string): Promise<T> {
    const found = check()
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        this.events.off(event, onEvent)
        this.events.off('exit', onExit)
      }
      const onEvent = () => {
        const value = check()
        if (value === undefined) return
        done()
        resolve(value)
      }
      const onExit = () => {
        done()
        reject(new Error(`the server exited (${this.child.exitCode}) before ${what}: ${this.stderr.slice(-500)}`))
      }
      const timer = setTimeout(() => {
        done()
        // What it did say, to tell a slow start from a stuck one.
        const said = this.stdoutLines.slice(-3).join(' | ').slice(-500)
        reject(new Error(`no ${what} within ${ms} ms; last log lines: ${said || 'none'}; stderr: ${this.stderr.slice(-500)}`))
      }, ms)
      this.events.on(event, onEvent)
      this.events.once('exit', onExit)
    })
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    let body: string | undefined = options.rawBody
    if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body })
    const text = await res.text()
    const isJson = res.headers.get('content-type')?.startsWith('application/json')
    return { status: res.status, headers: res.headers, text, body: isJson && text ? parseExact(text) : undefined }
  }

  cli(args: string[]): Promise<CliResult> {
    return runCliInProcess(args, this.env)
  }

  /**
   * Sends `signal` (SIGTERM by default) and resolves with the exit code. A server still running
   * EXIT_BOUND_MS later is killed with SIGKILL and the stop fails: a shutdown that hangs fails its
   * test instead of holding the whole run.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal)
    return this.waitForExit(`${signal}`)
  }

  /** Resolves with the exit code; past EXIT_BOUND_MS the process is killed and this rejects, naming `after`. */
  async waitForExit(after = 'waiting'): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined
    const hung = new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => resolve('hung'), EXIT_BOUND_MS)
    })
    const result = await Promise.race([this.exited, hung])
    clearTimeout(timer)
    if (result !== 'hung') return result
    const said = this.stdoutLines.slice(-3).join(' | ').slice(-500)
    // A detached server leads its own process group: its workers are killed with it.
    if (this.child.pid !== undefined && this.detached) process.kill(-this.child.pid, 'SIGKILL')
    else this.child.kill('SIGKILL')
    await this.exited
    throw new Error(`the server had not exited ${EXIT_BOUND_MS} ms after ${after}, so it was killed; last log lines: ${said || 'none'}`)
  }
}

const LISTENING = /^Server listening at (http:\/\/127\.0\.0\.1:\d+)$/

export interface StartOptions {
  /** Extra arguments after `serve`, e.g. ['--workers', '2']. */
  args?: string[]
  /** Its own process group, as from a terminal (so a signal can reach the whole group). */
  detached?: boolean
  /** Another build's `dist/src/cli.js` (an earlier release, in an upgrade test); this checkout's by default. */
  cli?: string
}

/**
 * Starts `petstore serve` as a real process on port 0 (the kernel picks a free port, so parallel
 * suites never race for one) and resolves once it logs the address it listens on.
 */
export async function startServer(
  databaseUrl: string,
  extraEnv: Record<string, string> = {},
  options: StartOptions = {},
): Promise<TestServer> {
  // No drain by default: most tests stop their servers with SIGTERM and need not wait for one.
  // No rate limits by default: many tests send bursts with one key; test/http/rate-limits covers them.
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SHUTDOWN_DRAIN_MS: '0',
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_ADDRESS: '0',
    ...extraEnv,
  }
  const child = spawn(process.execPath, [options.cli ?? CLI, 'serve', ...(options.args ?? [])], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  })
  const server = new TestServer(child, env, options.detached ?? false)
  try {
    const line = await server.waitForLog((l) => LISTENING.test(String(l.msg)), 20_000)
    server.baseUrl = LISTENING.exec(String(line.msg))![1]!
    // With workers, every one of them listens before the server counts as started.
    const args = options.args ?? []
    const workers = Number(args.includes('--workers') ? args[args.indexOf('--workers') + 1] : env.WORKERS) || 1
    await server.waitForLog(() => server.logs().filter((l) => LISTENING.test(String(l.msg))).length >= workers, 20_000)
  } catch (error) {
    // A server that never started must not outlive the test that waited for it.
    if (child.exitCode === null) child.kill('SIGKILL')
    throw error
  }
  return server
}

/** Opens the database in this process, with the same storage code the service and CLI use. */
async function withStorage<T>(databaseUrl: string, run: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig({ DATABASE_URL: databaseUrl }))
  try {
    return await run(storage)
  } finally {
    await storage.close()
  }
}

type Target = { env: Record<string, string> } | string
const urlOf = (target: Target) => (typeof target === 'string' ? target : target.env.DATABASE_URL!)

/** Creates an API key on the target's database (as `petstore keys create` does) and returns its token. */
/** Creates a key (with every scope unless `scopes` are given) and returns its token. */
export async function createKey(target: Target, name: string, scopes?: readonly Scope[]): Promise<string> {
  return withStorage(urlOf(target), async (storage) => (await new KeysService(storage).create(name, scopes)).token)
}

export interface SeedItem {
  petId: bigint | number
  quantity: number
  status: 'available' | 'pending' | 'sold' | string
}

/** Upserts inventory entries on the target's database (as `petstore import inventory` does). */
export async function seed(target: Target, items: SeedItem[]): Promise<void> {
  await withStorage(urlOf(target), (storage) =>
    new InventoryService(storage).importFile({
      chunks: (async function* () {
        yield items.map((i, n) => ({
          item: { petId: BigInt(i.petId), quantity: i.quantity, status: i.status as 'available' },
          position: n + 1,
        }))
      })(),
      where: (n) => `item ${n}`,
    }),
  )
}

/** Writes a JSON inventory file by hand, so petIds of any size stay exact. */
export function inventoryFile(items: SeedItem[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-import-'))
  const file = join(dir, 'inventory.json')
  writeFileSync(
    file,
    `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":${JSON.stringify(i.status)}}`).join(',')}]`,
  )
  return file
}

export interface SuiteOptions {
  /** How many `petstore serve` processes share the database (1 by default). */
  instances?: number
  env?: Record<string, string>
  args?: string[]
  /** Entries loaded before the servers start. */
  seed?: SeedItem[]
}

export interface Suite {
  database: TestDatabase
  /** The first (often the only) server. */
  server: TestServer
  servers: TestServer[]
  /** A key made for the suite. */
  token: string
}

/**
 * The one way a suite gets its world: inside a describe(), registers before/after hooks that make
 * a fresh database on `backend`, seed it, make a key and start the servers, and stop and drop them
 * all afterwards. The returned object is filled in once `before` has run.
 */
export function useSuite(backend: Backend, options: SuiteOptions = {}): Suite {
  const suite = {} as Suite
  before(async () => {
    suite.database = await backend.create()
    suite.token = await createKey(suite.database.url, 'suite')
    if (options.seed) await seed(suite.database.url, options.seed)
    suite.servers = await Promise.all(
      Array.from({ length: options.instances ?? 1 }, () => startServer(suite.database.url, options.env, { args: options.args ?? [] })),
    )
    suite.server = suite.servers[0]!
  })
  after(async () => {
    await Promise.all((suite.servers ?? []).map((s) => s.stop()))
    await suite.database?.drop()
  })
  return suite
}

/**
 * For tests that start their own servers and databases: everything made through it is stopped and
 * dropped after the enclosing describe (or file), even when a test fails halfway.
 */
export function useResources() {
  const databases: TestDatabase[] = []
  const servers: TestServer[] = []
  after(async () => {
    for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL')
    await Promise.all(servers.map((s) => s.waitForExit()))
    for (const db of databases) await db.drop()
  })
  return {
    async database(backend: Backend) {
      const db = await backend.create()
      databases.push(db)
      return db
    },
    async server(databaseUrl: string, env: Record<string, string> = {}, options: StartOptions = {}) {
      const server = await startServer(databaseUrl, env, options)
      servers.push(server)
      return server
    },
    /** Registers a server started some other way, so it is cleaned up too. */
    adopt(server: TestServer) {
      servers.push(server)
      return server
    },
  }
}
