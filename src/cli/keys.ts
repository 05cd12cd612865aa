import { parseArgs } from 'node:util'
import { SCOPES } from '../domain.js'
import { KeysService, parseScopeList } from '../keys/keys.service.js'
import { type CliIo, say, table, UsageError, withStorage } from './io.js'

/**
 * `petstore keys create --name NAME [--scopes A,B] | list | revoke NAME_OR_ID`: the token is the only
 * thing on stdout. Without --scopes a key gets every scope.
 */
export async function keysCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { name: { type: 'string' }, scopes: { type: 'string' } },
    allowPositionals: true,
  })
  const [sub, target] = positionals
  // A typo in --scopes is refused before the database is opened.
  const scopes = values.scopes === undefined ? SCOPES : parseScopeList(values.scopes)
  await withStorage(io, async (storage) => {
    const service = new KeysService(storage)
    if (sub === 'create' && values.name !== undefined && !target) {
      const { key, token } = await service.create(values.name, scopes)
      say(io, `Created key ${key.id} '${key.name}' with scopes ${key.scopes.join(',')}. Store the token now: it is not shown again.`)
      io.stdout.write(`${token}\n`)
    } else if (sub === 'list' && !target) {
      const rows = await service.list()
      io.stdout.write(
        table(
          ['ID', 'NAME', 'SCOPES', 'CREATED', 'LAST USED', 'REVOKED'],
          rows.map((k) => [k.id, k.name, k.scopes.join(','), k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-']),
        ),
      )
    } else if (sub === 'revoke' && target) {
      const key = await service.revoke(target)
      say(io, `Revoked key ${key.id} '${key.name}'.`)
    } else {
      throw new UsageError('keys: use keys create --name NAME [--scopes SCOPE,...] | keys list | keys revoke NAME_OR_ID')
    }
  })
}
