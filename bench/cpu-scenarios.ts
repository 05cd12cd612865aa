// The CPU guard's scenarios (bench/guard.ts): each runs a fixed number of requests with wrk against
// every target and reads how much CPU time the target's process spent on them, from the scheduler's
// own count (/proc/<pid>/task/*/schedstat), so neither wall-clock throughput nor the load generator
// sharing the cores moves the figure.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Backend } from './backends.js'
import { CONNECTIONS, ORDER_STOCK, SMALL_INVENTORY } from './config.js'
import { startClients, type Clients } from './live-children.js'
import { parseWrk } from './load.js'
import { cpuNsOf, track } from './procs.js'
import { checkGet, checkOrder, checkPatch, makeDataset, type Running, serviceEnv, startCeiling, startService } from './targets.js'

export interface CpuScenario {
  id: string
  kind: 'get' | 'patch' | 'order'
  /** Requests per measurement. */
  requests: number
  /** Change streams the service holds open while it is measured (the references have none). */
  streams: number
}

/** The pet every PATCH names and the pet every order names: one hot pet each, the unfriendly case. */
const PATCH_PET = 1
const ORDER_PET = 2
const STREAMS = 100

export const SCENARIOS: readonly CpuScenario[] = [
  { id: 'get-100', kind: 'get', requests: 20_000, streams: 0 },
  { id: 'patch-one', kind: 'patch', requests: 10_000, streams: 0 },
  { id: 'order-one', kind: 'order', requests: 10_000, streams: 0 },
  { id: 'patch-one-100-streams', kind: 'patch', requests: 20_000, streams: STREAMS },
]

export interface GuardTarget {
  name: 'service' | 'baseline' | 'fastify' | 'bare'
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
}

/** The service as users run it (the request log at info), with rate limits counted but never reached. */
function guardEnv(url: string): NodeJS.ProcessEnv {
  return { ...serviceEnv(url), LOG_LEVEL: 'info', RATE_LIMIT_PER_KEY: '100000000', STREAM_MAX_PER_KEY: String(2 * STREAMS) }
}

/**
 * The service (and a baseline build, when given) on a fresh database of 100 entries, each holding
 * ORDER_STOCK units so that no order is refused, and the two references serving the same entries.
 * Each answers once correctly before anything is measured.
 */
export async function startTargets(
  cli: string,
  baseline: string | undefined,
  backend: Backend,
  dir: string,
  log: (line: string) => void,
): Promise<Targets> {
  const dataset = await makeDataset(dir, SMALL_INVENTORY, false, ORDER_STOCK)
  const list: GuardTarget[] = []
  const clients = startClients()
  const stop = async (): Promise<void> => {
    await clients.stop()
    for (const target of list.reverse()) await target.running.stop()
  }
  try {
    log(`${backend.name}: starting the service${baseline === undefined ? '' : ', the baseline'} and the references`)
    const service = await startService(cli, backend, dataset, 'guard', guardEnv)
    list.push({ name: 'service', running: service })
    const body = await checkGet(service, dataset)
    if (baseline !== undefined)
      list.push({ name: 'baseline', running: await startService(baseline, backend, dataset, 'guard-baseline', guardEnv) })
    list.push({ name: 'fastify', running: await startCeiling('fastify', dataset, dir, body) })
    list.push({ name: 'bare', running: await startCeiling('bare', dataset, dir, body) })
    for (const target of list) {
      // Both checks name the first pet; the order first, while it still holds ORDER_STOCK units.
      await checkGet(target.running, dataset)
      await checkOrder(target.running, dataset, target.name === 'service' || target.name === 'baseline')
      await checkPatch(target.running, dataset)
    }
    return { list, clients, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** What guard.lua prints once its requests are answered; SIGINT then makes wrk stop and report. */
const DONE = 'guard: requests done'
const SCRIPT = fileURLToPath(new URL('../../bench/guard.lua', import.meta.url))
/** Generous: the slowest target (PostgreSQL's orders) answers 2,000 requests a second even on a busy machine. */
const WRK_SECONDS = 60

/** `requests` requests of the scenario's kind with wrk -t1 -c64; the target's CPU ns per answered request. */
async function measure(scenario: CpuScenario, running: Running): Promise<CpuSample> {
  const path = scenario.kind === 'order' ? '/v1/store/orders' : '/v1/inventory'
  const env = {
    ...process.env,
    GUARD_KIND: scenario.kind,
    GUARD_PET: String(scenario.kind === 'order' ? ORDER_PET : PATCH_PET),
    GUARD_REQUESTS: String(scenario.requests),
  }
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${WRK_SECONDS}s`, '--latency', '-s', SCRIPT]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}${path}`)
  const before = await cpuNsOf(running.server.pid)
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
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
  return { nsPerRequest: (after - before) / run.completed, completed: run.completed, rps: run.rps }
}

/**
 * One round of a scenario: every target once, the order turned by the round so that no target is
 * always first after another's load. A service target holds the scenario's streams open meanwhile.
 */
export async function measureScenario(scenario: CpuScenario, targets: Targets, round: number): Promise<Map<string, CpuSample>> {
  const samples = new Map<string, CpuSample>()
  const n = targets.list.length
  const order = targets.list.map((_, i) => targets.list[(i + round) % n]!)
  if (round % 2 === 1) order.reverse()
  for (const target of order) {
    const withStreams = scenario.streams > 0 && (target.name === 'service' || target.name === 'baseline')
    if (withStreams) {
      const { port } = new URL(target.running.server.baseUrl)
      const opened = await targets.clients.open({
        port: Number(port),
        token: target.running.token,
        path: '/v1/inventory/changes/stream',
        count: scenario.streams,
        record: false,
      })
      // A baseline built before the change stream existed has nothing to measure here.
      if (target.name === 'baseline' && opened.opened === 0 && opened.firstError?.includes(' 404 ')) continue
      if (opened.opened !== scenario.streams)
        throw new Error(`${target.name}: opened ${opened.opened} of ${scenario.streams} streams: ${opened.firstError ?? ''}`)
    }
    try {
      samples.set(target.name, await measure(scenario, target.running))
    } finally {
      if (withStreams) await targets.clients.closeAll()
    }
  }
  return samples
}
