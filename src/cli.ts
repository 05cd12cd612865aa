#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { ConfigError, describeVariables, loadConfig, maskUrl } from './config.js'
import { DomainError } from './errors.js'
import { openInventoryFile } from './inventory/import-file.js'
import { InventoryRecordSchema, PetStatusSchema } from './inventory/inventory.schema.js'
import { InventoryService } from './inventory/inventory.service.js'
import { changeJson } from './inventory/inventory.json.js'
import { parseInt64 } from './int64.js'
import { MAX_PAGE_SIZE } from './paging.js'
import { KeysService } from './keys/keys.service.js'
import { openPetsFile } from './pets/import-pets.js'
import { CategorySchema, PetRecordSchema, TagSchema } from './pets/pet.schema.js'
import { PetsService } from './pets/pets.service.js'
import { StorageOpenError, openStorage } from './storage/open-storage.js'
import type { Storage } from './storage/storage.js'
import { createValidator } from './validation.js'

const USAGE = `Usage: petstore <command>

Commands:
  serve [--workers N]          start the HTTP service (what npm start runs); N processes share the port
  migrate                      bring the database schema up to date
  keys create --name NAME      create an API key; prints the token alone on stdout
  keys list                    list API keys (never their secrets)
  keys revoke NAME_OR_ID       revoke a key; takes effect on the server's next request
  import inventory FILE        upsert entries from FILE (.json or .csv), all or nothing
  import pets FILE             upsert pets from FILE (.json), and their statuses in the inventory, all or nothing
  deprecations [--json]        calls of the deprecated GET /v1/pets/{petId} per API key, as flushed so far
  history PETID [--limit N] [--json]
                               one pet's stock changes from the ledger, newest first (N: 1-1000, default 50)

Configuration comes from the environment (the same for every command):
${describeVariables()
  .map((v) => `  ${v.name.padEnd(20)} ${v.allowed}`)
  .join('\n')}
`

class UsageError extends Error {}

const log = (line: string) => process.stderr.write(`${line}\n`)

async function withStorage<T>(run: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig())
  try {
    return await run(storage)
  } finally {
    await storage.close()
  }
}

async function keys(args: string[]) {
  const { values, positionals } = parseArgs({ args, options: { name: { type: 'string' } }, allowPositionals: true })
  const [sub, target] = positionals
  await withStorage(async (storage) => {
    const service = new KeysService(storage)
    if (sub === 'create' && values.name !== undefined && !target) {
      const { key, token } = await service.create(values.name)
      log(`Created key ${key.id} '${key.name}'. Store the token now: it is not shown again.`)
      process.stdout.write(`${token}\n`)
    } else if (sub === 'list' && !target) {
      const rows = await service.list()
      process.stdout.write(
        `${['ID\tNAME\tCREATED\tLAST USED\tREVOKED']
          .concat(rows.map((k) => [k.id, k.name, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-'].join('\t')))
          .join('\n')}\n`,
      )
    } else if (sub === 'revoke' && target) {
      const key = await service.revoke(target)
      log(`Revoked key ${key.id} '${key.name}'.`)
    } else {
      throw new UsageError('keys: use keys create --name NAME | keys list | keys revoke NAME_OR_ID')
    }
  })
}

async function importCommand(args: string[]) {
  const [what, file, ...rest] = args
  if (!file || rest.length > 0) throw new UsageError('import: use import inventory FILE | import pets FILE')
  if (what === 'inventory') {
    const validate = createValidator([PetStatusSchema]).compile(InventoryRecordSchema)
    const source = await openInventoryFile(file, validate)
    const count = await withStorage((storage) => new InventoryService(storage).importFile(source))
    log(`Imported ${count} inventory entries from ${file}.`)
  } else if (what === 'pets') {
    const validate = createValidator([PetStatusSchema, CategorySchema, TagSchema]).compile(PetRecordSchema)
    const source = await openPetsFile(file, validate)
    const count = await withStorage((storage) => new PetsService(storage).importFile(source))
    log(`Imported ${count} pets from ${file}.`)
  } else {
    throw new UsageError('import: use import inventory FILE | import pets FILE')
  }
}

async function deprecations(args: string[]) {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' } } })
  const rows = await withStorage((storage) => new PetsService(storage).deprecatedCalls())
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify(rows.map(({ keyId, name, calls, firstCall, lastCall }) => ({ keyId, name, calls, firstCall, lastCall })))}\n`,
    )
    return
  }
  process.stdout.write(
    `${['KEY\tNAME\tCALLS\tFIRST CALL\tLAST CALL']
      .concat(rows.map((r) => [r.keyId, r.name, r.calls, r.firstCall, r.lastCall].join('\t')))
      .join('\n')}\n`,
  )
}

async function history(args: string[]) {
  // A negative petId is an argument, not an option: parseArgs would read -5 as a flag.
  const negative = args.filter((a, i) => /^-\d+$/.test(a) && args[i - 1] !== '--limit')
  const { values, positionals } = parseArgs({
    args: args.filter((a) => !negative.includes(a)),
    options: { limit: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
  })
  positionals.push(...negative)
  const petId = positionals.length === 1 ? parseInt64(positionals[0]!) : undefined
  const limit = Number(values.limit === undefined ? 50n : (parseInt64(values.limit) ?? 0n))
  if (petId === undefined || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new UsageError(`history: use history PETID [--limit N] [--json], PETID a decimal int64, N from 1 to ${MAX_PAGE_SIZE}`)
  }
  const changes = await withStorage((storage) => new InventoryService(storage).history(petId, limit))
  if (values.json) {
    process.stdout.write(`[${changes.map(changeJson).join(',')}]\n`)
    return
  }
  const cell = (value: unknown) => (value === null ? '-' : String(value))
  process.stdout.write(
    `${['SEQ\tAT\tREASON\tFROM\tTO\tORDER\tKEY\tREQUEST']
      .concat(
        changes.map((c) => [c.seq, c.at, c.reason, c.previousQuantity, c.quantity, c.orderId, c.keyId, c.requestId].map(cell).join('\t')),
      )
      .join('\n')}\n`,
  )
}

async function main(argv: string[]) {
  const [command, ...args] = argv
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args, options: { workers: { type: 'string' } } })
      const env = values.workers === undefined ? process.env : { ...process.env, WORKERS: values.workers }
      const { serve } = await import('./server.js')
      await serve(loadConfig(env))
      return
    }
    case 'migrate': {
      const applied = await withStorage(async (storage) => storage.migrationsApplied)
      log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'The database is up to date.')
      return
    }
    case 'keys':
      return keys(args)
    case 'import':
      return importCommand(args)
    case 'history':
      return history(args)
    case 'deprecations':
      return deprecations(args)
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE)
      return
    default:
      throw new UsageError(`Unknown command '${command}'`)
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) {
    log(`Invalid configuration:\n${error.message}`)
    process.exitCode = 2
  } else if (error instanceof UsageError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')) {
    log(`${(error as Error).message}\n\n${USAGE}`)
    process.exitCode = 2
  } else if (error instanceof DomainError || error instanceof StorageOpenError) {
    log(`Error: ${error.message}`)
    process.exitCode = 1
  } else {
    // A driver's error may quote the connection URL it was given.
    log(maskUrl(`Unexpected failure: ${(error as Error).stack ?? String(error)}`))
    process.exitCode = 1
  }
})
