// Issue 37: `petstore backup` of the running SQLite database and `petstore restore`, on real
// processes: the copy is one committed state taken while a `petstore serve` writes; restore is refused
// while any process has the database open; after a restore the seqs jump, a consumer that had read past
// the backup gets 410 cursor_expired (the client's PetstoreCursorExpiredError), and after reading the
// state again it gets every new row once; no seq given out before the restore is given out again.
import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { createClient, type InventoryChange, PetstoreCursorExpiredError, PetstoreError } from 'petstore-client'
import { loadMigrations } from '../../src/storage/migrations.js'
import { migrateSqlite } from '../../src/storage/sqlite/migrate.js'
import { Receiver, waitFor } from '../webhooks/receiver.js'
import {
  assertInvariants,
  BACKENDS,
  CLI,
  createKey,
  runCli,
  runCliInProcess,
  runProcess,
  seed,
  useResources,
  within,
} from '../support/helpers.js'

const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
const pathOf = (url: string) => url.slice('sqlite:'.length)
const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')
const PETS = 40
// A stream its client has left is noticed at the next heartbeat: short, so that stopping the server is.
const HEARTBEAT = { STREAM_HEARTBEAT_MS: '300' }

function readDatabase(path: string) {
  const db = new Database(path, { readonly: true })
  try {
    const entries = new Map(
      (db.prepare('SELECT pet_id, quantity FROM inventory').raw().safeIntegers().all() as [bigint, bigint][]).map(([p, q]) => [p, q]),
    )
    const ledger = (
      db.prepare('SELECT seq, pet_id, quantity, request_id FROM inventory_changes ORDER BY seq').raw().safeIntegers().all() as [
        bigint,
        bigint,
        bigint,
        string | null,
      ][]
    ).map(([seq, petId, quantity, requestId]) => ({ seq, petId, quantity, requestId }))
    return { entries, ledger, integrity: db.prepare('PRAGMA integrity_check').pluck().get() }
  } finally {
    db.close()
  }
}

describe('petstore backup and restore (SQLite, real processes)', () => {
  const resources = useResources()

  async function world() {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'ops')
    await seed(
      database.url,
      Array.from({ length: PETS }, (_, i) => ({ petId: i + 1, quantity: 1_000_000, status: 'available' })),
    )
    const server = await resources.server(database.url, HEARTBEAT)
    return { database, token, server, env: { DATABASE_URL: database.url } }
  }

  test('When a backup is taken during a burst of PATCHes and orders, then it is one committed state exactly: a prefix of the ledger, each entry as its last row there left it, every write answered before it started in it', async () => {
    const { token, server, env, database } = await world()
    const file = join(dirname(pathOf(database.url)), 'backup.db')
    let stop = false
    const acknowledged: { requestId: string; answeredAt: number }[] = []
    // Eight writers, each PATCHing or ordering one pet after another until told to stop.
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let n = 0; !stop; n++) {
        const petId = 1 + ((w * 5 + n) % PETS)
        const requestId = `w${w}-${n}`
        const res =
          n % 4 === 3
            ? await server.request('POST', '/v1/store/orders', {
                token,
                body: { petId, quantity: 1 },
                headers: { 'x-request-id': requestId },
              })
            : await server.request('PATCH', `/v1/inventory/${petId}`, {
                token,
                body: { quantity: 1000 + w * 100_000 + n },
                headers: { 'x-request-id': requestId },
              })
        assert.ok(res.status === 200 || res.status === 201, `${requestId}: ${res.status} ${res.text}`)
        acknowledged.push({ requestId, answeredAt: performance.now() })
      }
    })
    const acks = async (n: number) => {
      const deadline = Date.now() + 20_000
      while (acknowledged.length < n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await acks(50)
    const backupStarted = performance.now()
    const backup = await within(runCli(['backup', file], env), 60_000, 'the backup')
    await acks(acknowledged.length + 50)
    stop = true
    await within(Promise.all(writers), 30_000, 'the writers')
    assert.equal(backup.code, 0, backup.stderr)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.equal(existsSync(`${file}-wal`), false, 'the backup is one file')

    const copy = readDatabase(file)
    const live = readDatabase(pathOf(database.url))
    assert.equal(copy.integrity, 'ok')
    const last = copy.ledger.at(-1)!.seq
    assert.match(
      backup.stderr,
      new RegExp(
        `^Backed up ${PETS} entries and ${copy.ledger.length} ledger rows \\(last seq ${last}, schema \\d+\\) to .*: ${statSync(file).size} bytes in [\\d.]+ s; PRAGMA integrity_check: ok\\.\\n$`,
      ),
    )
    // Writes went on after the copy: it is not the end.
    assert.ok(live.ledger.length > copy.ledger.length, `writes after the copy: ${live.ledger.length} > ${copy.ledger.length}`)
    // A prefix of the ledger as it is now, row for row.
    assert.deepEqual(copy.ledger, live.ledger.slice(0, copy.ledger.length))
    // Each entry as its last row in the copy left it (or as seeded, 1,000,000, with none).
    const byLedger = new Map<bigint, bigint>()
    for (const row of copy.ledger) byLedger.set(row.petId, row.quantity)
    assert.deepEqual(copy.entries, byLedger)
    // Every write answered before the backup started is in it.
    const rowOf = new Map(live.ledger.filter((r) => r.requestId !== null).map((r) => [r.requestId!, r]))
    const before = acknowledged.filter((a) => a.answeredAt < backupStarted)
    assert.ok(before.length >= 50, `writes answered before the backup: ${before.length}`)
    for (const { requestId } of before) assert.ok(rowOf.get(requestId)!.seq <= last, `${requestId} answered before the backup started`)

    // An existing file is refused and left alone; with --force it is replaced.
    const kept = digest(file)
    const again = await runCliInProcess(['backup', file], env)
    assert.equal(again.code, 1)
    assert.match(again.stderr, /exists already: give --force/)
    assert.equal(digest(file), kept)
    const forced = await runCliInProcess(['backup', file, '--force'], env)
    assert.equal(forced.code, 0, forced.stderr)
    assert.notEqual(digest(file), kept)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    await server.stop()
  })

  test('When a server has the database open, even idle, then restore is refused with exit 1 and the database is left as it was; the server serves on', async () => {
    const { token, server, env, database } = await world()
    const file = join(dirname(pathOf(database.url)), 'backup.db')
    assert.equal((await runCliInProcess(['backup', file], env)).code, 0)
    assert.equal((await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 7 } })).status, 200)
    const path = pathOf(database.url)
    const files = () => ['', '-wal'].map((s) => (existsSync(path + s) ? digest(path + s) : '-'))
    const before = files()
    const refused = await runCli(['restore', file], env)
    assert.equal(refused.code, 1, refused.stderr)
    assert.match(refused.stderr, /Another process has the database at .* open .*stop it first\. Nothing was changed/)
    assert.deepEqual(files(), before)
    const res = await server.request('GET', '/v1/inventory/1', { token })
    assert.equal(res.body.quantity, 7)
    assert.equal((await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 8 } })).status, 200)
    await server.stop()
  })

  test('When the server is killed and a backup restored with the bump, then a stream that had read past the backup gets 410 cursor_expired (PetstoreCursorExpiredError), and after reading the state again every new row once; no seq is given out twice', async () => {
    const { token, server, env, database } = await world()
    const file = join(dirname(pathOf(database.url)), 'backup.db')
    const patch = (s: typeof server, petId: number, quantity: number) =>
      s.request('PATCH', `/v1/inventory/${petId}`, { token, body: { quantity } }).then((r) => assert.equal(r.status, 200, r.text))
    for (const q of [1, 2, 3]) await patch(server, 1, q)
    assert.equal((await runCliInProcess(['backup', file], env)).code, 0)
    const backupLast = readDatabase(file).ledger.at(-1)!.seq
    // A consumer follows the ledger past the backup's end.
    const api = createClient({ baseUrl: `${server.baseUrl}/v1`, token })
    const seenBefore: InventoryChange[] = []
    const abort = new AbortController()
    const following = (async () => {
      for await (const change of api.changes.stream({ after: backupLast, signal: abort.signal })) {
        seenBefore.push(change)
        if (seenBefore.length === 5) abort.abort()
      }
    })()
    for (const q of [10, 11, 12, 13, 14]) await patch(server, 2, q)
    await within(following, 10_000, 'the stream before the restore')
    const consumerAt = seenBefore.at(-1)!.seq
    assert.equal(consumerAt, backupLast + 5n)
    // Killed, as a crash leaves it: its WAL not checkpointed. Restored with the default bump.
    await server.stop('SIGKILL')
    await assertInvariants(database.url, 'after the server was killed')
    const restored = await runCli(['restore', file], env)
    assert.equal(restored.code, 0, restored.stderr)
    await assertInvariants(database.url, 'after the restore')
    const jumpTo = backupLast + 1_000_000_000n
    assert.match(restored.stderr, new RegExp(`next seq is ${jumpTo + 1n} or later .*from ${backupLast + 1n} to ${jumpTo} now gets 410`))
    assert.equal(existsSync(`${pathOf(database.url)}-wal`), false, "the replaced database's WAL is gone with it")
    const after = await resources.server(database.url, HEARTBEAT)
    const api2 = createClient({ baseUrl: `${after.baseUrl}/v1`, token })
    // The state is the backup's, not the WAL of the database it replaced.
    assert.equal((await api2.inventory.get(2n)).item.quantity, 1_000_000)
    // The consumer resumes where it was: 410, typed, on the stream and on the feed.
    await assert.rejects(
      (async () => {
        for await (const _ of api2.changes.stream({ after: consumerAt })) assert.fail('no row after an expired cursor')
      })(),
      (error: unknown) => {
        assert.ok(error instanceof PetstoreCursorExpiredError, String(error))
        assert.ok(error instanceof PetstoreError && error.status === 410 && error.code === 'cursor_expired')
        assert.equal(error.currentSeq, backupLast)
        return true
      },
    )
    await assert.rejects(api2.changes.page({ after: consumerAt }), PetstoreCursorExpiredError)
    // It reads the state again and follows from where the ledger ends now: every new row once.
    const items = await api2.inventory.list()
    assert.equal(items.length, PETS)
    const seenAfter: InventoryChange[] = []
    const abort2 = new AbortController()
    const following2 = (async () => {
      for await (const change of api2.changes.stream({ after: backupLast, signal: abort2.signal })) {
        seenAfter.push(change)
        if (seenAfter.length === 6) abort2.abort()
      }
    })()
    for (const q of [20, 21, 22]) await patch(after, 3, q)
    assert.equal((await after.request('POST', '/v1/store/orders', { token, body: { petId: 3, quantity: 2 } })).status, 201)
    const imported = join(dirname(pathOf(database.url)), 'more.json')
    writeFileSync(imported, '[{"petId":100,"quantity":5,"status":"available"},{"petId":101,"quantity":6,"status":"sold"}]')
    assert.equal((await runCli(['import', 'inventory', imported], env)).code, 0)
    await within(following2, 10_000, 'the stream after the restore')
    assert.deepEqual(
      seenAfter.map((c) => [c.seq, c.petId, c.quantity]),
      [
        [jumpTo + 1n, 3n, 20],
        [jumpTo + 2n, 3n, 21],
        [jumpTo + 3n, 3n, 22],
        [jumpTo + 4n, 3n, 20],
        [jumpTo + 5n, 100n, 5],
        [jumpTo + 6n, 101n, 6],
      ],
    )
    const before = new Set(seenBefore.map((c) => c.seq))
    const ledger = readDatabase(pathOf(database.url)).ledger
    assert.deepEqual(
      ledger.filter((r) => before.has(r.seq)),
      [],
      'no seq seen before the restore is given out again',
    )
    await after.stop()
  })

  test('When the backup fails the integrity check, is not a database, or has a newer schema, then restore refuses with exit 1 and changes nothing; an older schema is migrated', async () => {
    const database = await resources.database(sqlite)
    await createKey(database.url, 'ops')
    const env = { DATABASE_URL: database.url }
    const folder = dirname(pathOf(database.url))
    const good = join(folder, 'good.db')
    assert.equal((await runCliInProcess(['backup', good], env)).code, 0)
    const path = pathOf(database.url)
    const kept = digest(path)

    const torn = join(folder, 'torn.db')
    const bytes = readFileSync(good)
    // The ledger's and the keys' pages in the middle overwritten: a torn copy.
    bytes.fill(0x5a, 4096 * 3, 4096 * 6)
    writeFileSync(torn, bytes)
    const notDb = join(folder, 'notes.txt')
    writeFileSync(notDb, 'not a database at all, just some text that is long enough '.repeat(200))
    const newer = join(folder, 'newer.db')
    writeFileSync(newer, readFileSync(good))
    const db = new Database(newer)
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_from_the_future', 'x')").run()
    db.close()
    for (const [file, pattern] of [
      [torn, /fails PRAGMA integrity_check|cannot be read as a SQLite database/],
      [notDb, /cannot be read as a SQLite database/],
      [newer, /schema is newer than this build's \(migration 999 is not known here\)/],
      [join(folder, 'missing.db'), /is not a file/],
    ] as const) {
      const res = await runCliInProcess(['restore', file], env)
      assert.equal(res.code, 1, `${file}: ${res.stderr}`)
      assert.match(res.stderr, pattern)
      assert.equal(digest(path), kept, `${file}: the database is unchanged`)
    }
    for (const args of [['restore'], ['restore', good, '--bump-seq', '0'], ['restore', good, '--bump-seq', 'x'], ['backup']]) {
      assert.equal((await runCliInProcess(args, env)).code, 2, args.join(' '))
    }

    // A backup of an older build: only the migrations before 013 (no ledger_jumps yet).
    const older = join(folder, 'older.db')
    const old = new Database(older)
    old.pragma('journal_mode = DELETE')
    migrateSqlite(
      old,
      loadMigrations(new URL('../../src/storage/sqlite/migrations/', import.meta.url)).filter((m) => m.version < 13),
    )
    old.prepare("INSERT INTO inventory (pet_id, quantity, status) VALUES (5, 50, 'available')").run()
    old.prepare("INSERT INTO inventory_changes (pet_id, previous_quantity, quantity, reason, at) VALUES (5, NULL, 50, 'import', 'x')").run()
    old.close()
    const res = await runCliInProcess(['restore', older, '--bump-seq', '100'], env)
    assert.equal(res.code, 0, res.stderr)
    assert.match(res.stderr, /applied migrations 013_ledger_jumps/)
    assert.match(res.stderr, /next seq is 102 or later \(its last row is 1\)/)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    const now = readDatabase(path)
    assert.deepEqual([...now.entries], [[5n, 50n]])
  })

  test('When a backup is restored under a webhook subscription, then it restarts from its cursor in the backup: rows redelivered keep their webhook-id and body, new rows come after the jump, no webhook-id names two rows', async () => {
    const database = await resources.database(sqlite)
    const token = await createKey(database.url, 'hooks')
    await seed(database.url, [{ petId: 1, quantity: 100, status: 'available' }])
    const receiver = await Receiver.start()
    try {
      const env = { ...HEARTBEAT, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_LEASE_MS: '1000' }
      const first = await resources.server(database.url, env)
      const made = await first.request('POST', '/v1/webhooks', { token, body: { url: receiver.url } })
      assert.equal(made.status, 201, made.text)
      const patch = (s: typeof first, quantity: number) =>
        s.request('PATCH', '/v1/inventory/1', { token, body: { quantity } }).then((r) => assert.equal(r.status, 200, r.text))
      for (const q of [1, 2]) await patch(first, q)
      await waitFor(() => receiver.requests.length >= 2, 10_000, 'the first two messages')
      const file = join(dirname(pathOf(database.url)), 'backup.db')
      assert.equal((await runCliInProcess(['backup', file], { DATABASE_URL: database.url })).code, 0)
      for (const q of [3, 4]) await patch(first, q)
      await waitFor(() => receiver.requests.length >= 4, 10_000, 'the messages after the backup')
      await first.stop()
      const restored = await runCli(['restore', file, '--bump-seq', '1000'], { DATABASE_URL: database.url })
      assert.equal(restored.code, 0, restored.stderr)
      const second = await resources.server(database.url, env)
      await patch(second, 5)
      await waitFor(() => receiver.messages().some((m) => m.body.includes('"quantity":5')), 10_000, 'the message after the restore')
      const messages = receiver.messages()
      // Every webhook-id always names the same body: a seq is never given to another row.
      const byId = new Map<string, string>()
      for (const m of messages) {
        const seen = byId.get(m.id)
        if (seen === undefined) byId.set(m.id, m.body.replace(/"timestamp":"[^"]*",?/, ''))
        else assert.equal(m.body.replace(/"timestamp":"[^"]*",?/, ''), seen, `${m.id} names one row`)
      }
      // The rows of the lost history (3 and 4) were delivered; their seqs are in the jump and never come
      // again. The new row comes after it. Rows the backup's cursor had not passed would come again, the same.
      const backupLast = Number(readDatabase(file).ledger.at(-1)!.seq)
      const firsts = messages.filter((m, n) => messages.findIndex((o) => o.id === m.id) === n)
      assert.deepEqual(
        firsts.map((m) => [m.seq, JSON.parse(m.body).data.quantity]),
        [
          [backupLast - 1, 1],
          [backupLast, 2],
          [backupLast + 1, 3],
          [backupLast + 2, 4],
          [backupLast + 1001, 5],
        ],
      )
      // A message sent again (at least once) is of the backup's own history, whose cursor it restarts from.
      for (const again of messages.filter((m) => !firsts.includes(m))) assert.ok(again.seq <= backupLast, `again: ${again.seq}`)
      await second.stop()
    } finally {
      await receiver.close()
    }
  })

  test('When the nightly backup script of docs/operations.md runs three times beside a serving server with KEEP=2, then the two newest backups stay, each whole and 0600', async () => {
    const { token, server, database } = await world()
    const docs = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
    const script = [...docs.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((b) => b.includes('head -n "-$KEEP"'))
    assert.ok(script, 'the nightly script in docs/operations.md')
    const folder = dirname(pathOf(database.url))
    const bin = join(folder, 'bin')
    mkdirSync(bin)
    writeFileSync(join(bin, 'petstore'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 })
    writeFileSync(join(folder, 'petstore-backup'), script)
    const backups = join(folder, 'backups')
    const made: string[] = []
    for (let n = 0; n < 3; n++) {
      assert.equal((await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: n } })).status, 200)
      const run = await runProcess('sh', [join(folder, 'petstore-backup')], {
        env: { PATH: `${bin}:${process.env.PATH}`, DATABASE_URL: database.url, PETSTORE_BACKUPS: backups, KEEP: '2', LOG_LEVEL: 'warn' },
      })
      assert.equal(run.code, 0, run.stderr)
      made.push(/ to (\S+): /.exec(run.stderr)![1]!)
      // Names are to the second.
      await new Promise((resolve) => setTimeout(resolve, 1100))
    }
    const kept = readdirSync(backups).sort()
    assert.deepEqual(
      kept.map((f) => join(backups, f)),
      made.slice(1),
    )
    for (const [n, file] of made.slice(1).entries()) {
      assert.equal(statSync(file).mode & 0o777, 0o600)
      const copy = readDatabase(file)
      assert.equal(copy.integrity, 'ok')
      assert.equal(copy.entries.get(1n), BigInt(n + 1))
    }
    await server.stop()
  })

  test('When DATABASE_URL names PostgreSQL, then backup and restore exit 2 naming what to use there', async () => {
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/none' }
    const backup = await runCliInProcess(['backup', '/tmp/never.db'], env)
    assert.equal(backup.code, 2)
    assert.match(backup.stderr, /pg_basebackup .*pg_dump/)
    const restore = await runCliInProcess(['restore', '/tmp/never.db'], env)
    assert.equal(restore.code, 2)
    assert.match(restore.stderr, /pg_restore .*petstore ledger bump-seq N/)
  })
})
