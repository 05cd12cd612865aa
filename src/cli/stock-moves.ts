import { isLosslessNumber, parse } from 'lossless-json'
import { stat } from 'node:fs/promises'
import { CLI_ACTOR, DELTA_REASONS, type DeltaReason, MAX_BATCH_CHANGES } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { openRegularFile } from '../import/regular-file.js'
import { parseInt64 } from '../int64.js'
import { changedEntryJson } from '../inventory/inventory.json.js'
import { NoteSchema } from '../inventory/inventory.schema.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { InventoryBatchChangeSchema, stockChange } from '../inventory/stock-moves.schema.js'
import type { StockChange } from '../stock/writes.js'
import { createValidator, describeValidationError, excerpt } from '../validation.js'
import { type CliIo, parseCommand, parseCommandWithNegatives, UsageError, withStorage } from './io.js'
import { locationIdArg, writtenLocationId } from './locations.js'

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

const ADJUST_USAGE =
  `adjust: use adjust PETID DELTA [--reason R] [--note TEXT] [--location ID], PETID a decimal int64, DELTA a non-zero int32, ` +
  `R one of ${DELTA_REASONS.join(', ')}, ID a location's id (the default location when absent)`
const BATCH_USAGE = 'batch: use batch FILE, or batch - to read the changes from stdin'

/**
 * The most bytes a batch file may hold: four times a batch request's body limit (2 MiB, which 1,000
 * changes with notes at their limit fit as compact JSON), room for a file written with indentation.
 * A larger file is refused as soon as it passes the limit, before more of it is held.
 */
export const BATCH_FILE_LIMIT = 8 * 1024 * 1024

const validator = createValidator([])
const validateNote = validator.compile(NoteSchema)
const validateChange = validator.compile(InventoryBatchChangeSchema)

/**
 * `petstore adjust PETID DELTA [--reason R] [--note TEXT] [--location ID]`: adds DELTA (negative:
 * removes) to the entry, at location ID when given, as POST /v1/inventory/{petId}/adjustments does,
 * and prints what it left as the API's JSON: the pet's entry, or with --location that location's stock.
 */
export async function adjustCommand(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommandWithNegatives(
    'adjust',
    args,
    { reason: { type: 'string' }, note: { type: 'string' }, location: { type: 'string' } },
    2,
  )
  if (positionals.length < 2) throw new UsageError(ADJUST_USAGE)
  const petId = parseInt64(positionals[0]!)
  if (petId === undefined) throw new UsageError(`adjust: PETID must be a decimal int64 (got ${excerpt(positionals[0]!)})`)
  const exact = parseInt64(positionals[1]!)
  if (exact === undefined || exact === 0n || exact < INT32_MIN || exact > INT32_MAX) {
    throw new UsageError(`adjust: DELTA must be a non-zero int32, from ${INT32_MIN} to ${INT32_MAX} (got ${excerpt(positionals[1]!)})`)
  }
  const reason = values.reason
  if (reason !== undefined && !(DELTA_REASONS as readonly string[]).includes(reason)) {
    throw new UsageError(`adjust: --reason must be one of: ${DELTA_REASONS.join(', ')} (got ${excerpt(reason)})`)
  }
  const note = values.note
  if (note !== undefined && !validateNote(note))
    throw new UsageError(`adjust: ${describeValidationError(validateNote.errors![0]!, '--note')}`)
  const location = values.location === undefined ? undefined : locationIdArg('adjust', '--location', values.location)
  const locationId = location === undefined ? undefined : writtenLocationId(location)
  const answer = await withStorage(io, (storage) =>
    new InventoryService(storage).adjust(petId, Number(exact), CLI_ACTOR, { reason: reason as DeltaReason | undefined, note, locationId }),
  )
  if (answer.error) throw answer.error
  io.stdout.write(`${changedEntryJson(answer.entries[0]!)}\n`)
}

/**
 * `petstore batch FILE|-`: the changes of FILE (or stdin), each as POST /v1/inventory/batch takes it
 * (a set or a delta, at `locationId` or the default location, or a transfer), applied in order, all
 * or nothing, as one batch; prints `{"batchId":...,"entries":[...]}` as the API does.
 */
export async function batchCommand(args: string[], io: CliIo): Promise<void> {
  const [source] = parseCommand('batch', args, {}, 1).positionals
  if (!source) throw new UsageError(BATCH_USAGE)
  const name = source === '-' ? 'stdin' : source
  const changes = batchChanges(decode(await readBounded(source, io), name), name)
  const answer = await withStorage(io, (storage) => new InventoryService(storage).batch(changes, CLI_ACTOR))
  if (answer.error) throw answer.error
  io.stdout.write(`{"batchId":"${answer.batchId}","entries":[${answer.entries.map(changedEntryJson).join(',')}]}\n`)
}

/** The bytes of FILE, or of stdin for `-`, refused as soon as they pass BATCH_FILE_LIMIT. */
async function readBounded(source: string, io: CliIo): Promise<Buffer> {
  let chunks: AsyncIterable<Buffer | string>
  let close = async () => {}
  if (source === '-') {
    chunks = io.stdin ?? process.stdin
  } else {
    // A FIFO or a device is refused with this command's wording; openRegularFile checks the handle again.
    const stats = await stat(source).catch(() => undefined)
    if (stats !== undefined && !stats.isFile()) {
      throw new InvalidInputError(`Cannot read ${source}: not a regular file; batch reads a regular file, or stdin with -`)
    }
    const file = await openRegularFile(source)
    chunks = file.createReadStream({ autoClose: false })
    close = () => file.close()
  }
  const held: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of chunks) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
      size += bytes.length
      if (size > BATCH_FILE_LIMIT) {
        throw new InvalidInputError(
          `${source === '-' ? 'stdin' : source} is larger than the limit of ${BATCH_FILE_LIMIT / 1024 / 1024} MiB a batch file may hold`,
        )
      }
      held.push(bytes)
    }
  } finally {
    await close()
  }
  return Buffer.concat(held)
}

/** UTF-8 text, a byte order mark dropped: bytes that are not UTF-8 are refused rather than replaced. */
function decode(bytes: Buffer, name: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new InvalidInputError(`${name} is not valid UTF-8`)
  }
}

/**
 * JSON with every number kept as its exact text (a LosslessNumber), so a petId beyond 2^53 stays
 * exact and 1.0 or 1e3 can be told from 1, as the import and the API read them. A key repeated with
 * another value is refused; the parser's messages are kept free of control characters.
 */
function parseJson(text: string): unknown {
  try {
    return parse(text, undefined, {
      onDuplicateKey: ({ key }) => {
        throw new SyntaxError(`the key ${excerpt(key)} is repeated`)
      },
    })
  } catch (error) {
    const message = String((error as Error).message).replace(/\p{Cc}/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)
    throw new InvalidInputError(`Not valid JSON: ${message}`)
  }
}

const SHAPE = '{"changes":[...]}, an array of changes, or one change per line (NDJSON)'

/**
 * The changes a batch file holds: a JSON object `{"changes":[...]}`, a JSON array, or NDJSON (one
 * change object per line, blank lines skipped). NDJSON is recognised by its first line, a change on
 * its own. Each change is checked as the API checks it (its schema, an exact int64 petId, then the
 * rules of stockChange), and a refusal names it by its place: `changes[17]`.
 */
export function batchChanges(text: string, name: string): StockChange[] {
  const lines = text.split('\n')
  const first = lines.findIndex((line) => line.trim() !== '')
  if (first === -1) throw new InvalidInputError(`${name} holds no changes: a batch has 1 to ${MAX_BATCH_CHANGES}`)
  let changes: unknown[]
  if (isChangeLine(lines[first]!)) {
    changes = []
    for (const [i, line] of lines.entries()) {
      if (line.trim() === '') continue
      try {
        changes.push(parseJson(line))
      } catch (error) {
        throw new InvalidInputError(`line ${i + 1}: ${(error as Error).message}`)
      }
      if (changes.length > MAX_BATCH_CHANGES) break
    }
  } else {
    const document = parseJson(text)
    if (Array.isArray(document)) changes = document
    else if (isObject(document) && Object.hasOwn(document, 'changes')) {
      const other = Object.keys(document).find((key) => key !== 'changes')
      if (other !== undefined) throw new InvalidInputError(`${name} has unknown field ${excerpt(other)}; it must be ${SHAPE}`)
      if (!Array.isArray(document.changes)) throw new InvalidInputError('changes must be an array')
      changes = document.changes
    } else throw new InvalidInputError(`${name} must be ${SHAPE}`)
  }
  if (changes.length === 0) throw new InvalidInputError(`${name} holds no changes: a batch has 1 to ${MAX_BATCH_CHANGES}`)
  if (changes.length > MAX_BATCH_CHANGES) {
    throw new InvalidInputError(`${name} holds more than ${MAX_BATCH_CHANGES} changes, the most a batch may hold: split it`)
  }
  // Every change's shape first, then the rules across its fields, in the order the API checks them.
  const fields = changes.map((change, i) => {
    if (!isObject(change)) throw new InvalidInputError(`changes[${i}] must be an object {petId, quantity or delta, ...}`)
    // `+ 0` folds -0 into 0; petId is read exactly below, once the schema said it is an integer.
    const plain = Object.fromEntries(Object.entries(change).map(([k, v]) => [k, isLosslessNumber(v) ? Number(v.value) + 0 : v]))
    if (!validateChange(plain)) throw new InvalidInputError(describeValidationError(validateChange.errors![0]!, `changes[${i}]`))
    return plain as Parameters<typeof stockChange>[1]
  })
  return fields.map((body, i) => {
    const raw = (changes[i] as Record<string, unknown>).petId
    const petId = isLosslessNumber(raw) ? parseInt64(raw.value) : undefined
    if (petId === undefined) throw new InvalidInputError(`changes[${i}].petId must be a decimal int64 integer (no fraction or exponent)`)
    return stockChange(petId, body, `changes[${i}]`)
  })
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value)

/** Whether a line is a change on its own (NDJSON's first line): an object that is not a batch's `{"changes":...}`. */
function isChangeLine(line: string): boolean {
  let value: unknown
  try {
    value = parseJson(line)
  } catch {
    return false
  }
  return isObject(value) && !Object.hasOwn(value, 'changes')
}
