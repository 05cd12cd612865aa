// Fixed-rate PATCH generator for the webhook scenario, run as its own process (forked, with an IPC
// channel): PATCH /v1/inventory/{petId} with {"quantity": n} at `rate` a second for `seconds`, the pet
// rotating like bench/patch.lua, over keep-alive connections (at most MAX_SOCKETS, so at most that many
// in flight: when the server is slower, the rate achieved falls short and the report says so).
// Bounded: it stops sending at `seconds` and waits at most DRAIN_MS for the answers in flight.
import { Agent, request } from 'node:http'

export interface PatcherRequest {
  baseUrl: string
  token: string
  rate: number
  seconds: number
  firstPetId: number
  petCount: number
}
export interface PatcherResult {
  sent: number
  ok: number
  failed: number
  firstFailure?: string
  /** Epoch ms of the first request sent and of the last answer. */
  startedAtMs: number
  endedAtMs: number
  /** Answers per second over the sending window. */
  achievedRate: number
  p50Ms: number
  p99Ms: number
}

const MAX_SOCKETS = 32
const TICK_MS = 2
const DRAIN_MS = 10_000
const now = (): number => performance.timeOrigin + performance.now()

function run(job: PatcherRequest): Promise<PatcherResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS })
  const url = new URL(job.baseUrl)
  const latencies: number[] = []
  let sent = 0
  let ok = 0
  let failed = 0
  let inFlight = 0
  let firstFailure: string | undefined
  let lastAnswer = 0
  const fail = (why: string): void => {
    failed++
    firstFailure ??= why
  }
  const one = (): void => {
    const petId = job.firstPetId + (sent % job.petCount)
    sent++
    const body = `{"quantity":${(sent * 7919) % 2147483648}}`
    const started = performance.now()
    inFlight++
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `/v1/inventory/${petId}`,
        method: 'PATCH',
        agent,
        headers: { authorization: `Bearer ${job.token}`, 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        res.resume()
        res.once('end', () => {
          inFlight--
          lastAnswer = now()
          latencies.push(performance.now() - started)
          if (res.statusCode === 200) ok++
          else fail(`HTTP ${String(res.statusCode)}`)
        })
      },
    )
    req.once('error', (error) => {
      inFlight--
      fail(error.message)
    })
    req.end(body)
  }
  return new Promise((resolve) => {
    const startedAtMs = now()
    const t0 = performance.now()
    const tick = setInterval(() => {
      const elapsed = performance.now() - t0
      if (elapsed >= job.seconds * 1000) {
        clearInterval(tick)
        const deadline = performance.now() + DRAIN_MS
        const wait = setInterval(() => {
          if (inFlight > 0 && performance.now() < deadline) return
          clearInterval(wait)
          agent.destroy()
          latencies.sort((a, b) => a - b)
          const at = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? Number.NaN
          resolve({
            sent,
            ok,
            failed: failed + inFlight,
            ...(firstFailure === undefined ? {} : { firstFailure }),
            startedAtMs,
            endedAtMs: lastAnswer,
            achievedRate: ok / job.seconds,
            p50Ms: at(0.5),
            p99Ms: at(0.99),
          })
        }, 10)
        return
      }
      const due = Math.floor((elapsed / 1000) * job.rate)
      while (sent < due && inFlight < MAX_SOCKETS) one()
    }, TICK_MS)
  })
}

process.once('message', (job: PatcherRequest) => {
  void run(job).then((result) => process.send?.(result, () => process.exit(0)))
})
process.once('SIGTERM', () => process.exit(0))
