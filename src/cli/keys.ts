import { parseArgs } from 'node:util'
import { KeysService } from '../keys/keys.service.js'
import { type CliIo, say, table, UsageError, withStorage } from './io.js'

/** `petstore keys create --name NAME | list | revoke NAME_OR_ID`: the token is the only thing on stdout. */
export async function keysCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { name: { type: 'string' } }, allowPositionals: true })
  const [sub, target] = positionals
  await withStorage(io, async (storage) => {
    const service = new KeysService(storage)
    if (sub === 'create' && values.name !== undefined && !target) {
      const { key, token } = await service.create(values.name)
      say(io, `Created key ${key.id} '${key.name}'. Store the token now: it is not shown again.`)
      io.stdout.write(`${token}\n`)
    } else if (sub === 'list' && !target) {
      const rows = await service.list()
      io.stdout.write(
        table(
          ['ID', 'NAME', 'CREATED', 'LAST USED', 'REVOKED'],
          rows.map((k) => [k.id, k.name, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-']),
        ),
      )
    } else if (sub === 'revoke' && target) {
      const key = await service.revoke(target)
      say(io, `Revoked key ${key.id} '${key.name}'.`)
    } else {
      throw new UsageError('keys: use keys create --name NAME | keys list | keys revoke NAME_OR_ID')
    }
  })
}
