import { changeJson } from '../inventory/inventory.json.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { parseInt64 } from '../int64.js'
import { MAX_PAGE_SIZE } from '../paging.js'
import { deprecatedCallsJson } from '../pets/pet.json.js'
import { PetsService } from '../pets/pets.service.js'
import { type CliIo, escapeCell, parseCommand, table, UsageError, unexpectedArgument, withStorage } from './io.js'

/** `petstore deprecations [--json]`: calls of the deprecated pet lookup per key. */
export async function deprecationsCommand(args: string[], io: CliIo): Promise<void> {
  const { values } = parseCommand('deprecations', args, { json: { type: 'boolean' } }, 0)
  const rows = await withStorage(io, (storage) => new PetsService(storage).deprecatedCalls())
  if (values.json) {
    io.stdout.write(`${JSON.stringify(rows.map(deprecatedCallsJson))}\n`)
    return
  }
  io.stdout.write(
    table(
      ['KEY', 'NAME', 'CALLS', 'FIRST CALL', 'LAST CALL'],
      rows.map((r) => [r.keyId, r.name, r.calls, r.firstCall, r.lastCall]),
    ),
  )
}

/** `petstore history PETID [--limit N] [--json]`: one pet's stock changes, newest first. */
export async function historyCommand(args: string[], io: CliIo): Promise<void> {
  // A negative petId is an argument, not an option: parseArgs would read -5 as a flag. The arguments'
  // places in `args` keep their order, so that the one refused is the one past the first.
  const negative = (a: string, i: number) => /^-\d+$/.test(a) && args[i - 1] !== '--limit'
  const kept = args.flatMap((a, i) => (negative(a, i) ? [] : [i]))
  const { values, tokens } = parseCommand(
    'history',
    kept.map((i) => args[i]!),
    { limit: { type: 'string' }, json: { type: 'boolean' } },
    Number.POSITIVE_INFINITY,
  )
  const positionals = [
    ...args.flatMap((a, i) => (negative(a, i) ? [{ at: i, value: a }] : [])),
    ...tokens.flatMap((t) => (t.kind === 'positional' ? [{ at: kept[t.index]!, value: t.value }] : [])),
  ]
    .sort((a, b) => a.at - b.at)
    .map((p) => p.value)
  if (positionals.length > 1) throw unexpectedArgument('history', positionals[1]!)
  const petId = positionals.length === 1 ? parseInt64(positionals[0]!) : undefined
  const limit = Number(values.limit === undefined ? 50n : (parseInt64(values.limit) ?? 0n))
  if (petId === undefined || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new UsageError(`history: use history PETID [--limit N] [--json], PETID a decimal int64, N from 1 to ${MAX_PAGE_SIZE}`)
  }
  const changes = await withStorage(io, (storage) => new InventoryService(storage).history(petId, limit))
  if (values.json) {
    io.stdout.write(`[${changes.map(changeJson).join(',')}]\n`)
    return
  }
  const cell = (value: unknown) => (value === null ? '-' : String(value))
  io.stdout.write(
    table(
      ['SEQ', 'AT', 'REASON', 'FROM', 'TO', 'ORDER', 'KEY', 'REQUEST', 'NOTE'],
      changes.map((c) => [
        ...[c.seq, c.at, c.reason, c.previousQuantity, c.quantity, c.orderId, c.keyId, c.requestId].map(cell),
        c.note === null ? '-' : escapeCell(c.note),
      ]),
    ),
  )
}
