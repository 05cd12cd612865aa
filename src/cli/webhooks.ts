import { loadConfig } from '../config.js'
import { parseInt64 } from '../int64.js'
import { webhookJson, webhookState } from '../webhooks/webhook.json.js'
import { WebhooksService } from '../webhooks/webhooks.service.js'
import { type CliIo, escapeCell, parseCommand, parseSubcommand, say, table, UsageError, withStorage } from './io.js'

const USAGE = 'webhooks: use webhooks add URL [--description TEXT] | webhooks list [--json] | webhooks remove ID | webhooks enable ID'

/** Each subcommand's options. */
const OPTIONS = { add: { description: { type: 'string' } }, list: { json: { type: 'boolean' } }, remove: {}, enable: {} } as const

/**
 * `petstore webhooks add URL [--description TEXT] | list [--json] | remove ID | enable ID`. `add`
 * prints the signing secret alone on stdout, this once. Running servers take a new or enabled
 * subscription up at their next lease renewal (WEBHOOK_LEASE_MS / 3).
 */
export async function webhooksCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('webhooks', argv, OPTIONS, USAGE)
  const command = `webhooks ${sub}`
  let target: string | undefined
  let description: string | null = null
  let json = false
  if (sub === 'add') {
    const { values, positionals } = parseCommand(command, args, OPTIONS.add, 1)
    target = positionals[0]
    description = values.description ?? null
  } else if (sub === 'list') {
    json = parseCommand(command, args, OPTIONS.list, 0).values.json ?? false
  } else {
    target = parseCommand(command, args, OPTIONS[sub], 1).positionals[0]
  }
  if (sub !== 'list' && target === undefined) throw new UsageError(USAGE)
  const id = sub === 'remove' || sub === 'enable' ? parseInt64(target!) : undefined
  if ((sub === 'remove' || sub === 'enable') && id === undefined) throw new UsageError(`webhooks ${sub}: ID must be a decimal integer`)
  const config = loadConfig(io.env)
  await withStorage(io, async (storage) => {
    const service = new WebhooksService(storage, {
      allowPrivate: config.webhookAllowPrivate,
      httpsOnly: config.environment === 'production',
      brokerAllowedHosts: config.brokerAllowedHosts,
    })
    if (sub === 'add') {
      const { webhook, secret } = await service.create(target!, description)
      say(
        io,
        `Created webhook ${webhook.id} to ${webhook.url}, from the ledger's seq ${webhook.deliveredThrough} on. Store the secret now: it is not shown again.`,
      )
      io.stdout.write(`${secret}\n`)
    } else if (sub === 'list') {
      const webhooks = await service.list()
      if (json) {
        io.stdout.write(`[${webhooks.map(webhookJson).join(',')}]\n`)
        return
      }
      io.stdout.write(
        table(
          ['ID', 'STATE', 'DELIVERED THROUGH', 'LAST SUCCESS', 'NEXT ATTEMPT', 'LAST ERROR', 'URL', 'DESCRIPTION'],
          webhooks.map((w) => [
            w.id,
            webhookState(w),
            w.deliveredThrough,
            w.lastSuccessAt ?? '-',
            w.nextAttemptAt ?? '-',
            w.lastError === null ? '-' : escapeCell(w.lastError),
            escapeCell(w.url),
            w.description === null ? '-' : escapeCell(w.description),
          ]),
        ),
      )
    } else if (sub === 'remove') {
      await service.remove(id!)
      say(io, `Removed webhook ${id}.`)
    } else {
      const webhook = await service.enable(id!)
      say(io, `Enabled webhook ${webhook.id}: delivery resumes after seq ${webhook.deliveredThrough}.`)
    }
  })
}
