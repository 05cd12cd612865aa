// A manual check of the docs page in a real browser (not part of `npm test`):
//
//   npm run build && node dist/scripts/check-docs-page.js [out.png]
//
// Starts the service on a temporary SQLite database, renders http://127.0.0.1:PORT/v1/docs with
// Debian's headless chromium, writes a screenshot (default /tmp/docs-page.png), and lists every host
// the browser contacted (from a NetLog), so a page that reaches beyond this service shows up.
// Exits non-zero when chromium fails or writes no screenshot. Needs: apt-get install -y chromium
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url))
const output = resolve(process.argv[2] ?? '/tmp/docs-page.png')
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]'])

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer()
    server.once('error', fail)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => done(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function run(command: string, args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', fail)
    child.on('close', (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr })
    })
  })
}

async function startService(dir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}: ${stderr}`)
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/openapi.json`)).ok) return child
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the service did not start: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise((done) => {
    child.once('exit', () => done())
    child.kill('SIGTERM')
  })
}

interface NetLogEvent {
  type: number
  params?: { url?: string; initiator?: string; request_type?: string; net_error?: number }
}

/**
 * The hosts of every request in chromium's NetLog, split by who made it: the page (its initiator is
 * the page's origin, or it is the main frame) or the browser itself ("not an origin": update checks,
 * account and autofill services, which the page cannot cause).
 */
function requestHosts(netLogText: string): { page: string[]; browser: string[] } {
  const log = JSON.parse(netLogText) as { constants: { logEventTypes: Record<string, number> }; events: NetLogEvent[] }
  const startJob = log.constants.logEventTypes.URL_REQUEST_START_JOB
  const page = new Set<string>()
  const browser = new Set<string>()
  for (const { type, params } of log.events) {
    if (type !== startJob || !params?.url) continue
    const host = new URL(params.url).host
    const byPage = params.request_type === 'main frame' || (params.initiator ?? 'not an origin') !== 'not an origin'
    ;(byPage ? page : browser).add(host)
  }
  return { page: [...page].sort(), browser: [...browser].sort() }
}

const browserFlags = (profile: string) => [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  `--user-data-dir=${profile}`,
  '--window-size=1280,1600',
  '--virtual-time-budget=5000',
]

async function main(): Promise<number> {
  if (!existsSync(CHROMIUM)) {
    console.error(`${CHROMIUM} not found: apt-get update && apt-get install -y chromium`)
    return 2
  }
  const dir = mkdtempSync(join(tmpdir(), 'petstore-docs-check-'))
  const port = await freePort()
  const service = await startService(dir, port)
  const url = `http://127.0.0.1:${port}/v1/docs`
  try {
    rmSync(output, { force: true })
    const netLog = join(dir, 'netlog.json')
    const shot = await run(
      CHROMIUM,
      [...browserFlags(mkdtempSync(join(dir, 'profile-'))), `--log-net-log=${netLog}`, `--screenshot=${output}`, url],
      120_000,
    )
    const dom = await run(CHROMIUM, [...browserFlags(mkdtempSync(join(dir, 'profile-'))), '--dump-dom', url], 120_000)

    const hosts = existsSync(netLog) ? requestHosts(readFileSync(netLog, 'utf8')) : undefined
    const text = dom.stdout.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ')
    console.log(`page: ${url}`)
    console.log(`chromium (screenshot) exit code: ${shot.code}; (dump-dom) exit code: ${dom.code}`)
    if (!hosts) console.log('no NetLog was written: the hosts contacted are unknown')
    else {
      const foreign = hosts.page.filter((h) => !LOCAL_HOSTS.has(h.replace(/:\d+$/, '')))
      console.log(`hosts requested by the page: ${hosts.page.join(', ') || '(none)'}`)
      console.log(foreign.length ? `THE PAGE REACHED NON-LOCAL HOSTS: ${foreign.join(', ')}` : 'the page reached no non-local host')
      console.log(`hosts requested by chromium itself (not the page): ${hosts.browser.join(', ') || '(none)'}`)
    }
    const expected = ['Petstore Inventory API', '1.0.0', 'OAS 3.1', 'GET /inventory List stock levels', 'PATCH /inventory /{petId}']
    for (const part of [...expected, 'Schemas', 'PetStatus', 'InventoryItem', 'InventoryUpdate', 'Error']) {
      console.log(`rendered page ${text.includes(part) ? 'shows' : 'LACKS'} '${part}'`)
    }

    const written = existsSync(output) && statSync(output).size > 0
    if (shot.code !== 0 || !written) {
      console.error(`chromium failed (exit ${shot.code}, screenshot ${written ? 'written' : 'missing'}):\n${shot.stderr}`)
      return 1
    }
    console.log(`screenshot: ${output} (${statSync(output).size} bytes)`)
    return 0
  } finally {
    await stopService(service)
    rmSync(dir, { recursive: true, force: true })
  }
}

process.exitCode = await main()
