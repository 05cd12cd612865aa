import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, seed, useResources, within } from '../support/helpers.js'

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
      assert.equal(await server.waitForExit(), 0)
      assert.doesNotMatch(server.stderr, /second SIG/)
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
    })
  })
}
