// Issue 46: a batch of 1,000 changes is all or nothing even when its server dies. Real `petstore serve`
// processes on each backend, 1,000 pets; two loops of the test send batches of 1,000 changes (sets and
// deltas mixed, on every pet) while the server is killed with SIGKILL at a random moment within its
// first batches, five times over, some of the kills just after a batch was sent whole and before its
// answer. After each kill `petstore check` passes; at the end the ledger holds every batch whole (1,000
// contiguous rows under one batchId, in the batch's order, each row what its change made of the row
// before) or not at all, every batch answered 200 is there, and every entry is what the applied batches
// make of the import, replayed in the ledger's order.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { describe, test } from 'node:test'
import { assertInvariants, BACKENDS, createKey, parseExact, seed, type TestServer, useResources } from '../support/helpers.js'
import { type InventoryChange, random, readAllChanges } from '../support/ledger-client.js'

const PETS = 1000
const START = 1000
const ROUNDS = 5
/** Batches sent at once: two loops, so that a kill often finds one in flight while another commits. */
const SENDERS = 2
/** What triggers each round's kill: a time after the round's first send, or a batch just sent whole. */
const KILLS: ('timer' | 'in-flight')[] = ['in-flight', 'timer', 'in-flight', 'in-flight', 'timer']

type Change =
  | { petId: number; quantity: number; reason: 'count'; note: string }
  | { petId: number; delta: number; reason: 'arrival' | 'damage'; note: string }

interface Sent {
  k: number
  round: number
  changes: Change[]
  /** The whole body was handed to the socket. */
  written: boolean
  /** Sent whole and not yet answered when the server was killed. */
  inFlightAtKill: boolean
  status?: number
  answer?: { batchId: string; entries: { petId: bigint; quantity: number; status: string }[] }
  error?: string
}

/**
 * Batch k: a change on every pet, in petId order for an even k and in reverse for an odd one; every
 * tenth a set (a count), the others deltas of +1 or -1. The quantities stay far from 0 and the maximum.
 */
function changesOf(k: number): Change[] {
  return Array.from({ length: PETS }, (_, i) => {
    const petId = k % 2 === 0 ? i + 1 : PETS - i
    const note = `batch ${k}`
    if ((i + k) % 10 === 0) return { petId, quantity: 500 + (k % 100), reason: 'count', note }
    return i % 4 === 3 ? { petId, delta: -1, reason: 'damage', note } : { petId, delta: 1, reason: 'arrival', note }
  })
}

/**
 * POST /v1/inventory/batch on a connection of its own, with X-Request-Id `kill-<k>` (so its ledger rows
 * name it); `onWritten` runs once the whole body is handed to the socket. Resolves with the answer, or
 * rejects with the network error.
 */
function post(server: TestServer, token: string, sent: Sent, onWritten: () => void): Promise<{ status: number; text: string }> {
  const body = JSON.stringify({ changes: sent.changes })
  const { hostname, port } = new URL(server.baseUrl)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method: 'POST',
        path: '/v1/inventory/batch',
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-request-id': `kill-${sent.k}`,
          connection: 'close',
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d) => (text += d))
        res.on('end', () => resolve({ status: res.statusCode!, text }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.on('finish', onWritten)
    req.end(body)
  })
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error)

for (const backend of BACKENDS) {
  describe(`batches under kill -9 (${backend.name}, real processes)`, () => {
    const resources = useResources()

    test('When the server is killed with SIGKILL at random moments while batches of 1,000 changes arrive, then after each restart every batch is in the ledger whole or not at all, every batch answered 200 is there, the entries are the applied batches replayed, and check passes', {
      timeout: 90_000,
    }, async (t) => {
      const started = performance.now()
      const runSeed = Number(process.env.BATCH_KILL_SEED ?? Math.floor(Math.random() * 2 ** 32))
      const rand = random(runSeed)
      t.diagnostic(`seed ${runSeed} (BATCH_KILL_SEED=${runSeed} repeats the kills' delays)`)
      const database = await resources.database(backend)
      const token = await createKey(database.url, 'batches')
      await seed(
        database.url,
        Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: START, status: 'available' })),
      )

      const all: Sent[] = []
      let next = 0
      const latencies: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const server = await resources.server(database.url)
        const pending = new Set<Sent>()
        let killed = false
        const kill = () => {
          if (killed) return
          killed = true
          for (const s of pending) if (s.written) s.inFlightAtKill = true
          server.child.kill('SIGKILL')
        }
        // An in-flight kill: once the target-th batch of the round is written whole, after a delay
        // shorter than a batch takes to be answered. A timer kill: some time after the first send.
        const kind = KILLS[round]!
        const target = 2 + Math.floor(rand() * 6)
        const delayMs = kind === 'in-flight' ? Math.floor(rand() * 15) : 100 + Math.floor(rand() * 600)
        let sentInRound = 0
        const onWritten = (s: Sent, ordinal: number) => {
          s.written = true
          if (kind === 'in-flight' && ordinal === target) setTimeout(kill, delayMs)
        }
        if (kind === 'timer') setTimeout(kill, delayMs)
        // Whatever happens, the round ends: a kill within 10 s.
        const fallback = setTimeout(kill, 10_000)

        const sender = async () => {
          while (!killed) {
            const sent: Sent = { k: next++, round, changes: [], written: false, inFlightAtKill: false }
            sent.changes = changesOf(sent.k)
            const ordinal = sentInRound++
            all.push(sent)
            pending.add(sent)
            const at = performance.now()
            try {
              const answer = await post(server, token, sent, () => onWritten(sent, ordinal))
              sent.status = answer.status
              if (answer.status === 200) {
                sent.answer = parseExact(answer.text) as Sent['answer']
                latencies.push(performance.now() - at)
              } else sent.error = answer.text
            } catch (error) {
              sent.error = codeOf(error)
              return
            } finally {
              pending.delete(sent)
            }
          }
        }
        await Promise.all(Array.from({ length: SENDERS }, sender))
        clearTimeout(fallback)
        assert.equal(await server.waitForExit(`the kill of round ${round + 1}`), null, 'killed, not exited')
        assert.equal(server.child.signalCode, 'SIGKILL')
        await assertInvariants(database.url, `after kill ${round + 1} (seed ${runSeed})`)
        const mine = all.filter((s) => s.round === round)
        t.diagnostic(
          `round ${round + 1}: ${kind} kill ${kind === 'in-flight' ? `${delayMs} ms after batch ${target + 1} was written` : `at ${delayMs} ms`}; ` +
            `${mine.length} sent, ${mine.filter((s) => s.status === 200).length} answered 200, ` +
            `${mine.filter((s) => s.inFlightAtKill).length} in flight at the kill`,
        )
      }

      // The service answers only 200 to these batches, or nothing when it dies first.
      for (const s of all) assert.ok(s.status === undefined || s.status === 200, `batch ${s.k}: ${s.status} ${s.error}`)

      const server = await resources.server(database.url)
      const rows = await readAllChanges(server, token)
      const inventory = (await server.request('GET', '/v1/inventory', { token })).body as { petId: bigint; quantity: number }[]
      await server.stop()
      await assertInvariants(database.url, `at the end (seed ${runSeed})`)

      // The import's rows, then only the batches' rows.
      const imported = rows.slice(0, PETS)
      assert.ok(imported.every((r) => r.reason === 'import' && r.batchId === null && r.quantity === START))
      const running = new Map<bigint, number>(imported.map((r) => [r.petId, r.quantity]))
      const groups: InventoryChange[][] = []
      for (const row of rows.slice(PETS)) {
        assert.ok(row.batchId !== null, `seq ${row.seq}: a row that is no batch's (${row.reason})`)
        const group = groups.at(-1)
        if (group !== undefined && group[0]!.batchId === row.batchId) group.push(row)
        else groups.push([row])
      }
      const applied = new Map<number, { batchId: string; rows: InventoryChange[] }>()
      const batchIds = new Set<string>()
      for (const group of groups) {
        const { batchId, requestId, seq: first } = group[0]!
        assert.ok(!batchIds.has(batchId!), `batch ${batchId}'s rows are not contiguous: it appears again from seq ${first}`)
        batchIds.add(batchId!)
        const k = Number(/^kill-(\d+)$/.exec(String(requestId))?.[1])
        const sent = all[k]
        assert.ok(sent && sent.k === k, `seq ${first}: rows of a request the test did not send (${requestId})`)
        assert.ok(!applied.has(k), `batch ${k} applied twice`)
        assert.equal(group.length, PETS, `batch ${k} (${batchId}): ${group.length} of its ${PETS} rows`)
        // Replayed in the ledger's order: each row is what the change makes of the entry as the row before left it.
        group.forEach((row, i) => {
          const change = sent.changes[i]!
          const before = running.get(row.petId)
          const expected = 'delta' in change ? before! + change.delta : change.quantity
          assert.deepEqual(
            [row.seq, row.petId, row.previousQuantity, row.quantity, row.reason, row.note, row.requestId, row.batchId],
            [first + i, BigInt(change.petId), before, expected, change.reason, `batch ${k}`, `kill-${k}`, batchId],
            `batch ${k}, change ${i}`,
          )
          running.set(row.petId, expected)
        })
        applied.set(k, { batchId: batchId!, rows: group })
      }

      for (const s of all) {
        const found = applied.get(s.k)
        if (s.status === 200) {
          // Durable: answered before the kill, so in the ledger, as answered.
          assert.ok(found, `batch ${s.k} was answered 200 (${s.answer!.batchId}) but is not in the ledger`)
          assert.equal(found.batchId, s.answer!.batchId)
          assert.deepEqual(
            s.answer!.entries.map((e) => [e.petId, e.quantity]),
            found.rows.map((r) => [r.petId, r.quantity]),
            `batch ${s.k}: the entries answered are those its rows record`,
          )
        } else if (!s.written) {
          // Never sent whole (refused, or cut off while writing): the service cannot have applied it.
          assert.equal(found, undefined, `batch ${s.k} was never sent whole (${s.error}) yet is in the ledger`)
        }
      }
      assert.deepEqual(
        inventory.map((e) => [e.petId, e.quantity]),
        [...running].sort(([a], [b]) => (a < b ? -1 : 1)),
        'every entry is the import with the applied batches replayed',
      )

      const inFlight = all.filter((s) => s.inFlightAtKill)
      const answered = all.filter((s) => s.status === 200).length
      t.diagnostic(
        `${all.length} batches sent, ${answered} answered 200, ${applied.size} in the ledger; ` +
          `${inFlight.length} in flight at a kill, of which ${inFlight.filter((s) => applied.has(s.k)).length} committed; ` +
          `batch latency median ${Math.round(latencies.sort((a, b) => a - b)[latencies.length >> 1] ?? 0)} ms; ` +
          `${Math.round(performance.now() - started)} ms in all`,
      )
      // The kills did what the test claims: most of them found a batch in flight, and batches committed between them.
      assert.ok(
        new Set(inFlight.map((s) => s.round)).size >= 3,
        `only ${new Set(inFlight.map((s) => s.round)).size} kills found a batch in flight`,
      )
      assert.ok(answered >= 3, `only ${answered} batches answered 200`)
    })
  })
}
