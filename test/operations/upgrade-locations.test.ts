// Issue 50, upgrades: the locations migration (PostgreSQL 021) applied while an instance of the
// previous release (44df29e, the last commit before locations, built from this checkout's history as
// the CPU guard builds its baseline) serves on the same database. The previous release keeps working
// beside the new one: its PATCHes, adjustments, orders, cancellations and holds are read back through
// the new instance (the default location's stock is the one number it writes), the new instance's
// writes through the old one, and `petstore check` of the new release finds nothing wrong.
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, test } from 'node:test'
import { prepareBuild } from '../../bench/baseline-build.js'
import { PREVIOUS_RELEASE } from '../../bench/previous-release.js'
import { postgresDatabase, postgresUnavailable, type TestDatabase } from '../support/databases.js'
import { assertInvariants, runCli, runProcess, startServer, type TestServer } from '../support/helpers.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const unavailable = await postgresUnavailable()
const skip = unavailable !== undefined && !process.env.CI ? unavailable : false

describe('upgrading to locations beside the previous release (postgres)', { skip, timeout: 600_000 }, () => {
  let database: TestDatabase
  let previousCli: string
  let old: TestServer | undefined
  let current: TestServer | undefined
  let token: string
  const env = () => ({ DATABASE_URL: database.url })
  const json = { 'content-type': 'application/json' }
  const at = (server: TestServer, method: string, path: string, body?: unknown) =>
    server.request(method, path, body === undefined ? { token } : { token, body, headers: json })

  before(async () => {
    previousCli = (await prepareBuild(ROOT, PREVIOUS_RELEASE, () => {})).cli
    database = await postgresDatabase()
    // The database as the previous release left it, with its key and stock.
    const migrated = await runProcess(process.execPath, [previousCli, 'migrate'], { env: { PATH: process.env.PATH!, ...env() } })
    assert.equal(migrated.code, 0, migrated.stderr)
    const made = await runProcess(process.execPath, [previousCli, 'keys', 'create', '--name', 'rollout'], {
      env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env() },
    })
    assert.equal(made.code, 0, made.stderr)
    token = made.stdout.trim()
    const dir = mkdtempSync(join(tmpdir(), 'petstore-upgrade-'))
    writeFileSync(
      join(dir, 'inventory.json'),
      '[{"petId":1,"quantity":10,"status":"available"},{"petId":2,"quantity":20,"status":"available"}]',
    )
    const imported = await runProcess(process.execPath, [previousCli, 'import', 'inventory', join(dir, 'inventory.json')], {
      env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env() },
    })
    assert.equal(imported.code, 0, imported.stderr)
    old = await startServer(database.url, {}, { cli: previousCli })
  })
  after(async () => {
    await old?.stop()
    await current?.stop()
    await database?.drop()
  })

  test('When the new release migrates and serves beside the previous one, then both read and write the same stock, and check finds nothing', async () => {
    // The new release's CLI migrates (021) while the previous release serves.
    const migrated = await runCli(['migrate'], env())
    assert.equal(migrated.code, 0, migrated.stderr)
    current = await startServer(database.url)
    const oldServer = old!
    const newServer = current

    // The previous release writes; the new one reads what it wrote.
    assert.equal((await at(oldServer, 'PATCH', '/v1/inventory/1', { quantity: 12 })).status, 200)
    assert.equal((await at(oldServer, 'POST', '/v1/inventory/2/adjustments', { delta: -3 })).status, 200)
    const order = await at(oldServer, 'POST', '/v1/store/orders', { petId: 1, quantity: 2 })
    assert.equal(order.status, 201, order.text)
    const hold = await at(oldServer, 'POST', '/v1/store/reservations', { lines: [{ petId: 2, quantity: 4 }] })
    assert.equal(hold.status, 201, hold.text)
    assert.equal((await at(newServer, 'GET', '/v1/inventory/1')).text, '{"petId":1,"quantity":10,"status":"available"}')
    assert.equal((await at(newServer, 'GET', '/v1/inventory/2')).text, '{"petId":2,"quantity":13,"status":"available"}')
    assert.equal(
      (await at(newServer, 'GET', '/v1/inventory/1/locations')).text,
      '[{"petId":1,"locationId":1,"quantity":10,"status":"available"}]',
    )

    // The new release writes; the previous one reads it, and cancels and releases what it placed.
    assert.equal(
      (await at(newServer, 'POST', '/v1/inventory/1/adjustments', { delta: 5 })).text,
      '{"petId":1,"quantity":15,"status":"available"}',
    )
    const batch = await at(newServer, 'POST', '/v1/inventory/batch', { changes: [{ petId: 2, quantity: 30, expectedQuantity: 13 }] })
    assert.equal(batch.status, 200, batch.text)
    assert.equal((await at(oldServer, 'GET', '/v1/inventory/1')).body.quantity, 15)
    assert.equal((await at(oldServer, 'GET', '/v1/inventory/2')).body.quantity, 30)
    assert.equal((await at(oldServer, 'PATCH', `/v1/store/orders/${order.body.id}`, { status: 'cancelled' })).status, 200)
    assert.equal((await at(oldServer, 'POST', `/v1/store/reservations/${hold.body.id}/release`)).status, 200)
    assert.equal((await at(newServer, 'GET', '/v1/inventory/1')).body.quantity, 17)
    assert.equal((await at(newServer, 'GET', '/v1/inventory/2')).body.quantity, 34)

    // The new release's orders through the previous one's reads.
    const placed = await at(newServer, 'POST', '/v1/store/orders', { petId: 2, quantity: 4 })
    assert.equal(placed.status, 201, placed.text)
    assert.equal('allocations' in placed.body, false)
    assert.equal((await at(oldServer, 'GET', `/v1/store/orders/${placed.body.id}`)).text, placed.text)
    const feed = await at(oldServer, 'GET', '/v1/inventory/changes?limit=1000')
    assert.equal(feed.status, 200, feed.text)
    assert.ok(
      feed.body.every((row: Record<string, unknown>) => !('locationId' in row)),
      'a store with one location shows rows as before',
    )
    await assertInvariants(database.url, 'after both releases wrote')
  })
})
