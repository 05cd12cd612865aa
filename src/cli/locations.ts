import { CLI_ACTOR, LOCATION_LIMITS, MAX_QUANTITY, PET_STATUSES, type PetStatus } from '../domain.js'
import { NotFoundError } from '../errors.js'
import { parseInt64 } from '../int64.js'
import { changedEntryJson, levelJson } from '../inventory/inventory.json.js'
import { NoteSchema } from '../inventory/inventory.schema.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { MAX_LOCATION_ID } from '../http/location-id.schema.js'
import { locationJson } from '../locations/location.json.js'
import { LocationCreateSchema } from '../locations/location.schema.js'
import { LocationsService } from '../locations/locations.service.js'
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../paging.js'
import { createValidator, describeValidationError, excerpt } from '../validation.js'
import {
  type CliIo,
  escapeCell,
  parseCommand,
  parseCommandWithNegatives,
  parseSubcommand,
  say,
  table,
  UsageError,
  withStorage,
} from './io.js'

const USAGE =
  'locations: use locations list [--json] | locations add NAME | locations rename ID NAME | locations deactivate ID | ' +
  `locations activate ID | locations stock ID [--status S] [--limit N] [--after PETID] [--json] (S one of ${PET_STATUSES.join(', ')})`
const STOCK_USAGE = 'stock: use stock PETID [--json], PETID a decimal int64'
const TRANSFER_USAGE =
  `transfer: use transfer PETID QUANTITY --from ID --to ID [--note TEXT], PETID a decimal int64, ` +
  `QUANTITY from 1 to ${MAX_QUANTITY}, ID a location's id`

/** Each subcommand's options. */
const OPTIONS = {
  list: { json: { type: 'boolean' } },
  add: {},
  rename: {},
  deactivate: {},
  activate: {},
  stock: { status: { type: 'string' }, limit: { type: 'string' }, after: { type: 'string' }, json: { type: 'boolean' } },
} as const

const validator = createValidator([])
// The API's rules for a name: LocationsService.create checks only its length and blanks, and update nothing.
const validateName = validator.compile(LocationCreateSchema.properties.name)
const validateNote = validator.compile(NoteSchema)

/** NAME as the API takes it, or a refusal naming the command. */
function locationName(command: string, name: string): string {
  if (!validateName(name)) {
    throw new UsageError(
      `${command}: NAME must be 1 to ${LOCATION_LIMITS.nameLength} characters, not only spaces, no control characters (got ${excerpt(name)})`,
    )
  }
  return name
}

/** A location's id as a path names it: a decimal int64 (one that names no location is the service's "No location"). */
export function locationIdArg(command: string, what: string, text: string): bigint {
  const id = parseInt64(text)
  if (id === undefined) throw new UsageError(`${command}: ${what} must be a decimal int64 (got ${excerpt(text)})`)
  return id
}

/**
 * A location named by a write (`--from`, `--to`, `--location`): a number for the service, or "No
 * location N" for an int64 no location can have (ids are from 1 to MAX_LOCATION_ID), as the HTTP
 * path answers it.
 */
export function writtenLocationId(id: bigint): number {
  if (id < 1n || id > BigInt(MAX_LOCATION_ID)) throw new NotFoundError(`No location ${id}`)
  return Number(id)
}

/**
 * `petstore locations list [--json] | add NAME | rename ID NAME | deactivate ID | activate ID |
 * stock ID [--status S] [--limit N] [--after PETID] [--json]`: the locations, as GET /v1/locations
 * shows them; one created or changed, printed as the API's JSON (POST and PATCH /v1/locations...);
 * and a page of one location's stock, by petId, as GET /v1/locations/{id}/inventory pages it.
 */
export async function locationsCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('locations', argv, OPTIONS, USAGE)
  const command = `locations ${sub}`
  if (sub === 'list') {
    const { values } = parseCommand(command, args, OPTIONS.list, 0)
    const locations = await withStorage(io, (storage) => new LocationsService(storage).list())
    if (values.json) {
      io.stdout.write(`[${locations.map(locationJson).join(',')}]\n`)
      return
    }
    io.stdout.write(
      table(
        ['ID', 'NAME', 'ACTIVE', 'CREATED'],
        locations.map((l) => [l.id, escapeCell(l.name), l.active ? 'yes' : 'no', l.createdAt]),
      ),
    )
    return
  }
  if (sub === 'stock') return locationStock(command, args, io)
  if (sub === 'add') {
    const [name] = parseCommand(command, args, OPTIONS.add, 1).positionals
    if (name === undefined) throw new UsageError(USAGE)
    locationName(command, name)
    const created = await withStorage(io, (storage) => new LocationsService(storage).create(name))
    io.stdout.write(`${locationJson(created)}\n`)
    return
  }
  const [target, name] = parseCommand(command, args, OPTIONS[sub], sub === 'rename' ? 2 : 1).positionals
  if (target === undefined || (sub === 'rename' && name === undefined)) throw new UsageError(USAGE)
  const id = locationIdArg(command, 'ID', target)
  const update = sub === 'rename' ? { name: locationName(command, name!) } : { active: sub === 'activate' }
  const location = await withStorage(io, (storage) => new LocationsService(storage).update(id, update))
  io.stdout.write(`${locationJson(location)}\n`)
}

/** `locations stock ID [--status S] [--limit N] [--after PETID] [--json]`: one page, and on stderr how to read the next. */
async function locationStock(command: string, args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommand(command, args, OPTIONS.stock, 1)
  const [target] = positionals
  if (target === undefined) throw new UsageError(USAGE)
  const id = locationIdArg(command, 'ID', target)
  const status = values.status
  if (status !== undefined && !(PET_STATUSES as readonly string[]).includes(status))
    throw new UsageError(`${command}: --status must be one of: ${PET_STATUSES.join(', ')} (got ${excerpt(status)})`)
  const limit = values.limit === undefined ? DEFAULT_PAGE_SIZE : Number(parseInt64(values.limit) ?? 0n)
  if (limit < 1 || limit > MAX_PAGE_SIZE)
    throw new UsageError(`${command}: --limit must be an integer from 1 to ${MAX_PAGE_SIZE} (got ${excerpt(values.limit!)})`)
  const after = values.after === undefined ? undefined : parseInt64(values.after)
  if (values.after !== undefined && after === undefined)
    throw new UsageError(`${command}: --after must be a decimal int64, the last PETID of the page before (got ${excerpt(values.after)})`)
  // One more than the page: whether another page follows, as the API's Link says.
  const rows = await withStorage(io, (storage) =>
    new LocationsService(storage).stock(id, { after, limit: limit + 1, status: status as PetStatus | undefined }),
  )
  const levels = rows.slice(0, limit)
  if (values.json) io.stdout.write(`[${levels.map(levelJson).join(',')}]\n`)
  else
    io.stdout.write(
      table(
        ['PETID', 'QUANTITY', 'STATUS'],
        levels.map((l) => [l.petId, l.quantity, l.status]),
      ),
    )
  if (rows.length > limit) {
    const last = levels.at(-1)!.petId
    // A negative PETID must be joined to its option, or it would read as an option itself.
    const next = [
      `locations stock ${id}`,
      last < 0n ? `--after=${last}` : `--after ${last}`,
      ...(values.limit === undefined ? [] : [`--limit ${limit}`]),
      ...(status === undefined ? [] : [`--status ${status}`]),
      ...(values.json ? ['--json'] : []),
    ]
    say(io, `More stock after pet ${last}: petstore ${next.join(' ')}`)
  }
}

/** `petstore stock PETID [--json]`: one pet's stock at each location (the default one first), and its total. */
export async function stockCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommandWithNegatives('stock', args, { json: { type: 'boolean' } }, 1)
  if (positionals.length < 1) throw new UsageError(STOCK_USAGE)
  const petId = parseInt64(positionals[0]!)
  if (petId === undefined) throw new UsageError(`stock: PETID must be a decimal int64 (got ${excerpt(positionals[0]!)})`)
  const { levels, names } = await withStorage(io, async (storage) => {
    const service = new LocationsService(storage)
    const levels = await service.petStock(petId)
    return { levels, names: new Map((await service.list()).map((l) => [l.id, l.name])) }
  })
  if (values.json) {
    io.stdout.write(`[${levels.map(levelJson).join(',')}]\n`)
    return
  }
  const total = levels.reduce((sum, l) => sum + l.quantity, 0)
  io.stdout.write(
    table(
      ['LOCATION', 'NAME', 'QUANTITY'],
      [...levels.map((l) => [l.locationId, escapeCell(names.get(l.locationId) ?? '-'), l.quantity]), ['TOTAL', '-', total]],
    ),
  )
}

/**
 * `petstore transfer PETID QUANTITY --from ID --to ID [--note TEXT]`: moves units of a pet between
 * two locations as POST /v1/inventory/{petId}/transfers does (one transaction, two ledger rows
 * sharing a transfer id), and prints its answer as the API's JSON.
 */
export async function transferCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommandWithNegatives(
    'transfer',
    args,
    { from: { type: 'string' }, to: { type: 'string' }, note: { type: 'string' } },
    2,
  )
  if (positionals.length < 2 || values.from === undefined || values.to === undefined) throw new UsageError(TRANSFER_USAGE)
  const petId = parseInt64(positionals[0]!)
  if (petId === undefined) throw new UsageError(`transfer: PETID must be a decimal int64 (got ${excerpt(positionals[0]!)})`)
  const quantity = parseInt64(positionals[1]!)
  if (quantity === undefined || quantity < 1n || quantity > BigInt(MAX_QUANTITY))
    throw new UsageError(`transfer: QUANTITY must be an integer from 1 to ${MAX_QUANTITY} (got ${excerpt(positionals[1]!)})`)
  const from = locationIdArg('transfer', '--from', values.from)
  const to = locationIdArg('transfer', '--to', values.to)
  if (from === to) throw new UsageError(`transfer: --to must be another location than --from (both are ${from})`)
  const note = values.note
  if (note !== undefined && !validateNote(note))
    throw new UsageError(`transfer: ${describeValidationError(validateNote.errors![0]!, '--note')}`)
  const move = { fromLocationId: writtenLocationId(from), toLocationId: writtenLocationId(to), quantity: Number(quantity), note }
  const answer = await withStorage(io, (storage) => new InventoryService(storage).transfer(petId, move, CLI_ACTOR))
  if (answer.error) throw answer.error
  io.stdout.write(`${changedEntryJson(answer.entries[0]!)}\n`)
}
