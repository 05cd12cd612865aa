import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, runCliInProcess, seed, useResources, within, type TestServer } from '../support/helpers.js'

const TOKEN = /psk_[A-Za-z0-9_-]{43}/
const tokensIn = (text: string) => text.match(new RegExp(TOKEN.source, 'g')) ?? []

/** Resolves once the server has logged the request with this id, so everything before it is in. */
const logged = (server: TestServer, reqId: string) => server.waitForLog((l) => l.reqId === reqId && l.msg === 'request')

for (const backend of BACKENDS) {
  describe(`process lifecycle (${backend.name})`, () => {
    const resources = useResources()
    const fresh = () => resources.database(backend)
    const start = (url: string, env: Record<string, string> = {}) => resources.server(url, env)

    test('When the database has no key, then the first start prints exactly one working key to stderr, and a second start prints none', async () => {
      const db = await fresh()
      const first = await start(db.url)
      const printed = tokensIn(await first.waitForStderr(TOKEN))
      assert.equal(printed.length, 1, first.stderr)
      const token = printed[0]!
      const headers = { 'x-request-id': 'first-key' }
      assert.equal((await first.request('GET', '/v1/inventory', { token, headers })).status, 200)
      await logged(first, 'first-key')
      assert.ok(!first.stdoutLines.join('\n').includes(token), 'the first key must not reach stdout')
      assert.equal(await first.stop(), 0)

      const second = await start(db.url)
      const res = await second.request('GET', '/v1/inventory', { token, headers })
      assert.equal(res.status, 200, 'the first key still works')
      await logged(second, 'first-key')
      assert.doesNotMatch(second.stderr, TOKEN)
      assert.ok(!second.stdoutLines.join('\n').includes(token))
      const list = await runCliInProcess(['keys', 'list'], second.env)
      assert.equal(list.code, 0, list.stderr)
      assert.equal(list.stdout.trim().split('\n').length, 2, `one key besides the header:\n${list.stdout}`)
      assert.equal(await second.stop(), 0)
    })

    test('When requests carry valid and invalid keys, then no token and no Authorization value reaches the logs', async () => {
      const db = await fresh()
      const server = await start(db.url, { LOG_LEVEL: 'trace' })
      const firstKey = tokensIn(await server.waitForStderr(TOKEN))[0]!
      const created = await createKey(server, 'logger')
      const unknown = `psk_${randomBytes(32).toString('base64url')}`
      const secrets = [firstKey, created, unknown]
      const headers = [
        `Bearer ${firstKey}`,
        `bearer ${created}`,
        `Bearer ${unknown}`,
        `Bearer ${created.slice(0, -1)}`,
        'Bearer not-a-key',
        'Basic dXNlcjpwYXNz',
      ]
      let sent = 0
      for (const authorization of headers) {
        for (const [method, path, body] of [
          ['GET', '/v1/inventory', undefined],
          ['PATCH', '/v1/inventory/1', { quantity: 1 }],
        ] as const) {
          await server.request(method, path, { headers: { authorization }, body })
          sent++
        }
      }
      // Every request is logged, so the check below is meaningful.
      await server.waitForLog(() => server.logs().filter((l) => l.msg === 'request').length >= sent)
      assert.equal(await server.stop(), 0)
      const stdout = server.stdoutLines.join('\n')
      for (const secret of secrets) {
        assert.ok(!stdout.includes(secret), 'a token is in the logs')
        assert.ok(!stdout.includes(secret.slice(4, 20)), 'part of a token is in the logs')
      }
      assert.doesNotMatch(stdout, /bearer/i)
      assert.doesNotMatch(stdout, /dXNlcjpwYXNz/)
      assert.doesNotMatch(stdout, /not-a-key/)
    })

    // A PATCH accepted before SIGTERM but answered after it must not leave an idle keep-alive
    // connection holding the server open until close-with-grace's timer (exit 1).
    test('When SIGTERM arrives while PATCHes are in flight, then each answered one is 200 or 503, the process exits 0 within 10 s, and exactly the 200s are durable', async (t) => {
      const db = await fresh()
      const server = await start(db.url)
      const token = await createKey(server, 'shutdown')
      const pets = Array.from({ length: 50 }, (_, i) => ({ petId: i + 1, quantity: 0, status: 'available' }))
      await seed(server, pets)

      let flowing!: () => void
      const firstAnswer = new Promise<void>((resolve) => (flowing = resolve))
      // 50 concurrent clients; each sets its own pet to 1, 2, 3, ... and stops at its first answer that is not a 200.
      const client = async (petId: number) => {
        for (let quantity = 1; quantity <= 1000; quantity++) {
          const res = await server.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity } }).catch(() => undefined)
          if (res?.status !== 200) return { petId, ok: quantity - 1, last: res?.status ?? 'no answer', body: res?.body }
          flowing()
        }
        return { petId, ok: 1000, last: 'still running', body: undefined }
      }
      const clients = pets.map((p) => client(p.petId))
      await Promise.race([firstAnswer, Promise.all(clients)])
      const signalledAt = Date.now()
      server.child.kill('SIGTERM')
      const exit = within(server.waitForExit(), 15_000, 'exit after SIGTERM').then((code) => ({
        code,
        ms: Date.now() - signalledAt,
      }))
      const results = await Promise.all(clients)
      const { code, ms } = await exit

      for (const r of results) {
        assert.ok(r.last === 503 || r.last === 'no answer', `pet ${r.petId} ended with ${r.last}`)
        if (r.last === 503) assert.equal(r.body?.code, 'service_unavailable')
      }
      const oks = results.reduce((sum, r) => sum + r.ok, 0)
      assert.ok(oks > 0, 'some PATCHes were answered before the signal')

      const restarted = await start(db.url)
      const list = await restarted.request('GET', '/v1/inventory', { token })
      assert.equal(list.status, 200)
      const stored = new Map((list.body as { petId: bigint; quantity: number }[]).map((i) => [Number(i.petId), i.quantity]))
      for (const r of results) assert.equal(stored.get(r.petId), r.ok, `pet ${r.petId}: the 200s and the stored quantity differ`)
      assert.equal(
        [...stored.values()].reduce((a, b) => a + b, 0),
        oks,
      )
      assert.equal(await restarted.stop(), 0)

      const count = (last: unknown) => results.filter((r) => r.last === last).length
      t.diagnostic(`200s: ${oks}, ended by 503: ${count(503)}, by no answer: ${count('no answer')}, exit ${code} after ${ms} ms`)
      assert.equal(code, 0, `exit code after SIGTERM (stderr: ${server.stderr.slice(-300)})`)
      assert.ok(ms < 10_000, `exited ${ms} ms after SIGTERM`)
    })

    test('When SIGINT arrives, then the process exits 0 and a PATCH answered before it is durable', async () => {
      const db = await fresh()
      const server = await start(db.url)
      const token = await createKey(server, 'interrupt')
      await seed(server, [{ petId: 7, quantity: 1, status: 'pending' }])
      const res = await server.request('PATCH', '/v1/inventory/7', { token, body: { quantity: 77 } })
      assert.equal(res.status, 200)
      server.child.kill('SIGINT')
      assert.equal(await within(server.waitForExit(), 10_000, 'exit after SIGINT'), 0)
      const restarted = await start(db.url)
      const list = await restarted.request('GET', '/v1/inventory', { token })
      assert.deepEqual(list.body, [{ petId: 7n, quantity: 77, status: 'pending' }])
      assert.equal(await restarted.stop(), 0)
    })
  })
}
