import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isLosslessNumber, parse } from 'lossless-json'
import { postgresDatabase, postgresUnavailable, sqliteDatabase, type TestDatabase } from './databases.js'

export { POSTGRES_ADMIN_URL, postgresDatabase, postgresUnavailable, sqliteDatabase, type TestDatabase } from './databases.js'

export const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url))

export interface Backend {
  name: 'sqlite' | 'postgres'
  create: () => Promise<TestDatabase>
}

/**
 * The backends every HTTP-level suite runs against: SQLite always, PostgreSQL when a server is
 * reachable (test/postgres-availability.test.ts reports the skip, and fails it under CI).
 */
export const BACKENDS: Backend[] = [{ name: 'sqlite', create: async () => sqliteDatabase() }]
if ((await postgresUnavailable()) === undefined) BACKENDS.push({ name: 'postgres', create: postgresDatabase })

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(stdin ?? '')
  })
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

export interface Response {
  status: number
  headers: Headers
  text: string
  /** Parsed exactly: petId as bigint, every other number as a JS number. */
  body: any
}

export function parseExact(text: string): unknown {
  return parse(text, (key, value) =>
    isLosslessNumber(value) ? (key === 'petId' ? BigInt(value.value) : Number(value.value)) : value,
  )
}

export class TestServer {
  readonly stdoutLines: string[] = []
  stderr = ''
  private exited: Promise<number | null>

  constructor(
    readonly child: ChildProcess,
    readonly baseUrl: string,
    readonly env: Record<string, string>,
  ) {
    let buffered = ''
    child.stdout!.on('data', (d) => {
      buffered += d
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      this.stdoutLines.push(...lines)
    })
    child.stderr!.on('data', (d) => (this.stderr += d))
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  }

  /** The JSON log lines the server has written so far. */
  logs(): Record<string, unknown>[] {
    return this.stdoutLines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  }

  async request(
    method: string,
    path: string,
    options: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<Response> {
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
    return runCli(args, this.env)
  }

  /** Sends SIGTERM and resolves with the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal)
    return this.exited
  }

  waitForExit(): Promise<number | null> {
    return this.exited
  }
}

/** Starts `petstore serve` as a real process on a free port and waits until it answers. */
export async function startServer(databaseUrl: string, extraEnv: Record<string, string> = {}): Promise<TestServer> {
  const port = await freePort()
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extraEnv }
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const server = new TestServer(child, `http://127.0.0.1:${port}`, env)
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${server.stderr}`)
    try {
      const res = await fetch(`${server.baseUrl}/v1/openapi.json`)
      if (res.ok) return server
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${server.stderr}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function createKey(server: { env: Record<string, string> }, name: string): Promise<string> {
  const result = await runCli(['keys', 'create', '--name', name], server.env)
  if (result.code !== 0) throw new Error(`keys create failed: ${result.stderr}`)
  return result.stdout.trim()
}

/** Writes a JSON inventory file by hand, so petIds of any size stay exact. */
export function inventoryFile(items: { petId: bigint | number; quantity: number; status: string }[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-import-'))
  const file = join(dir, 'inventory.json')
  writeFileSync(
    file,
    `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":${JSON.stringify(i.status)}}`).join(',')}]`,
  )
  return file
}

export async function seed(
  server: { env: Record<string, string> },
  items: { petId: bigint | number; quantity: number; status: string }[],
): Promise<void> {
  const result = await runCli(['import', 'inventory', inventoryFile(items)], server.env)
  if (result.code !== 0) throw new Error(`import failed: ${result.stderr}`)
}

/** One server on a fresh database, with one key, for a whole suite. */
export async function setupSuite(backend: (typeof BACKENDS)[number], extraEnv: Record<string, string> = {}) {
  const database = await backend.create()
  const server = await startServer(database.url, extraEnv)
  const token = await createKey(server, 'suite')
  return {
    database,
    server,
    token,
    async teardown() {
      await server.stop()
      await database.drop()
    },
  }
}
