// Issue 49, point 4: every command and subcommand refuses an option it does not take and a positional
// argument past the ones it takes, with exit 2, a first line on stderr that names exactly what it refused
// and which command refused it, then the usage; and a refused command line changes nothing.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { openStorage } from '../../src/storage/open-storage.js'
import { runCliInProcess, sqliteDatabase } from '../support/helpers.js'

interface Case {
  /** A command line the command would run, on the store the suite sets up: with a token more, it must change nothing. */
  line: string[]
  /** The command the first line names: 'keys list' for `petstore keys list`. */
  command: string
  /** Run against a database that does not exist yet: a command that ignored its arguments would create it. */
  fresh?: true
}

describe('petstore: a refused command line names what it refused (SQLite, in-process)', () => {
  const database = sqliteDatabase()
  const dir = mkdtempSync(join(tmpdir(), 'petstore-refused-'))
  const env = { DATABASE_URL: database.url }
  const freshPath = join(dir, 'fresh.db')
  const inventory = join(dir, 'inventory.json')
  const pets = join(dir, 'pets.json')
  const backupFile = join(dir, 'backup.db')
  /** Files a command would create if it ran: none may exist after a refusal. */
  const created = { export: join(dir, 'export.jsonl'), copy: join(dir, 'copy.db'), fresh: freshPath }
  const DATE = '2999-01-01T00:00:00Z'

  const run = async (args: string[]) => {
    const result = await runCliInProcess(args, env)
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`)
    return result
  }

  before(async () => {
    writeFileSync(inventory, '[{"petId":4242,"quantity":7,"status":"available"}]')
    writeFileSync(pets, '[{"id":4343,"name":"rex","photoUrls":[],"status":"sold"}]')
    await run(['migrate'])
    await run(['keys', 'create', '--name', 'x'])
    await run(['webhooks', 'add', 'https://receiver.invalid/hook'])
    // One entry and so one ledger row, for the ledger's and the restore's commands to work on.
    const seed = join(dir, 'seed.json')
    writeFileSync(seed, '[{"petId":1,"quantity":3,"status":"available"}]')
    await run(['import', 'inventory', seed])
    // An active hold (1), for holds show and holds release to work on.
    const storage = await openStorage(loadConfig(env))
    await storage.writeStock({
      kind: 'hold',
      lines: [{ petId: 1n, quantity: 1 }],
      expiresAt: '2999-01-01T00:00:00.000Z',
      reference: null,
      actor: { keyId: null, requestId: null },
    })
    await storage.close()
    await run(['backup', backupFile])
  })
  after(async () => {
    rmSync(dir, { recursive: true, force: true })
    await database.drop()
  })

  /** What any of the commands could change: the database's keys, webhooks, inventory, pets and ledger, and the files they write. */
  async function state() {
    const storage = await openStorage(loadConfig(env))
    try {
      const last = await storage.lastChangeSeq()
      return {
        keys: (await storage.listKeys()).map((k) => `${k.id} ${k.name} ${k.scopes.join(',')} revoked=${k.revokedAt}`),
        webhooks: (await storage.listWebhooks()).map((w) => `${w.id} ${w.url} ${w.description} ${w.deliveredThrough} ${w.disabledAt}`),
        inventory: (await storage.listInventory({ limit: 100 })).map((i) => `${i.petId} ${i.quantity} ${i.status}`),
        pet4343: (await storage.getPet(4343n)) !== undefined,
        ledgerLast: last,
        holds: (await storage.listReservations({ after: 0n, limit: 100 })).map((r) => `${r.id} ${r.status}`),
        jump: (await storage.jumpOver(last + 1n)) !== undefined,
        files: Object.entries(created)
          .filter(([, path]) => existsSync(path))
          .map(([name]) => name),
      }
    } finally {
      await storage.close()
    }
  }

  const cases: Case[] = [
    { line: ['serve'], command: 'serve' },
    { line: ['migrate'], command: 'migrate', fresh: true },
    { line: ['keys', 'create', '--name', 'y'], command: 'keys create' },
    { line: ['keys', 'list'], command: 'keys list' },
    { line: ['keys', 'revoke', 'x'], command: 'keys revoke' },
    { line: ['webhooks', 'add', 'https://receiver.invalid/other', '--description', 'd'], command: 'webhooks add' },
    { line: ['webhooks', 'list'], command: 'webhooks list' },
    { line: ['webhooks', 'remove', '1'], command: 'webhooks remove' },
    { line: ['webhooks', 'enable', '1'], command: 'webhooks enable' },
    { line: ['import', 'inventory', inventory], command: 'import inventory' },
    { line: ['import', 'pets', pets], command: 'import pets' },
    { line: ['holds', 'list', '--status', 'active'], command: 'holds list' },
    { line: ['holds', 'show', '1'], command: 'holds show' },
    { line: ['holds', 'release', '1'], command: 'holds release' },
    { line: ['deprecations'], command: 'deprecations' },
    { line: ['history', '1'], command: 'history' },
    { line: ['ledger', 'export', '--before', DATE, created.export], command: 'ledger export' },
    { line: ['ledger', 'bump-seq', '5'], command: 'ledger bump-seq' },
    { line: ['backup', created.copy], command: 'backup' },
    { line: ['restore', backupFile], command: 'restore' },
    { line: ['check'], command: 'check' },
    { line: ['help'], command: 'help' },
  ]

  /** [command line, the first line expected, whether it runs on a database that does not exist yet] */
  const refusals: [string[], string, boolean][] = [
    ...cases.flatMap(({ line, command, fresh }): [string[], string, boolean][] => [
      [[...line, '--bogus'], `Unknown option '--bogus' for 'petstore ${command}'`, fresh ?? false],
      [[...line, 'extra'], `Unexpected argument 'extra' for 'petstore ${command}'`, fresh ?? false],
    ]),
    // An option before the subcommand, or a subcommand's option given to another subcommand.
    [['keys', '--bogus', 'revoke', 'x'], "Unknown option '--bogus' for 'petstore keys revoke'", false],
    [['keys', 'list', '--name', 'y'], "Unknown option '--name' for 'petstore keys list'", false],
    [['keys', 'revoke', 'x', '--scopes', 'inventory:read'], "Unknown option '--scopes' for 'petstore keys revoke'", false],
    [['webhooks', 'remove', '1', '--json'], "Unknown option '--json' for 'petstore webhooks remove'", false],
    [['webhooks', 'enable', '1', '-x'], "Unknown option '-x' for 'petstore webhooks enable'", false],
    [['ledger', 'bump-seq', '5', '--before', DATE], "Unknown option '--before' for 'petstore ledger bump-seq'", false],
    [['history', '-5', '--limit', '3', 'extra'], "Unexpected argument 'extra' for 'petstore history'", false],
    // Unknown commands and subcommands.
    [['frobnicate', '--bogus'], "Unknown command 'frobnicate' for 'petstore'", false],
    [['--bogus'], "Unknown option '--bogus' for 'petstore'", false],
    [['keys', 'frob', 'x'], "Unknown command 'frob' for 'petstore keys'", false],
    [['keys', '--bogus'], "Unknown option '--bogus' for 'petstore keys'", false],
    [['webhooks', 'frob', '1'], "Unknown command 'frob' for 'petstore webhooks'", false],
    [['import', 'frob', inventory], "Unknown command 'frob' for 'petstore import'", false],
    [['ledger', 'frob', '5'], "Unknown command 'frob' for 'petstore ledger'", false],
    [['holds', 'frob', '1'], "Unknown command 'frob' for 'petstore holds'", false],
    [['holds', 'release', '1', '--json'], "Unknown option '--json' for 'petstore holds release'", false],
  ]

  test('When a command line holds an option or an argument its command does not take, then it exits 2, the first line on stderr names it and the command, the usage follows, and nothing changes', async (t) => {
    for (const [args, expected, fresh] of refusals) {
      await t.test(args.join(' ').replaceAll(dir, '$DIR'), async () => {
        const was = await state()
        const result = await runCliInProcess(args, fresh ? { ...env, DATABASE_URL: `sqlite:${freshPath}` } : env)
        const [firstLine, ...rest] = result.stderr.split('\n')
        assert.deepEqual(
          {
            code: result.code,
            firstLine: firstLine!.replaceAll(dir, '$DIR'),
            stdout: result.stdout,
            usageFollows: rest.join('\n').includes('Usage: petstore <command>'),
            state: await state(),
          },
          { code: 2, firstLine: expected, stdout: '', usageFollows: true, state: was },
        )
      })
    }
  })
})
