import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { assertInvariants, BACKENDS, createKey, runProcess, seed, useResources, within } from '../support/helpers.js'

/**
 * A cluster whose one worker closes its channel and serves on, and a primary that asks it to stop
 * only once the channel is closed: what a primary sees when a signal reaches it late, after a worker
 * that had the same signal has begun to exit.
 */
const CLOSED_CHANNEL_CLUSTER = `
import cluster from 'node:cluster'
import { askToStop } from ${JSON.stringify(new URL('../../src/cluster.js', import.meta.url).href)}
if (cluster.isPrimary) {
  const worker = cluster.fork()
  worker.on('disconnect', () => askToStop(worker, 'SIGTERM', true))
  worker.on('exit', (code, signal) => console.log(JSON.stringify({ code, signal })))
} else {
  process.on('SIGTERM', () => process.exit(7))
  // cluster's own disconnect: a bare process.disconnect() makes a worker exit at once.
  cluster.worker.disconnect()
  setTimeout(() => process.exit(3), 10_000)
}
`

/** Sends a PATCH whose body arrives only when `finish` is called; resolves with the status line. */
function slowPatch(port: number, token: string, petId: number, quantity: number) {
  const body = JSON.stringify({ quantity })
  const socket = connect(port, '127.0.0.1')
  let response = ''
  socket.on('data', (d) => (response += d))
  const done = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(response.split('\r\n')[0] ?? ''))
    socket.on('error', () => resolve(response.split('\r\n')[0] ?? ''))
  })
  socket.write(
    `PATCH /v1/inventory/${petId} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 3)}`,
  )
  return { finish: () => socket.write(body.slice(3)), done }
}

for (const backend of BACKENDS) {
  describe(`serve --workers shutdown (${backend.name})`, () => {
    const resources = useResources()

    test('When Ctrl-C reaches the whole process group, then requests in flight in every worker finish and the service exits 0', async () => {
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'group')
      await seed(
        database.url,
        [1, 2, 3, 4].map((petId) => ({ petId, quantity: 0, status: 'available' })),
      )
      // Its own process group, like a service started from a terminal.
      const server = await resources.server(database.url, { WORKERS: '2' }, { detached: true })
      const count = (msg: string) => server.logs().filter((l) => l.msg === msg).length
      await server.waitForLog(() => count(`Server listening at ${server.baseUrl}`) === 2)

      const inFlight = [1, 2, 3, 4].map((petId) => slowPatch(server.port, token, petId, petId * 10))
      // Give the primary time to hand the four connections to the workers.
      await new Promise((r) => setTimeout(r, 300))
      process.kill(-server.child.pid!, 'SIGINT')
      // Both workers have begun their shutdown before the bodies arrive.
      await server.waitForLog(() => count('shutting down') === 2)
      for (const request of inFlight) request.finish()
      const statusLines = await Promise.all(inFlight.map((r) => r.done))
      assert.deepEqual(statusLines, Array(4).fill('HTTP/1.1 200 OK'))
      assert.equal(await server.waitForExit(), 0, server.stderr.slice(-1000))
      assert.doesNotMatch(server.stderr, /second SIG/)
    })

    test('When Ctrl-C reaches the primary only after its workers have exited, then it exits 0', async () => {
      const database = await resources.database(backend)
      const server = await resources.server(database.url, { WORKERS: '2' }, { detached: true })
      const listening = () => server.logs().filter((l) => l.msg === `Server listening at ${server.baseUrl}`)
      await server.waitForLog(() => listening().length === 2)
      const workers = listening().map((l) => Number(l.pid))
      // A primary the machine does not schedule: the signal waits for it while the workers act on theirs.
      process.kill(server.child.pid!, 'SIGSTOP')
      process.kill(-server.child.pid!, 'SIGINT')
      // Exited: a zombie, since its parent is stopped and cannot reap it (Linux's /proc says so).
      const gone = (pid: number) => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true
        } catch {
          return true
        }
      }
      for (let waited = 0; !workers.every(gone); waited += 50) {
        assert.ok(waited < 15_000, 'the workers exit on Ctrl-C')
        await new Promise((r) => setTimeout(r, 50))
      }
      process.kill(server.child.pid!, 'SIGCONT')
      assert.equal(await within(server.waitForExit(), 15_000, 'the exit after SIGCONT'), 0, server.stderr.slice(-1000))
    })

    test('When SIGTERM comes while a replacement worker is still starting, then that worker stops too and the service exits 0', async () => {
      const database = await resources.database(backend)
      const server = await resources.server(database.url, { WORKERS: '2' })
      const listening = () => server.logs().filter((l) => l.msg === `Server listening at ${server.baseUrl}`)
      await server.waitForLog(() => listening().length === 2)
      const victim = Number(listening()[0]!.pid)
      process.kill(victim, 'SIGKILL')
      const replaced = await server.waitForLog((l) => l.msg === 'worker replaced' && l.replacedPid === victim)
      // At once: the replacement is still loading, before it listens for a shutdown message.
      assert.equal(await within(server.stop('SIGTERM'), 15_000, 'the exit after SIGTERM'), 0)
      const replacement = Number(replaced.workerPid)
      assert.throws(() => process.kill(replacement, 0), { code: 'ESRCH' }, 'the replacement worker is gone')
      await assertInvariants(database.url, 'after a worker was killed')
    })
  })
}

describe('a --workers primary asking its workers to stop', () => {
  test('When a worker’s channel has closed before the primary asks it to stop, then it gets the signal instead and the primary does not crash', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'petstore-cluster-')), 'closed-channel.mjs')
    writeFileSync(script, CLOSED_CHANNEL_CLUSTER)
    const { code, stdout, stderr } = await within(runProcess(process.execPath, [script], { env: {} }), 15_000, 'the cluster’s exit')
    assert.equal(code, 0, stderr)
    assert.deepEqual(JSON.parse(stdout), { code: 7, signal: null }, 'the worker stopped on SIGTERM')
  })
})
