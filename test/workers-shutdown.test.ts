import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { after, describe, test } from 'node:test'
import { BACKENDS, CLI, TestServer, createKey, freePort, seed, type TestDatabase } from './helpers.js'

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
    const databases: TestDatabase[] = []
    after(async () => {
      for (const db of databases) await db.drop()
    })

    test('When Ctrl-C reaches the whole process group, then requests in flight in every worker finish and the service exits 0', async () => {
      const database = await backend.create()
      databases.push(database)
      const port = await freePort()
      const env = { DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', WORKERS: '2' }
      // Its own process group, like a service started from a terminal.
      const child = spawn(process.execPath, [CLI, 'serve'], { env: { PATH: process.env.PATH, ...env }, detached: true })
      const server = new TestServer(child, `http://127.0.0.1:${port}`, env)
      for (let i = 0; ; i++) {
        const ok = await fetch(`${server.baseUrl}/healthz`).then((r) => r.ok, () => false)
        if (ok) break
        assert.ok(i < 300, 'the service started')
        await new Promise((r) => setTimeout(r, 50))
      }
      const token = await createKey(server, 'group')
      await seed(server, [1, 2, 3, 4].map((petId) => ({ petId, quantity: 0, status: 'available' })))

      const inFlight = [1, 2, 3, 4].map((petId) => slowPatch(port, token, petId, petId * 10))
      await new Promise((r) => setTimeout(r, 300))
      process.kill(-child.pid!, 'SIGINT')
      await new Promise((r) => setTimeout(r, 300))
      for (const request of inFlight) request.finish()
      const statusLines = await Promise.all(inFlight.map((r) => r.done))
      assert.deepEqual(statusLines, Array(4).fill('HTTP/1.1 200 OK'))
      assert.equal(await server.waitForExit(), 0)
      assert.doesNotMatch(server.stderr, /second SIG/)
    })
  })
}
