// The CPU guard's scenarios (bench/guard.ts): each runs a fixed number of requests with wrk against
// each build and reads how much CPU time the build's process spent on them, from the scheduler's own
// count (/proc/<pid>/task/*/schedstat), so neither wall-clock throughput nor the load generator
// sharing the cores moves the figure. Windows are short (0.3 to 1 s) so that the two builds' windows
// are close in time and the machine's drift falls on both.
import { execFileSync, spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import type { Backend } from './backends.js'
import { CONNECTIONS, ORDER_STOCK, SMALL_INVENTORY } from './config.js'
import { startClients, type Clients } from './live-children.js'
import { parseWrk } from './load.js'
import { cpuNsOf, track } from './procs.js'
import { checkGet, checkOrder, checkPatch, type Dataset, makeDataset, type Running, serviceEnv, startService } from './targets.js'

export interface CpuScenario {
  id: string
  kind: 'get' | 'patch' | 'order' | 'adjust' | 'batch'
  /** Requests per measurement. */
  requests: number
  /** Change streams each build holds open while it is measured. */
  streams: number
  /** wrk's connections (CONNECTIONS unless given): a batch's few, as 64 batches of 1,000 in flight made answers wait past wrk's 2 s. */
  connections?: number
}

/**
 * The pet every PATCH names, the pet every order names and the pet every adjustment names: one hot pet
 * each, the unfriendly case. A batch names BATCH_PETS pets from the adjustments' on, each ten times.
 */
const PATCH_PET = 1
const ORDER_PET = 2
const ADJUST_PET = 3
const BATCH_CHANGES = 1000
const BATCH_PETS = 90
const STREAMS = 100

export const SCENARIOS: readonly CpuScenario[] = [
  { id: 'get-100', kind: 'get', requests: 10_000, streams: 0 },
  { id: 'patch-one', kind: 'patch', requests: 5_000, streams: 0 },
  { id: 'order-one', kind: 'order', requests: 5_000, streams: 0 },
  { id: 'patch-one-100-streams', kind: 'patch', requests: 5_000, streams: STREAMS },
  // Issue 46; they join the guard's run once bench/baseline has the routes (GUARD_SCENARIOS names others).
  { id: 'adjust-one', kind: 'adjust', requests: 5_000, streams: 0 },
  { id: 'batch-1000', kind: 'batch', requests: 200, streams: 0, connections: 4 },
]

/** The build under test and the pinned earlier build it is judged against (bench/baseline). */
export type GuardTargetName = 'service' | 'baseline'

export interface GuardTarget {
  name: GuardTargetName
  running: Running
}

export interface Targets {
  list: GuardTarget[]
  clients: Clients
  stop(): Promise<void>
}

export interface CpuSample {
  nsPerRequest: number
  completed: number
  /** wrk's requests a second: shown beside the CPU figures, never judged (the machine's noise moves it by a third). */
  rps: number
  /** The server's CPU time ÷ the window's wall time: near 1 when it was the bottleneck. */
  busy: number
}

/**
 * Where each process runs. The vCPUs of one VM are not equally fast (here one ran a loop 10 % slower
 * than the other, every time), so a server that the scheduler moves between them reads two CPU
 * figures a request. Both builds run on the last CPU, and wrk on the others; PostgreSQL goes where
 * the scheduler puts it. The stream clients share the servers' CPU: on the other one, with wrk, they
 * were what the load waited for, the server idled part of each window, and a slower build then
 * gathered more PATCHes a commit and a stream write, which hid a planted 15 µs (ratios 1.01 to 1.26
 * over six readings; 1.12 to 1.35 with the clients beside the server).
 * Undefined on a one-CPU machine: nothing is pinned.
 */
const CPUS =
  availableParallelism() > 1 ? { servers: String(availableParallelism() - 1), load: `0-${availableParallelism() - 2}` } : undefined

/** Every thread of `pid` (and each it makes later) onto `cpus`, with util-linux's taskset. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore', timeout: 10_000 })
}

/** The service as users run it (the request log at info), with rate limits counted but never reached. */
function guardEnv(url: string): NodeJS.ProcessEnv {
  return { ...serviceEnv(url), LOG_LEVEL: 'info', RATE_LIMIT_PER_KEY: '100000000', STREAM_MAX_PER_KEY: String(2 * STREAMS) }
}

/**
 * Both builds, each on a fresh database of 100 entries that each hold ORDER_STOCK units (so that no
 * order is refused), each checked to answer correctly before anything is measured. `cli` is today's
 * `dist/src/cli.js`, `baseline` the earlier build's.
 */
/** What another comparison than the guard's makes of the two targets (bench/locations.ts: one build, two stores). */
export interface TargetOptions {
  /** The entries both stores start with (the guard's: SMALL_INVENTORY pets of ORDER_STOCK units each). */
  size?: number
  /** Run on each target once it serves, before the checks. */
  prepare?: (target: GuardTarget, dataset: Dataset) => Promise<void>
  /** Whether the answers are checked against the dataset (as the guard's are): a store prepared otherwise answers otherwise. */
  check?: (target: GuardTarget) => boolean
}

export async function startTargets(
  cli: string,
  baseline: string,
  backend: Backend,
  dir: string,
  log: (line: string) => void,
  options: TargetOptions = {},
): Promise<Targets> {
  const dataset = await makeDataset(dir, options.size ?? SMALL_INVENTORY, false, ORDER_STOCK)
  const list: GuardTarget[] = []
  const clients = startClients()
  const stop = async (): Promise<void> => {
    await clients.stop()
    for (const target of list.reverse()) await target.running.stop()
  }
  try {
    log(`${backend.name}: starting this build and the baseline`)
    list.push({ name: 'service', running: await startService(cli, backend, dataset, 'guard', guardEnv) })
    list.push({ name: 'baseline', running: await startService(baseline, backend, dataset, 'guard-baseline', guardEnv) })
    if (CPUS !== undefined) {
      for (const target of list) pin(target.running.server.pid, CPUS.servers)
      pin(clients.pid, CPUS.servers)
      log(`${backend.name}: both builds and the stream clients on CPU ${CPUS.servers}, wrk on ${CPUS.load}`)
    }
    for (const target of list) await options.prepare?.(target, dataset)
    for (const target of list) {
      if (options.check && !options.check(target)) continue
      // Each check names the first pet; the order first, while it still holds ORDER_STOCK units.
      await checkGet(target.running, dataset)
      await checkOrder(target.running, dataset, true)
      await checkPatch(target.running, dataset)
      await checkStockMoves(target.running)
    }
    return { list, clients, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** An adjustment and a batch of two answer as the API says (each takes a unit from a pet of ORDER_STOCK). */
async function checkStockMoves(running: Running): Promise<void> {
  const post = async (path: string, body: unknown, expected: unknown) => {
    const res = await fetch(`${running.server.baseUrl}/v1/inventory/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    })
    const text = await res.text()
    const answer = res.status === 200 ? (JSON.parse(text) as Record<string, unknown>) : undefined
    const got = answer && ('entries' in answer ? (answer.entries as { quantity: number }[]).map((e) => e.quantity) : answer.quantity)
    if (!isDeepStrictEqual(got, expected))
      throw new Error(
        `${running.server.label}: POST /v1/inventory/${path} -> ${res.status} ${text.slice(0, 300)}, expected ${JSON.stringify(expected)}`,
      )
  }
  await post(`${ADJUST_PET}/adjustments`, { delta: -1 }, ORDER_STOCK - 1)
  const changes = [
    { petId: ADJUST_PET, delta: -1 },
    { petId: ADJUST_PET + 1, delta: -1 },
  ]
  await post('batch', { changes }, [ORDER_STOCK - 2, ORDER_STOCK - 1])
}

/** What guard.lua prints once its requests are answered; SIGINT then makes wrk stop and report. */
const DONE = 'guard: requests done'
const SCRIPT = fileURLToPath(new URL('../../bench/guard.lua', import.meta.url))
/** Generous: the slowest target (PostgreSQL's orders) answers 2,000 requests a second even on a busy machine. */
const WRK_SECONDS = 60

/** `requests` requests of the scenario's kind with wrk -t1 -c64 (or its own); the target's CPU ns per answered request. */
async function measure(scenario: CpuScenario, running: Running): Promise<CpuSample> {
  const path = scenario.kind === 'order' ? '/v1/store/orders' : '/v1/inventory'
  const pet = { get: PATCH_PET, patch: PATCH_PET, order: ORDER_PET, adjust: ADJUST_PET, batch: ADJUST_PET }[scenario.kind]
  const env = {
    ...process.env,
    GUARD_KIND: scenario.kind,
    GUARD_PET: String(pet),
    GUARD_REQUESTS: String(scenario.requests),
    GUARD_BATCH: String(BATCH_CHANGES),
    GUARD_BATCH_PETS: String(BATCH_PETS),
  }
  const args = ['-t1', `-c${scenario.connections ?? CONNECTIONS}`, `-d${WRK_SECONDS}s`, '--latency', '-s', SCRIPT]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}${path}`)
  const before = await cpuNsOf(running.server.pid)
  const startedNs = process.hrtime.bigint()
  const out = await new Promise<string>((resolve, reject) => {
    const [command, argv] = CPUS === undefined ? ['wrk', args] : ['taskset', ['-c', CPUS.load, 'wrk', ...args]]
    const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    const untrack = track(child)
    let text = ''
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      if (text.includes(DONE)) child.kill('SIGINT')
    })
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString()
    })
    child.once('error', reject)
    child.once('close', (code) => {
      untrack()
      if (code === 0) resolve(text)
      else reject(new Error(`wrk exited with ${String(code)}:\n${text}`))
    })
  })
  const after = await cpuNsOf(running.server.pid)
  const wallNs = Number(process.hrtime.bigint() - startedNs)
  const run = parseWrk(out)
  const died = running.server.unexpectedExit()
  if (died !== undefined) throw new Error(`${running.server.label} exited during the run: ${died}`)
  if (run.errors > 0 || run.non2xx > 0) {
    throw new Error(`${running.server.label}: ${run.non2xx} answers not 2xx and socket errors ${run.errorDetail} in ${scenario.id}`)
  }
  if (run.completed < scenario.requests) {
    throw new Error(
      `${running.server.label}: only ${run.completed} of ${scenario.requests} requests answered within ${WRK_SECONDS} s in ${scenario.id}`,
    )
  }
  if (before === undefined || after === undefined) throw new Error(`cannot read /proc/${running.server.pid}/task/*/schedstat`)
  return { nsPerRequest: (after - before) / run.completed, completed: run.completed, rps: run.rps, busy: (after - before) / wallNs }
}

/**
 * One round of a scenario: each build once, the first one turned every round (service then baseline,
 * then baseline then service), so that neither always follows the other's load. Each holds the
 * scenario's streams open while it is measured.
 */
export async function measureScenario(scenario: CpuScenario, targets: Targets, round: number): Promise<Map<GuardTargetName, CpuSample>> {
  const samples = new Map<GuardTargetName, CpuSample>()
  const order = round % 2 === 0 ? targets.list : [...targets.list].reverse()
  for (const target of order) {
    if (scenario.streams > 0) {
      const { port } = new URL(target.running.server.baseUrl)
      const opened = await targets.clients.open({
        port: Number(port),
        token: target.running.token,
        path: '/v1/inventory/changes/stream',
        count: scenario.streams,
        record: false,
      })
      if (opened.opened !== scenario.streams)
        throw new Error(`${target.name}: opened ${opened.opened} of ${scenario.streams} streams: ${opened.firstError ?? ''}`)
    }
    try {
      samples.set(target.name, await measure(scenario, target.running))
    } finally {
      if (scenario.streams > 0) await targets.clients.closeAll()
    }
  }
  return samples
}
