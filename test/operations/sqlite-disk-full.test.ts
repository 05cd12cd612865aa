// A full disk under a running SQLite server, for real: the database on a 16 MiB tmpfs of the test's
// own, filled by a file beside it while PATCHes and orders arrive, then emptied again. Needs root
// (mount); CI runs as root, so there a missing privilege is a failure, not a skip.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, rmdirSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { assertInvariants, createKey, inventoryFile, type LogLine, runCli, seed, useResources } from '../support/helpers.js'
import { readAllChanges } from '../support/ledger-client.js'
import { scrape, startWithMetrics } from '../support/metrics-scrape.js'

const root = process.getuid?.() === 0
const skip = root ? false : 'mounting a tmpfs needs root'
if (!root && process.env.CI) throw new Error('CI runs as root: this test mounts a tmpfs and must run')

/** Bound on the PATCHes sent before the disk is full: the WAL's file can take a few before it must grow. */
const MAX_PATCHES_UNTIL_FULL = 2000

/** Fills the file system holding `dir` with a file of its own, to the last block it takes. */
function fill(dir: string): string {
  const file = join(dir, 'filler')
  const fd = openSync(file, 'w')
  try {
    for (const size of [1024 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(size)
      for (;;) {
        try {
          writeSync(fd, chunk)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
          break
        }
      }
    }
  } finally {
    closeSync(fd)
  }
  return file
}

const faultLines = (lines: LogLine[]) => lines.filter((l) => String(l.msg).startsWith('database fault'))

describe('SQLite on a full disk (real tmpfs)', { skip }, () => {
  const resources = useResources()
  const mount = mkdtempSync(join(tmpdir(), 'petstore-full-'))
  let mounted = false
  after(() => {
    if (mounted) execFileSync('umount', ['-l', mount])
    rmdirSync(mount)
  })

  test('When the disk fills under load, then writes answer 503 naming it with Retry-After, reads and /healthz are served, /readyz and the metric say so, one warn line; once space is back it recovers by itself with one info line, and nothing acknowledged is lost', async () => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', mount])
    mounted = true
    const url = `sqlite:${join(mount, 'petstore.db')}`
    const token = await createKey(url, 'full-disk')
    await seed(url, [
      { petId: 1, quantity: 10, status: 'available' },
      { petId: 2, quantity: 1_000_000, status: 'available' },
    ])
    const { server, metricsUrl } = await startWithMetrics(resources, url, {})
    const patch = (quantity: number) => server.request('PATCH', '/v1/inventory/1', { token, body: { quantity } })
    assert.equal((await patch(11)).status, 200)

    const filler = fill(mount)
    // The last quantity the service acknowledged: what pet 1 must hold whatever the disk did.
    let acknowledged = 11
    let refused: Awaited<ReturnType<typeof patch>> | undefined
    for (let i = 0; i < MAX_PATCHES_UNTIL_FULL && refused === undefined; i++) {
      const res = await patch(1000 + i)
      if (res.status === 200) acknowledged = 1000 + i
      else refused = res
    }
    assert.ok(refused, `a PATCH was refused within ${MAX_PATCHES_UNTIL_FULL} on a full disk`)
    assert.equal(refused.status, 503, refused.text)
    assert.deepEqual(refused.body, {
      code: 'service_unavailable',
      message: 'The disk holding the database is full: writes are refused until space is freed',
      status: 503,
    })
    assert.equal(refused.headers.get('retry-after'), '2')

    // More writes of every kind: all refused alike, none half-written.
    const order = await server.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 5 } })
    assert.equal(order.status, 503, order.text)
    const adjusted = await server.request('POST', '/v1/inventory/2/adjustments', { token, body: { delta: 3 } })
    assert.equal(adjusted.status, 503, adjusted.text)
    // A batch with an Idempotency-Key: refused whole, and its key not taken (a retry later applies it).
    const batch = {
      changes: [
        { petId: 2, delta: 1 },
        { petId: 2, delta: -2, reason: 'damage' },
      ],
    }
    const retryKey = { 'idempotency-key': 'batch-during-the-fault' }
    const batched = await server.request('POST', '/v1/inventory/batch', { token, body: batch, headers: retryKey })
    assert.equal(batched.status, 503, batched.text)
    for (let i = 0; i < 20; i++) assert.equal((await patch(5000 + i)).status, 503)
    // The CLI's writes meet it too: the fault's words, exit 1, nothing imported.
    const cli = await runCli(['import', 'inventory', inventoryFile([{ petId: 3, quantity: 5, status: 'available' }])], {
      DATABASE_URL: url,
    })
    assert.equal(cli.code, 1, cli.stderr)
    assert.match(cli.stderr, /^Error: The disk holding the database is full: writes are refused until space is freed$/m)
    assert.equal((await server.request('GET', '/v1/inventory/3', { token })).status, 404)
    // What can be served is served: reads, liveness; readiness and the metric name the fault.
    const entry = await server.request('GET', '/v1/inventory/1', { token })
    assert.equal(entry.status, 200)
    assert.equal((entry.body as { quantity: number }).quantity, acknowledged)
    assert.equal((await server.request('GET', '/v1/inventory', { token })).status, 200)
    assert.equal((await server.request('GET', '/v1/store/orders', { token })).status, 200)
    assert.equal((await server.request('GET', '/healthz')).status, 200)
    const ready = await server.request('GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.match(String((ready.body as { message: string }).message), /disk holding the database is full/)
    assert.equal((await scrape(metricsUrl)).value('petstore_database_fault', { cause: 'disk_full' }), 1)

    rmSync(filler)
    const freed = Date.now()
    for (;;) {
      if ((await server.request('GET', '/readyz')).status === 200) break
      assert.ok(Date.now() - freed < 5000, 'ready again within 5 s of the space coming back')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal((await patch(77)).status, 200)
    assert.equal((await server.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 5 } })).status, 201)
    const retried = await server.request('POST', '/v1/inventory/batch', { token, body: batch, headers: retryKey })
    assert.equal(retried.status, 200, retried.text)
    assert.equal(retried.headers.get('idempotent-replayed'), null, 'the refused attempt stored no answer')
    assert.equal((await scrape(metricsUrl)).value('petstore_database_fault', { cause: 'disk_full' }), 0)

    // Said once when it began and once when it ended; nothing at error, no stack, no line per refusal.
    const lines = server.logs()
    assert.deepEqual(
      faultLines(lines).map((l) => [l.level, l.fault, l.msg]),
      [
        [40, 'disk_full', 'database fault: The disk holding the database is full: writes are refused until space is freed'],
        [
          30,
          'disk_full',
          'database fault ended, writes succeed again: The disk holding the database is full: writes are refused until space is freed',
        ],
      ],
    )
    assert.deepEqual(
      lines.filter((l) => Number(l.level) >= 50 || 'err' in l || l.msg === 'request refused'),
      [],
      'no error line, no stack and no line per refusal',
    )
    // Nothing half-written: the refused order placed nothing, and the ledger holds every acknowledged
    // PATCH (11, 1000 … acknowledged, then 77) and nothing refused.
    const orders = (await server.request('GET', '/v1/store/orders', { token })).body as Array<{ petId: bigint }>
    assert.deepEqual(
      orders.map((o) => o.petId),
      [2n],
    )
    // Pet 2: the order placed after the fault, then the retried batch's two rows; nothing of the refused ones.
    assert.deepEqual(
      (await readAllChanges(server, token, { petId: 2n }))
        .filter((c) => c.reason !== 'import')
        .map((c) => [c.reason, c.quantity, c.batchId === (retried.body as { batchId: string }).batchId]),
      [
        ['order', 999_995, false],
        ['adjustment', 999_996, true],
        ['damage', 999_994, true],
      ],
    )
    const ledger = (await readAllChanges(server, token, { petId: 1n })).filter((c) => c.reason !== 'import').map((c) => c.quantity)
    const patches = Array.from({ length: acknowledged - 999 }, (_, i) => 1000 + i).filter((q) => q >= 1000)
    assert.deepEqual(ledger, [11, ...patches, 77])
    assert.equal(await server.stop(), 0)
    await assertInvariants(url, 'after the disk was full')
  })
})
