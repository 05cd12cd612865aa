import { SCOPES } from '../domain.js'
import { KeysService, parseScopeList } from '../keys/keys.service.js'
import { type CliIo, parseCommand, parseSubcommand, say, table, UsageError, withStorage } from './io.js'

const USAGE = 'keys: use keys create --name NAME [--scopes SCOPE,...] [--locations ID,...] | keys list | keys revoke NAME_OR_ID'

/** Each subcommand's options. */
const OPTIONS = {
  create: { name: { type: 'string' }, scopes: { type: 'string' }, locations: { type: 'string' } },
  list: {},
  revoke: {},
} as const

/** `--locations 2,3`: location ids, each a decimal integer (the service checks they are there and active). */
function parseLocationList(text: string): number[] {
  const ids = text.split(',').map((id) => id.trim())
  const bad = ids.find((id) => !/^[1-9]\d{0,9}$/.test(id))
  if (bad !== undefined) throw new UsageError(`keys create: --locations takes location ids, comma-separated; '${bad}' is not one`)
  return ids.map(Number)
}

/**
 * `petstore keys create --name NAME [--scopes A,B] | list | revoke NAME_OR_ID`: the token is the only
 * thing on stdout. Without --scopes a key gets every scope.
 */
export async function keysCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('keys', argv, OPTIONS, USAGE)
  if (sub === 'create') {
    const { values } = parseCommand('keys create', args, OPTIONS.create, 0)
    if (values.name === undefined) throw new UsageError(USAGE)
    const name = values.name
    // A typo in --scopes is refused before the database is opened.
    const scopes = values.scopes === undefined ? SCOPES : parseScopeList(values.scopes)
    const locations = values.locations === undefined ? undefined : parseLocationList(values.locations)
    await withStorage(io, async (storage) => {
      const { key, token } = await new KeysService(storage).create(name, scopes, locations)
      const held =
        key.locations === undefined ? '' : `, held to location${key.locations.length === 1 ? '' : 's'} ${key.locations.join(',')}`
      say(io, `Created key ${key.id} '${key.name}' with scopes ${key.scopes.join(',')}${held}. Store the token now: it is not shown again.`)
      io.stdout.write(`${token}\n`)
    })
  } else if (sub === 'list') {
    parseCommand('keys list', args, OPTIONS.list, 0)
    const rows = await withStorage(io, (storage) => new KeysService(storage).list())
    io.stdout.write(
      table(
        ['ID', 'NAME', 'SCOPES', 'CREATED', 'LAST USED', 'REVOKED', 'LOCATIONS'],
        rows.map((k) => [
          k.id,
          k.name,
          k.scopes.join(','),
          k.createdAt,
          k.lastUsedAt ?? '-',
          k.revokedAt ?? '-',
          k.locations?.join(',') ?? 'all',
        ]),
      ),
    )
  } else {
    const [target] = parseCommand('keys revoke', args, OPTIONS.revoke, 1).positionals
    if (!target) throw new UsageError(USAGE)
    const key = await withStorage(io, (storage) => new KeysService(storage).revoke(target))
    say(io, `Revoked key ${key.id} '${key.name}'.`)
  }
}
