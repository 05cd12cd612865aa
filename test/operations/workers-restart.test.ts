import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { assertInvariants, BACKENDS, useSuite, type LogLine, type TestServer } from '../support/helpers.js'

interface Sent {
  id: string
  /** The load's phase when the request was sent, and when it was answered (or failed). */
  sentIn: number
  doneIn?: number
  status?: number
  /** The body of an answer other than 200, for the failure message. */
  body?: string
  error?: string
}

/**
 * Steady traffic: GET /v1/inventory every few milliseconds, each on a fresh connection so the
 * primary's round-robin hands them to every worker in turn, and without waiting for the previous
 * answer, so a request that never returns does not stall the load. Bounded by count and time.
 *
 * A connection the primary hands to a worker just as it dies is never closed (node:cluster keeps
 * its copy until the worker acknowledges it), so its request hangs: stop() aborts the ones still
 * open from before the last replacement, and they count as in flight at a kill.
 */
function startLoad(server: TestServer, token: string, { everyMs = 5, max = 5_000, ms = 60_000 } = {}) {
  const sent: Sent[] = []
  const open = new Map<Sent, { abort: AbortController; done: Promise<void> }>()
  const deadline = Date.now() + ms
  let phase = 0
  let stopped = false
  const send = (request: Sent) => {
    const abort = new AbortController()
    const done = fetch(`${server.baseUrl}/v1/inventory`, {
      headers: { authorization: `Bearer ${token}`, connection: 'close', 'x-request-id': request.id },
      signal: abort.signal,
    })
      .then(async (res) => {
        const body = await res.text()
        request.status = res.status
        if (res.status !== 200) request.body = body
      })
      .catch((error: Error) => {
        request.error = `${error.name}: ${String(error.cause ?? error.message)}`
      })
      .finally(() => {
        request.doneIn = phase
        open.delete(request)
      })
    open.set(request, { abort, done })
  }
  const loop = (async () => {
    while (!stopped && sent.length < max && Date.now() < deadline) {
      const request: Sent = { id: `load-${sent.length}`, sentIn: phase }
      sent.push(request)
      send(request)
      await sleep(everyMs)
    }
  })()
  return {
    sent,
    /** Phases: even while every worker is up, odd from a kill until its replacement is logged. */
    nextPhase: () => ++phase,
    stop: async () => {
      stopped = true
      await loop
      for (const [request, { abort }] of open) if (request.sentIn < phase) abort.abort()
      await Promise.all([...open.values()].map((o) => o.done))
      return sent
    },
  }
}

const isRequest = (l: LogLine) => l.msg === 'request' && String(l.reqId).startsWith('load-')

for (const backend of BACKENDS) {
  describe(`serve --workers restart (${backend.name})`, () => {
    const suite = useSuite(backend, {
      env: { WORKERS: '2' },
      seed: [1, 2, 3].map((petId) => ({ petId, quantity: petId, status: 'available' })),
    })

    test('When a worker is killed under load, and its young replacement too, then each is replaced after a growing delay and requests keep being answered', {
      timeout: 120_000,
    }, async () => {
      const { server, token } = suite
      const primaryPid = server.child.pid!
      const load = startLoad(server, token)
      /** The pids that have answered a load request, in the order they first did. */
      const servingPids = () => [
        ...new Set(
          server
            .logs()
            .filter(isRequest)
            .map((l) => Number(l.pid)),
        ),
      ]

      // Both workers answer the load.
      await server.waitForLog(() => servingPids().length >= 2, 15_000)
      assert.ok(!servingPids().includes(primaryPid))

      /**
       * Kills `victim` and returns the primary's death and replacement lines, and the replacement's pid:
       * once it answers, or with `serving` false as soon as it is forked (so that killing it next is a
       * young death however slowly a busy machine starts it).
       */
      const killAndAwaitReplacement = async (victim: number, serving = true) => {
        load.nextPhase()
        process.kill(victim, 'SIGKILL')
        const death = await server.waitForLog(
          (l) => l.role === 'primary' && l.msg === 'worker exited unexpectedly' && l.workerPid === victim,
          10_000,
        )
        const replaced = await server.waitForLog(
          (l) => l.role === 'primary' && l.msg === 'worker replaced' && l.replacedPid === victim,
          10_000,
        )
        const phase = load.nextPhase()
        const newPid = Number(replaced.workerPid)
        assert.ok(newPid > 0 && newPid !== victim && newPid !== primaryPid)
        // The replacement serves requests; or, not waited for, the other worker gets a few first.
        if (serving) await server.waitForLog((l) => isRequest(l) && l.pid === newPid, 15_000)
        else for (let i = 0; i < 1000 && load.sent.filter((r) => r.sentIn === phase).length < 5; i++) await sleep(5)
        return { death, replaced, newPid }
      }

      const first = await killAndAwaitReplacement(servingPids()[0]!, false)
      assert.equal(first.death.signal, 'SIGKILL')
      assert.equal(typeof first.death.uptimeMs, 'number')
      assert.equal(first.replaced.delayMs, first.death.restartInMs)
      assert.equal(first.replaced.delayMs, 100)

      // Killed again at once, the replacement is a young death: replaced too, after a longer delay.
      const second = await killAndAwaitReplacement(first.newPid)
      assert.ok((second.death.uptimeMs as number) < 10_000)
      assert.ok((second.replaced.delayMs as number) > (first.replaced.delayMs as number))
      assert.equal(second.replaced.delayMs, 200)

      // A few more requests after the second replacement, then stop the load.
      const answeredAfter = () => load.sent.filter((r) => r.sentIn === 4 && r.status === 200).length
      await server.waitForLog(() => answeredAfter() >= 10, 15_000)
      const sent = await load.stop()

      // Only a request in flight when a worker was killed may fail, and only with a network error;
      // every other request, and every one sent after the last replacement was logged, is a 200.
      for (const r of sent) {
        if (r.status === 200) continue
        // Sent between a kill and its replacement (an odd phase), or sent before a kill and done after it.
        const inFlightAtKill = r.status === undefined && r.sentIn < 4 && (r.sentIn % 2 === 1 || r.doneIn! > r.sentIn)
        const logged = server.logs().filter((l) => l.reqId === r.id)
        assert.ok(
          inFlightAtKill,
          `${r.id} (sent in phase ${r.sentIn}, done in ${r.doneIn}): ${r.status ?? r.error} ${r.body ?? ''} ${JSON.stringify(logged)}`,
        )
      }
      // A dead worker is handed at most one connection before the primary notices (see startLoad).
      const hung = sent.filter((r) => r.error?.startsWith('AbortError'))
      assert.ok(hung.length <= 2, `${hung.length} requests never answered: ${hung.map((r) => r.id)}`)
      for (const phase of [2, 4]) {
        const after = sent.filter((r) => r.sentIn === phase)
        assert.ok(after.length > 0, `no request sent in phase ${phase}`)
      }

      await assertInvariants(suite.database.url, 'after two workers were killed under load')
      assert.equal(await server.stop(), 0)
      assert.ok(server.logs().some((l) => l.role === 'primary' && l.msg === 'all workers stopped'))
    })
  })
}
