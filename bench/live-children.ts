// The live-changes scenarios' helper processes (webhook receiver, stream clients, fixed-rate PATCH
// generator), forked with an IPC channel and tracked, so a crash or Ctrl-C kills them with the servers.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ClientsCollected, ClientsReply, OpenRequest } from './live-clients.js'
import type { PatcherRequest, PatcherResult } from './live-patcher.js'
import type { ReceiverReply, ReceiverStats } from './live-receiver.js'
import { track } from './procs.js'

const script = (name: string): string => fileURLToPath(new URL(`./${name}.js`, import.meta.url))
const IPC_TIMEOUT_MS = 30_000

interface Child {
  child: ChildProcess
  output(): string
  /** Sends `message` and resolves with the first reply `pick` accepts; rejects on exit or after timeoutMs. */
  ask<T>(message: object | undefined, pick: (reply: unknown) => T | undefined, timeoutMs?: number): Promise<T>
  stop(): Promise<void>
}

function start(name: string): Child {
  const child = fork(script(name), [], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
  const untrack = track(child)
  let output = ''
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-8192)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exited: string | undefined
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      untrack()
      exited = `bench/${name} exited (code ${String(code)}, signal ${String(signal)})`
      resolve()
    })
  })
  return {
    child,
    output: () => output,
    ask<T>(message: object | undefined, pick: (reply: unknown) => T | undefined, timeoutMs = IPC_TIMEOUT_MS): Promise<T> {
      return new Promise((resolve, reject) => {
        if (exited !== undefined) return reject(new Error(`${exited}\n${output}`))
        const done = (error: Error | undefined, value?: T): void => {
          clearTimeout(timer)
          child.off('message', onMessage)
          child.off('exit', onExit)
          if (error) reject(error)
          else resolve(value as T)
        }
        const onMessage = (reply: unknown): void => {
          const value = pick(reply)
          if (value !== undefined) done(undefined, value)
        }
        const onExit = (): void => done(new Error(`${exited ?? `bench/${name} exited`}\n${output}`))
        const timer = setTimeout(() => done(new Error(`bench/${name}: no answer within ${timeoutMs} ms\n${output}`)), timeoutMs)
        child.on('message', onMessage)
        child.once('exit', onExit)
        if (message !== undefined) child.send(message)
      })
    },
    async stop() {
      if (exited !== undefined) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exit
      clearTimeout(timer)
    },
  }
}

let asked = 0

export interface Receiver {
  port: number
  pid: number
  stats(): Promise<ReceiverStats>
  setSecret(secret: string): void
  reset(): void
  stop(): Promise<void>
}

/** bench/live-receiver.js, listening on 127.0.0.1. */
export async function startReceiver(): Promise<Receiver> {
  const c = start('live-receiver')
  try {
    const port = await c.ask(undefined, (m) => (m as { port?: number }).port)
    return {
      port,
      pid: c.child.pid ?? -1,
      stats: () => {
        const id = ++asked
        return c.ask({ stats: id }, (m) =>
          (m as ReceiverReply & { id?: number }).id === id ? (m as { stats: ReceiverStats }).stats : undefined,
        )
      },
      setSecret: (secret) => c.child.send({ secret }),
      reset: () => c.child.send({ reset: true }),
      stop: () => c.stop(),
    }
  } catch (error) {
    await c.stop()
    throw error
  }
}

export interface Clients {
  pid: number
  open(request: OpenRequest): Promise<{ opened: number; failed: number; firstError?: string; ms: number }>
  collect(): Promise<ClientsCollected>
  closeAll(): Promise<void>
  stop(): Promise<void>
}

/** bench/live-clients.js, idle until asked to open streams. */
export function startClients(): Clients {
  const c = start('live-clients')
  return {
    pid: c.child.pid ?? -1,
    open: (request) =>
      c.ask(
        { open: request },
        (m) => (typeof (m as { opened?: number }).opened === 'number' ? (m as Extract<ClientsReply, { opened: number }>) : undefined),
        120_000,
      ),
    collect: () => {
      const id = ++asked
      return c.ask({ collect: id }, (m) => {
        const reply = m as { collected?: ClientsCollected; id?: number }
        return reply.id === id ? reply.collected : undefined
      })
    },
    closeAll: async () => {
      await c.ask({ close: true }, (m) => (m as { closedAll?: true }).closedAll)
    },
    stop: () => c.stop(),
  }
}

/** Runs bench/live-patcher.js once: `rate` PATCHes a second for `seconds`, bounded. */
export async function runPatcher(job: PatcherRequest): Promise<PatcherResult> {
  const c = start('live-patcher')
  try {
    return await c.ask(
      job,
      (m) => (typeof (m as PatcherResult).sent === 'number' ? (m as PatcherResult) : undefined),
      job.seconds * 1000 + 30_000,
    )
  } finally {
    await c.stop()
  }
}
