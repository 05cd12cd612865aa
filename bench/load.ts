// One bounded wrk run (warm-up or measured), reduced to the numbers the report needs.
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { CONNECTIONS, LOAD_GRACE_MS, WRK_THREADS, WRK_TIMEOUT_SECONDS } from './config.js'
import { track, type CpuTime } from './procs.js'

export interface LoadSpec {
  /** GET: the URL requested; PATCH and order: a URL on the server (the Lua script sets each request's path). */
  url: string
  token: string
  /** PATCH and order scenarios: pet ids FIRST..FIRST+count-1, in rotation, via bench/patch.lua or bench/order.lua. */
  rotation?: { script: 'patch' | 'order'; firstPetId: number; petCount: number }
}

export interface Measured {
  /** wrk's Requests/sec: completed requests ÷ elapsed time. */
  rps: number
  /** Latency percentiles from wrk --latency, in milliseconds. */
  p50: number
  p99: number
  completed: number
  /** wrk's "Non-2xx or 3xx responses". */
  non2xx: number
  /** wrk's socket errors: connect + read + write + timeout. */
  errors: number
  errorDetail: string
  /** Server process CPU time per completed request, in µs (undefined when /proc could not be read). */
  cpuUserUs?: number
  cpuSysUs?: number
  /** Share of the machine's CPU time the hypervisor stole during the run, in % (undefined without /proc/stat). */
  stealPct?: number
}

/** The server's CPU time between two readings, divided by the requests wrk completed in between. */
export function cpuPerRequest(
  before: CpuTime | undefined,
  after: CpuTime | undefined,
  completed: number,
): Pick<Measured, 'cpuUserUs' | 'cpuSysUs'> {
  if (before === undefined || after === undefined || completed <= 0) return {}
  return { cpuUserUs: (after.userUs - before.userUs) / completed, cpuSysUs: (after.sysUs - before.sysUs) / completed }
}

/** Committed beside the sources; dist/bench/load.js -> bench/patch.lua, bench/order.lua. */
const SCRIPTS = {
  patch: fileURLToPath(new URL('../../bench/patch.lua', import.meta.url)),
  order: fileURLToPath(new URL('../../bench/order.lua', import.meta.url)),
} as const

/** `wrk -v`'s first line, or undefined when wrk is not on PATH. */
export function wrkVersion(): string | undefined {
  const out = spawnSync('wrk', ['-v'], { encoding: 'utf8', timeout: 10_000 })
  if (out.error) return undefined
  const line = `${out.stdout}${out.stderr}`.split('\n')[0]?.trim() ?? ''
  return line.replace(/\s*Copyright.*$/, '') || 'wrk (unknown version)'
}

const UNIT_MS: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

function toMs(value: string, unit: string): number {
  const factor = UNIT_MS[unit]
  if (factor === undefined) throw new Error(`wrk: unknown time unit '${unit}'`)
  return Number(value) * factor
}

/** Parses wrk 4.x output (with --latency). Throws when a number the report needs is missing. */
export function parseWrk(out: string): Measured {
  const need = (re: RegExp, what: string): RegExpExecArray => {
    const m = re.exec(out)
    if (!m) throw new Error(`wrk output has no ${what}:\n${out}`)
    return m
  }
  const percentile = (p: number): number => {
    const m = need(new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm'), `${p}% latency line (run with --latency)`)
    return toMs(m[1] ?? '', m[2] ?? '')
  }
  const rps = Number(need(/^Requests\/sec:\s+([\d.]+)/m, 'Requests/sec line')[1])
  const completed = Number(need(/^\s*(\d+) requests in /m, '"requests in" line')[1])
  const non2xx = Number(/^\s*Non-2xx or 3xx responses:\s+(\d+)/m.exec(out)?.[1] ?? 0)
  const sock = /^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/m.exec(out)
  const [connect, read, write, timeout] = [1, 2, 3, 4].map((i) => Number(sock?.[i] ?? 0))
  return {
    rps,
    completed,
    non2xx,
    p50: percentile(50),
    p99: percentile(99),
    errors: (connect ?? 0) + (read ?? 0) + (write ?? 0) + (timeout ?? 0),
    errorDetail: sock ? `connect ${connect}, read ${read}, write ${write}, timeout ${timeout}` : 'none',
  }
}

/** A wrk run under way: its figures once it exits, and a way to end it early. */
export interface WrkRun {
  done: Promise<Measured>
  /** SIGINTs wrk: it stops sending and prints its figures for what it did. */
  stop(): void
  /** What wrk printed so far (stdout and stderr): once `done` resolved, all of it, the Lua script's own lines included. */
  output(): string
}

/**
 * Spawns wrk with `args`, which bound it to `seconds` (-d); kills it and rejects if it has not exited
 * LOAD_GRACE_MS after that. `stopOn`: stop() once its stdout holds this line (guard.lua prints one
 * when its requests are answered). `label` leads the timeout's and the exit code's errors.
 */
export function spawnWrk(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  seconds: number,
  opts: { stopOn?: string; label?: string } = {},
): WrkRun {
  const lead = opts.label === undefined ? '' : `${opts.label}: `
  const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const untrack = track(child)
  let interrupted = false
  const stop = () => {
    if (interrupted || child.exitCode !== null) return
    interrupted = true
    child.kill('SIGINT')
  }
  let out = ''
  const done = new Promise<Measured>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (opts.stopOn !== undefined && out.includes(opts.stopOn)) stop()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString()
    })
    let timedOut = false
    const watchdog = setTimeout(
      () => {
        timedOut = true
        child.kill('SIGKILL')
      },
      seconds * 1000 + LOAD_GRACE_MS,
    )
    child.once('error', (err) => {
      clearTimeout(watchdog)
      untrack()
      reject(new Error(`wrk: ${err.message}`))
    })
    child.once('close', (code, signal) => {
      clearTimeout(watchdog)
      untrack()
      if (timedOut) reject(new Error(`${lead}wrk did not finish within ${seconds} s + ${LOAD_GRACE_MS} ms (killed)`))
      else if (code !== 0) reject(new Error(`${lead}wrk exited with code ${String(code)}, signal ${String(signal)}:\n${out}`))
      else {
        try {
          resolve(parseWrk(out))
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)))
        }
      }
    })
  })
  return { done, stop, output: () => out }
}

/** Runs `wrk -t1 -c64 -d<seconds>s --latency` once; kills it and rejects if it has not exited LOAD_GRACE_MS later. */
export function runLoad(spec: LoadSpec, seconds: number): Promise<Measured> {
  const args = [
    `-t${WRK_THREADS}`,
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    `--timeout`,
    `${WRK_TIMEOUT_SECONDS}s`,
    '-H',
    `Authorization: Bearer ${spec.token}`,
  ]
  const env = { ...process.env }
  if (spec.rotation) {
    args.push('-s', SCRIPTS[spec.rotation.script])
    env.BENCH_FIRST_PET = String(spec.rotation.firstPetId)
    env.BENCH_PET_COUNT = String(spec.rotation.petCount)
  }
  args.push(spec.url)
  return spawnWrk(args, env, seconds).done
}
