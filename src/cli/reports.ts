import { changeJson } from '../inventory/inventory.json.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { parseInt64 } from '../int64.js'
import { MAX_PAGE_SIZE } from '../paging.js'
import { deprecatedCallsJson } from '../pets/pet.json.js'
import { PetsService } from '../pets/pets.service.js'
import { type CliIo, escapeCell, parseCommand, parseCommandWithNegatives, table, UsageError, withStorage } from './io.js'

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
  const { values, positionals } = parseCommandWithNegatives('history', args, { limit: { type: 'string' }, json: { type: 'boolean' } }, 1)
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
  // With several locations, the rows' location (FROM and TO are its quantities) and a transfer's or
  // hold's id; a store with one location sees the table as before.
  const located = changes.some((c) => c.locationId !== undefined || c.transferId !== undefined)
  io.stdout.write(
    table(
      [
        'SEQ',
        'AT',
        'REASON',
        ...(located ? ['LOCATION'] : []),
        'FROM',
        'TO',
        'ORDER',
        'BATCH',
        ...(located ? ['TRANSFER'] : []),
        'KEY',
        'REQUEST',
        'NOTE',
      ],
      changes.map((c) => [
        // A batch (a transfer) by its id's first 8 characters: enough to tell neighbours apart (--json has it whole).
        ...[
          c.seq,
          c.at,
          c.reason,
          ...(located ? [c.locationId ?? 1] : []),
          c.previousQuantity,
          c.quantity,
          c.orderId,
          c.batchId?.slice(0, 8) ?? null,
          ...(located ? [c.transferId?.slice(0, 8) ?? null] : []),
          c.keyId,
          c.requestId,
        ].map(cell),
        c.note === null ? '-' : escapeCell(c.note),
      ]),
    ),
  )
}
