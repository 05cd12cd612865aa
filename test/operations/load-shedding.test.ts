import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BACKENDS, createKey, runProcess, seed, useResources } from '../support/helpers.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const FLOOD_PROCESSES = 2
const FLOOD_MS = 4000
/** CONNECTIONS concurrent GET loops on URL for MS milliseconds; prints the statuses and a few 503s. */
const FLOOD_SCRIPT = `
const { URL: url, TOKEN, MS, CONNECTIONS } = process.env
const until = Date.now() + Number(MS)
const statuses = {}
const shed = []
const headers = { authorization: 'Bearer ' + TOKEN }
await Promise.all(Array.from({ length: Number(CONNECTIONS) }, async () => {
  while (Date.now() < until) {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(10000) })
    const text = await res.text()
    statuses[res.status] = (statuses[res.status] ?? 0) + 1
    if (res.status === 503 && shed.length < 3) shed.push({ body: JSON.parse(text), retryAfter: res.headers.get('retry-after') })
  }
}))
console.log(JSON.stringify({ statuses, shed }))
`

/**
 * A change stream asked for during the flood: `opened` (then closed at once), or its whole answer, as
 * status, the Content-Type and the body.
 */
async function probeStream(baseUrl: string, token: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/inventory/changes/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(10_000),
  })
  // A stream that opened is chunked; an answer that ends says how long it is.
  if (res.status === 200 && !res.headers.has('content-length')) {
    await res.body?.cancel()
    return 'opened'
  }
  return `${res.status} ${res.headers.get('content-type')} ${JSON.stringify(await res.text())}`
}

describe('load shedding', () => {
  const resources = useResources()

  test('When the event loop is saturated, then new requests get 503 with Retry-After and an Error (a change stream: told to reconnect), logged at warn without a stack, the probes still answer, and service resumes once the load goes', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'flood')
    await seed(
      database.url,
      Array.from({ length: 100 }, (_, i) => ({ petId: i + 1, quantity: i, status: 'available' })),
    )
    // Shedding on event-loop utilization over a tenth: a flood of requests gets it there on purpose, even
    // when other suites share the cores (an idle server stays far below it, so service resumes after).
    const server = await resources.server(database.url, {
      LOAD_SHED_EVENT_LOOP_UTILIZATION: '0.1',
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
    })
    const url = `${server.baseUrl}/v1/inventory`
    const headers = { authorization: `Bearer ${token}` }
    // The flood comes from other processes, so this one stays free to probe.
    const floods = Array.from({ length: FLOOD_PROCESSES }, () =>
      runProcess(process.execPath, ['--input-type=module', '-e', FLOOD_SCRIPT], {
        env: { PATH: process.env.PATH ?? '', URL: url, TOKEN: token, MS: String(FLOOD_MS), CONNECTIONS: '32' },
      }),
    )
    const probes: number[] = []
    const streams: string[] = []
    const probeUntil = Date.now() + FLOOD_MS - 500
    await sleep(500)
    while (Date.now() < probeUntil) {
      probes.push((await fetch(`${server.baseUrl}/healthz`)).status)
      probes.push((await fetch(`${server.baseUrl}/readyz`)).status)
      streams.push(await probeStream(server.baseUrl, token))
      await sleep(100)
    }
    const reports = (await Promise.all(floods)).map((r) => {
      assert.equal(r.code, 0, r.stderr)
      return JSON.parse(r.stdout) as { statuses: Record<string, number>; shed: { body: unknown; retryAfter: string | null }[] }
    })
    const seen = new Map<number, number>()
    for (const r of reports)
      for (const [status, n] of Object.entries(r.statuses)) seen.set(Number(status), (seen.get(Number(status)) ?? 0) + n)
    const shed = reports.flatMap((r) => r.shed)

    assert.deepEqual([...seen.keys()].sort(), [200, 503], `statuses seen: ${JSON.stringify([...seen])}`)
    assert.ok(seen.get(503)! > 0 && seen.get(200)! > 0)
    for (const s of shed) {
      assert.deepEqual(s.body, { code: 'service_unavailable', message: 'The service is overloaded; retry shortly', status: 503 })
      assert.equal(s.retryAfter, '1')
    }
    assert.ok(probes.length > 5 && probes.every((s) => s === 200), `probes during the flood: ${probes}`)
    // An EventSource gives up for good on a 503: a stream is answered a 200 that says when to come back, and ends.
    const reconnect = /^200 text\/event-stream "(: The service is overloaded; retry shortly\\nretry: (\d+)\\n\\n)"$/
    assert.ok(
      streams.some((s) => reconnect.test(s)) && streams.every((s) => s === 'opened' || reconnect.test(s)),
      `streams during the flood: ${streams.join(' | ')}`,
    )
    for (const s of streams.filter((s) => reconnect.test(s))) {
      const retry = Number(reconnect.exec(s)![2])
      assert.ok(retry >= 2000 && retry <= 5000, s)
    }

    // The load measurements are sampled every second: two samples after the flood, it serves again.
    await sleep(2500)
    const after = await fetch(url, { headers })
    assert.equal(after.status, 200)

    // Each refusal logged once, at warn, without a stack; nothing at error. (Read after the pause above,
    // so every line the flood caused has come through the pipe.)
    const logs = server.logs()
    assert.deepEqual(
      logs.filter((l) => Number(l.level) >= 50),
      [],
    )
    const refusals = logs.filter((l) => l.msg === 'request refused')
    assert.equal(refusals.length, seen.get(503)! + streams.filter((s) => s !== 'opened').length)
    assert.ok(refusals.every((l) => l.level === 40 && l.refusal === 'overloaded' && !('err' in l)))
  })

  test('When a process has just started, then it serves its first requests although its start kept the event loop busy', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'fresh')
    // A threshold that any start exceeds: the samples of the first second measure the start itself.
    const server = await resources.server(database.url, {
      LOAD_SHED_EVENT_LOOP_UTILIZATION: '0.001',
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
    })
    const url = `${server.baseUrl}/v1/inventory`
    const statuses: number[] = []
    // Past the first sample (a second after the plugin started measuring), within the grace.
    for (const until = Date.now() + 1500; Date.now() < until; await sleep(100)) {
      statuses.push((await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status)
    }
    assert.ok(statuses.length >= 10 && statuses.every((s) => s === 200), `statuses: ${statuses}`)
    // Once the grace is over, the same threshold sheds.
    await sleep(1500)
    const later: number[] = []
    for (let i = 0; i < 10; i++) later.push((await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status)
    assert.ok(later.includes(503), `statuses after the grace: ${later}`)
  })
})
