// `node dist/bench/wal-checkpoint.js`: PATCH latency on SQLite under sustained writes, the ledger
// growing, where a WAL checkpoint on the request path shows: the worst answer and the 99.9th
// percentile (wrk, bench/tail-latency.lua: 16 connections, each pausing TAIL_DELAY_MS between an
// answer and its next PATCH). With BENCH_BASELINE=<build>/dist/src/cli.js it measures that build too,
// the two alternating, each on a database of its own. TAIL_ROUNDS (3) rounds of TAIL_SECONDS (20).
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sqliteBackend } from './backends.js'
import { envNumber, SMALL_INVENTORY } from './config.js'
import { killAllChildren, track } from './procs.js'
import { makeDataset, type Running, serviceEnv, startService } from './targets.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const SCRIPT = join(ROOT, 'bench/tail-latency.lua')
const ROUNDS = Math.floor(envNumber('TAIL_ROUNDS', 3, 1))
const SECONDS = Math.floor(envNumber('TAIL_SECONDS', 20, 1))
const builds = [
  { name: 'this build', cli: process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist/src/cli.js') },
  ...(process.env.BENCH_BASELINE ? [{ name: 'baseline', cli: resolve(process.env.BENCH_BASELINE) }] : []),
]

function wrk(running: Running): Promise<string> {
  const args = ['-t1', '-c16', `-d${SECONDS}s`, '--timeout', '10s', '-s', SCRIPT]
  args.push('-H', `Authorization: Bearer ${running.token}`, `${running.server.baseUrl}/v1/inventory/1`)
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const untrack = track(child)
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
    })
    child.stderr.on('data', (c: Buffer) => {
      out += c.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), (SECONDS + 30) * 1000)
    child.once('close', (code) => {
      clearTimeout(timer)
      untrack()
      const line = /tail: .*/.exec(out)?.[0]
      if (code === 0 && line !== undefined && !/Non-2xx|Socket errors/.test(out)) resolve(line)
      else reject(new Error(`wrk exited ${String(code)}:\n${out}`))
    })
  })
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-wal-'))
  const dataset = await makeDataset(dir, SMALL_INVENTORY)
  const running: Running[] = []
  try {
    for (const build of builds) running.push(await startService(build.cli, sqliteBackend, dataset, build.name, serviceEnv))
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => builds.length - 1 - i)
      for (const i of order) {
        const [requests, p50, p99, p999, max] = [...(await wrk(running[i]!)).matchAll(/ (\d+)(?= |$)/g)].map((m) => Number(m[1])) as [
          number,
          number,
          number,
          number,
          number,
        ]
        const ms = (us: number): string => (us / 1000).toFixed(2)
        console.log(
          `round ${round + 1}, ${builds[i]!.name}: ${requests} PATCHes; p50 ${ms(p50)} ms, p99 ${ms(p99)}, p99.9 ${ms(p999)}, max ${ms(max)}`,
        )
      }
    }
  } finally {
    for (const r of running) await r.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((error: unknown) => {
  console.error(error)
  killAllChildren()
  process.exitCode = 1
})
