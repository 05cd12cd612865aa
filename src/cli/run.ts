import { ConfigError, describeVariables, loadConfig, maskUrl, tracingEnabled } from '../config.js'
import { DEFAULT_LOCATION_ID, DELTA_REASONS, MAX_BATCH_CHANGES, PET_STATUSES, SCOPES } from '../domain.js'
import { DomainError } from '../errors.js'
import { StorageOpenError } from '../storage/open-storage.js'
import { backupCommand, restoreCommand } from './backup.js'
import { checkCommand, ViolationsFound } from './check.js'
import { holdsCommand } from './holds.js'
import { importCommand } from './import.js'
import { type CliIo, parseCommand, say, UsageError, unknownCommand, unknownOption, withStorage } from './io.js'
import { keysCommand } from './keys.js'
import { locationsCommand, stockCommand, transferCommand } from './locations.js'
import { adjustCommand, batchCommand } from './stock-moves.js'
import { ledgerCommand } from './ledger.js'
import { deprecationsCommand, historyCommand } from './reports.js'
import { webhooksCommand } from './webhooks.js'

export const USAGE = `Usage: petstore <command>

Commands:
  serve [--workers N]          start the HTTP service (what npm start runs); N processes share the port
  migrate                      bring the database schema up to date
  keys create --name NAME [--scopes SCOPE,...] [--locations ID,...]
                               create an API key with these scopes (default: all of them); prints the token alone on stdout
  keys list                    list API keys with their scopes (never their secrets)
  keys revoke NAME_OR_ID       revoke a key; takes effect on the server's next request
  webhooks add URL [--description TEXT]
                               subscribe URL to stock changes (signed, Standard Webhooks); prints the secret alone on stdout
  webhooks list [--json]       webhook subscriptions and where their delivery stands (never their secrets)
  webhooks remove ID           delete a subscription
  webhooks enable ID           resume a disabled or failing subscription from its cursor
  import inventory FILE        upsert entries from FILE (.json or .csv), all or nothing
  import pets FILE             upsert pets from FILE (.json), and their statuses in the inventory, all or nothing
  adjust PETID DELTA [--reason R] [--note TEXT]
      [--location ID]          add DELTA (negative: remove) to a pet's stock, never below 0; R one of
                               ${DELTA_REASONS.join(', ')} (default adjustment); prints the entry as JSON
                               (with --location: the stock there, as the API answers)
  batch FILE|-                 apply the changes in FILE (- reads stdin), in order, all or nothing, as one batch of
                               1-${MAX_BATCH_CHANGES}: {"changes":[...]}, an array, or one change per line (NDJSON), each
                               {petId, quantity [, expectedQuantity] | delta [, reason] [, note] [, locationId]} or a
                               transfer {petId, fromLocationId, toLocationId, quantity [, note]} as the API takes them;
                               prints {"batchId":...,"entries":[...]}
  transfer PETID QUANTITY --from ID --to ID [--note TEXT]
                               move QUANTITY units of a pet from one location to another, in one transaction;
                               prints the answer as JSON (the destination's stock, with the source's in "from")
  stock PETID [--json]         one pet's stock at each location (the default one first), and its total
  locations list [--json]      the locations by id (the default one, ${DEFAULT_LOCATION_ID}, first), active or not
  locations add NAME           create an active, empty location (NAME: 1-100 characters, unique case aside); prints it
                               as JSON
  locations rename ID NAME     rename a location; prints it as JSON
  locations deactivate ID      stop a location taking stock (only while it holds none; never the default one)
  locations activate ID        let an inactive location take stock again
  locations stock ID [--status S] [--limit N] [--after PETID] [--json]
                               one location's stock by petId, a page of N (1-1000, default 100) after PETID (S:
                               ${PET_STATUSES.join(', ')}); when more follow, stderr says the command for the next page
  holds list [--status S] [--limit N] [--json]
                               holds for checkouts by id (S: active, confirmed, released, expired; N: 1-1000,
                               default 100), active ones with their time left
  holds show ID                one hold as the API's JSON
  holds release ID             give a hold's units back now (as POST /v1/store/reservations/ID/release)
  deprecations [--json]        calls of the deprecated GET /v1/pets/{petId} per API key, as flushed so far
  history PETID [--limit N] [--json]
                               one pet's stock changes from the ledger, newest first (N: 1-1000, default 50)
  ledger export --before DATE FILE
                               the ledger's rows from before DATE (RFC 3339) as JSON lines into FILE (new), in seq
                               order: an archive of what LEDGER_RETENTION removes with that cutoff
  ledger bump-seq N            make the next seq at least the last + N and expire cursors in between (after a
                               point-in-time recovery; works beside running servers)
  backup FILE [--force]        a consistent copy of the SQLite database while it serves (FILE 0600; exit 0 once
                               it passed PRAGMA integrity_check)
  restore FILE [--bump-seq N]  put a backup in place at DATABASE_URL's path (refused while a process has it open);
                               the next seq jumps N (default 1000000000) past the backup's last, cursors between get 410
  check                        verify the invariants the service promises (stock against the ledger, orders, seqs,
                               webhook cursors, hashed keys) while it serves; each violation a line on stdout, exit 1

Scopes: ${SCOPES.join(', ')}

Configuration comes from the environment (the same for every command):
${describeVariables()
  .map((v) => `  ${v.name.padEnd(20)} ${v.allowed}`)
  .join('\n')}
`

/** A long command, traced when the OTEL_* variables turn tracing on (only then is the SDK loaded). */
async function traced(name: string, io: CliIo, run: () => Promise<void>): Promise<void> {
  const config = loadConfig(io.env)
  if (!tracingEnabled(config)) return run()
  return (await import('../tracing/command-span.js')).traceCommand(config, name, run)
}

async function command(argv: string[], io: CliIo): Promise<void> {
  const [name, ...args] = argv
  switch (name) {
    case 'serve': {
      const { values } = parseCommand('serve', args, { workers: { type: 'string' } }, 0)
      const env = values.workers === undefined ? io.env : { ...io.env, WORKERS: values.workers }
      const { serve } = await import('../server.js')
      await serve(loadConfig(env))
      return
    }
    case 'migrate': {
      parseCommand('migrate', args, {}, 0)
      const applied = await withStorage(io, async (storage) => storage.migrationsApplied)
      say(io, applied.length ? `Applied migrations: ${applied.join(', ')}` : 'The database is up to date.')
      return
    }
    case 'keys':
      return keysCommand(args, io)
    case 'import':
      return traced('import', io, () => importCommand(args, io))
    case 'webhooks':
      return webhooksCommand(args, io)
    case 'adjust':
      return adjustCommand(args, io)
    case 'batch':
      return batchCommand(args, io)
    case 'transfer':
      return transferCommand(args, io)
    case 'stock':
      return stockCommand(args, io)
    case 'locations':
      return locationsCommand(args, io)
    case 'holds':
      return holdsCommand(args, io)
    case 'history':
      return historyCommand(args, io)
    case 'ledger':
      return ledgerCommand(args, io)
    case 'deprecations':
      return deprecationsCommand(args, io)
    case 'backup':
      return traced('backup', io, () => backupCommand(args, io))
    case 'restore':
      return restoreCommand(args, io)
    case 'check':
      return traced('check', io, () => checkCommand(args, io))
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      if (name !== undefined) parseCommand(name, args, {}, 0)
      io.stdout.write(USAGE)
      return
    default:
      throw /^-./.test(name) ? unknownOption('', name) : unknownCommand('', name)
  }
}

/**
 * Runs one `petstore` command line and returns its exit code: 0 done, 1 refused or failed, 2 a bad
 * command line or configuration. Every failure is a message on stderr, never a throw.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    await command(argv, io)
    return 0
  } catch (error) {
    if (error instanceof ConfigError) {
      say(io, `Invalid configuration:\n${error.message}`)
      return 2
    }
    if (error instanceof UsageError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')) {
      say(io, `${(error as Error).message}\n\n${USAGE}`)
      return 2
    }
    if (error instanceof ViolationsFound) {
      say(io, error.message)
      return 1
    }
    if (error instanceof DomainError || error instanceof StorageOpenError) {
      say(io, `Error: ${error.message}`)
      return 1
    }
    // A driver's error may quote the connection URL it was given.
    say(io, maskUrl(`Unexpected failure: ${(error as Error).stack ?? String(error)}`))
    return 1
  }
}
