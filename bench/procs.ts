// Child processes: one-shot CLI commands and long-running HTTP servers, all bounded in time.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readdir, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { READY_TIMEOUT_MS, STOP_TIMEOUT_MS } from './config.js'

export const HOST = '127.0.0.1'

const live = new Set<ChildProcess>()

/** Registers a child so a crash or Ctrl-C kills it; returns the function that forgets it. */
export function track(child: ChildProcess): () => void {
  live.add(child)
  return () => {
    live.delete(child)
  }
}

/** Kills every child still running (used on a crash or on Ctrl-C). */
export function killAllChildren(): void {
  for (const child of live) child.kill('SIGKILL')
  live.clear()
}

/** Runs `node <script> ...args` to completion and returns its stdout. */
export function runNode(script: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [script, ...args],
      { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        live.delete(child)
        if (err) reject(new Error(`node ${[script, ...args].join(' ')} failed: ${err.message}\n${stderr}`))
        else resolve(stdout)
      },
    )
    live.add(child)
  })
}

/** Asks the OS for a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, HOST, () => {
      const addr = srv.address()
      srv.close(() => (addr !== null && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))))
    })
  })
}

export interface ServerHandle {
  readonly label: string
  readonly pid: number
  readonly baseUrl: string
  /** Set when the process exited before stop() was called. */
  unexpectedExit(): string | undefined
  /** SIGTERM, wait for exit (SIGKILL after STOP_TIMEOUT_MS). Rejects unless it exited 0 on SIGTERM. */
  stop(): Promise<void>
}

/**
 * Spawns `node <script> ...args` as an HTTP server on `port`, waits until `readyPath` answers 200.
 * The child's output is kept (last 16 KiB) and shown if it fails.
 */
export async function startServer(
  label: string,
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  port: number,
  readyPath: string,
): Promise<ServerHandle> {
  const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  live.add(child)
  let output = ''
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-16_384)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exitInfo: string | undefined
  let stopping = false
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child)
      exitInfo = `exit code ${String(code)}, signal ${String(signal)}`
      resolve()
    })
    child.once('error', (err) => {
      exitInfo = `spawn error: ${err.message}`
      live.delete(child)
      resolve()
    })
  })
  const baseUrl = `http://${HOST}:${port}`
  const fail = (why: string): Error => new Error(`${label}: ${why}\n--- ${label} output ---\n${output}`)

  const handle: ServerHandle = {
    label,
    pid: child.pid ?? -1,
    baseUrl,
    unexpectedExit: () => (!stopping && exitInfo !== undefined ? `${exitInfo}\n--- ${label} output ---\n${output}` : undefined),
    async stop() {
      if (exitInfo !== undefined && !stopping) throw fail(`exited before stop (${exitInfo})`)
      stopping = true
      child.kill('SIGTERM')
      let timer: NodeJS.Timeout | undefined
      const timedOut = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS)
        }),
      ])
      clearTimeout(timer)
      if (timedOut) {
        child.kill('SIGKILL')
        await exited
        throw fail(`did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM (killed)`)
      }
      if (child.exitCode !== 0) throw fail(`did not exit cleanly on SIGTERM (${String(exitInfo)})`)
    },
  }

  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    if (exitInfo !== undefined) throw fail(`exited while starting (${exitInfo})`)
    try {
      const res = await fetch(baseUrl + readyPath, { signal: AbortSignal.timeout(2_000) })
      await res.arrayBuffer()
      if (res.status === 200) return handle
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      await exited
      throw fail(`not ready within ${READY_TIMEOUT_MS} ms (GET ${readyPath} never answered 200)`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** VmRSS (resident now) and VmHWM (peak resident since start) of a running process, in KiB, from /proc. */
export async function memoryOf(pid: number): Promise<{ rssKiB: number; peakKiB: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const field = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
    if (!m) throw new Error(`/proc/${pid}/status has no ${name}`)
    return Number(m[1])
  }
  return { rssKiB: field('VmRSS'), peakKiB: field('VmHWM') }
}

/** CPU time a process has used, in microseconds. */
export interface CpuTime {
  userUs: number
  sysUs: number
}

let clockTicks: number | undefined

/** Clock ticks per second of /proc's times (`getconf CLK_TCK`, asked once; 100 if that fails). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    let ticks = NaN
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5_000 }).trim())
    } catch {
      // no getconf: Linux's USER_HZ is 100 on every common architecture
    }
    clockTicks = Number.isInteger(ticks) && ticks > 0 ? ticks : 100
  }
  return clockTicks
}

/**
 * User and system CPU time a process has used so far (all its threads), in microseconds, from
 * /proc/<pid>/stat fields 14 (utime) and 15 (stime); undefined when /proc cannot be read or parsed.
 */
export async function cpuTimeOf(pid: number): Promise<CpuTime | undefined> {
  let stat: string
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // Field 2 (comm) is in parentheses and may hold spaces; fields from 3 on follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const [utime, stime] = [fields[14 - 3], fields[15 - 3]].map(Number)
  if (utime === undefined || stime === undefined || !Number.isFinite(utime) || !Number.isFinite(stime)) return undefined
  const us = 1e6 / ticksPerSecond()
  return { userUs: utime * us, sysUs: stime * us }
}

const TIME = '/usr/bin/time'

/**
 * Runs `node <script> ...args` to completion like runNode, under /usr/bin/time -f %M when it exists,
 * and returns the wall time and the process's peak RSS (KiB; undefined without /usr/bin/time).
 */
export async function runNodeMeasured(
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  rssFile: string,
): Promise<{ ms: number; peakKiB: number | undefined }> {
  const useTime = existsSync(TIME)
  const [command, argv] = useTime
    ? [TIME, ['-f', '%M', '-o', rssFile, process.execPath, script, ...args]]
    : [process.execPath, [script, ...args]]
  const started = performance.now()
  await new Promise<void>((resolve, reject) => {
    const child = execFile(
      command,
      argv,
      { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 },
      (err, _stdout, stderr) => {
        live.delete(child)
        if (err) reject(new Error(`node ${[script, ...args].join(' ')} failed: ${err.message}\n${stderr}`))
        else resolve()
      },
    )
    live.add(child)
  })
  const ms = performance.now() - started
  if (!useTime) return { ms, peakKiB: undefined }
  const peakKiB = Number((await readFile(rssFile, 'utf8')).trim().split('\n').pop())
  await rm(rssFile, { force: true })
  return { ms, peakKiB: Number.isFinite(peakKiB) ? peakKiB : undefined }
}

/** The whole machine's CPU time from /proc/stat's first line, in clock ticks: all of it, and the part stolen. */
export interface MachineTicks {
  total: number
  steal: number
}

/**
 * Summed over all CPUs: every field of /proc/stat's `cpu` line (user … steal; guest time is already
 * inside user), and field 8, steal: time a virtual CPU was ready to run but the hypervisor ran
 * something else. Undefined when /proc/stat cannot be read.
 */
export async function machineTicks(): Promise<MachineTicks | undefined> {
  let stat: string
  try {
    stat = await readFile('/proc/stat', 'utf8')
  } catch {
    return undefined
  }
  const line = /^cpu\s+(.*)$/m.exec(stat)?.[1]
  const fields = line?.trim().split(/\s+/).slice(0, 8).map(Number)
  if (fields === undefined || fields.length < 8 || fields.some((f) => !Number.isFinite(f))) return undefined
  return { total: fields.reduce((a, b) => a + b, 0), steal: fields[7]! }
}

/** Percentage of the machine's CPU time stolen by the hypervisor between two readings. */
export function stealPercent(before: MachineTicks | undefined, after: MachineTicks | undefined): number | undefined {
  if (before === undefined || after === undefined || after.total <= before.total) return undefined
  return (100 * (after.steal - before.steal)) / (after.total - before.total)
}

/**
 * CPU time a process has run so far, in nanoseconds: the sum over its threads of
 * /proc/<pid>/task/<tid>/schedstat's first field (time on a CPU, kept by the scheduler in ns, where
 * /proc/<pid>/stat's utime and stime move in ticks of 10 ms). Undefined when /proc cannot be read.
 */
export async function cpuNsOf(pid: number): Promise<number | undefined> {
  let tids: string[]
  try {
    tids = await readdir(`/proc/${pid}/task`)
  } catch {
    return undefined
  }
  let total = 0
  for (const tid of tids) {
    try {
      total += Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')).split(' ')[0])
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return Number.isFinite(total) ? total : undefined
}

/**
 * Time a process's main thread (its thread id is the pid) has spent runnable but waiting for a CPU,
 * so far, in nanoseconds: the second field of /proc/<pid>/task/<pid>/schedstat. On a shared machine
 * it says how much of a latency was the machine's rather than the process's own work. Undefined when
 * /proc cannot be read.
 */
export async function mainThreadWaitNsOf(pid: number): Promise<number | undefined> {
  try {
    const wait = Number((await readFile(`/proc/${pid}/task/${pid}/schedstat`, 'utf8')).split(' ')[1])
    return Number.isFinite(wait) ? wait : undefined
  } catch {
    return undefined
  }
}
