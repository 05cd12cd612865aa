import { parse as parseCsv } from 'csv-parse'
import { isLosslessNumber } from 'lossless-json'
import type { FileHandle } from 'node:fs/promises'
import { extname } from 'node:path'
import type { Readable } from 'node:stream'
import { InvalidInputError } from '../errors.js'
import { IMPORT_RECORD_LIMIT, inChunks, type ImportSource } from '../import/import-source.js'
import { jsonArrayObjects } from '../import/json-array.js'
import { openRegularFile } from '../import/regular-file.js'
import { parseInt64 } from '../int64.js'
import type { ImportRecord } from '../domain.js'
import { describeValidationError, excerpt, type Validate } from '../validation.js'
import type { InventoryItem, PetStatus } from '../domain.js'

/** Records handed on per step: the file is read, checked and written a chunk at a time. */
export const IMPORT_CHUNK_SIZE = 5000

interface RawRecord {
  position: number
  petId: unknown
  fields: Record<string, unknown>
}

const COLUMNS = ['petId', 'quantity', 'status']

/**
 * Opens an inventory file (.json array or .csv with header petId,quantity,status) for streaming: it
 * is parsed as it is read, never whole, and every record is checked with the API's own validator.
 * Memory stays bounded whatever the file's size. Duplicate petIds are the storage's to find (see
 * Storage.importInventory), as they need every earlier record.
 */
export async function openInventoryFile(path: string, validateRecord: Validate): Promise<ImportSource<ImportRecord>> {
  const extension = extname(path).toLowerCase()
  if (extension !== '.json' && extension !== '.csv') {
    throw new InvalidInputError(`Unsupported file type '${extension}': use .json or .csv`)
  }
  const file = await openRegularFile(path)
  const json = extension === '.json'
  const raw = json ? jsonRecords(file) : csvRecords(file)
  const where = json ? (n: number) => `entry ${n}` : (n: number) => `line ${n}`
  return { chunks: inChunks(checked(raw, validateRecord, where), IMPORT_CHUNK_SIZE), where }
}

async function* checked(
  raw: AsyncIterable<RawRecord>,
  validateRecord: Validate,
  where: (n: number) => string,
): AsyncGenerator<ImportRecord> {
  for await (const { position, petId: rawPetId, fields } of raw) {
    const petId = typeof rawPetId === 'string' ? parseInt64(rawPetId) : undefined
    if (petId === undefined) throw new InvalidInputError(`${where(position)}: petId must be a decimal int64 integer`)
    if (!validateRecord(fields)) {
      const problem = describeValidationError(validateRecord.errors![0]!, 'record')
      throw new InvalidInputError(`${where(position)} (petId ${petId}): ${problem}`)
    }
    const item: InventoryItem = { petId, quantity: fields.quantity as number, status: fields.status as PetStatus }
    yield { item, position }
  }
}

async function* jsonRecords(file: FileHandle): AsyncGenerator<RawRecord> {
  for await (const { position, value } of jsonArrayObjects(file, '{petId, quantity, status}')) {
    const { petId, ...rest } = value
    const fields = Object.fromEntries(
      // `+ 0` folds -0 into 0.
      Object.entries(rest).map(([k, v]) => [k, isLosslessNumber(v) ? Number(v.value) + 0 : v]),
    )
    yield { position, petId: isLosslessNumber(petId) ? petId.value : undefined, fields }
  }
}

/**
 * What a CSV parse error says, by its code: never the parser's own message, which quotes the
 * offending bytes of the file.
 */
const CSV_PROBLEMS: Record<string, string> = {
  CSV_MAX_RECORD_SIZE: `the record is larger than the limit of ${IMPORT_RECORD_LIMIT} characters`,
  CSV_RECORD_INCONSISTENT_FIELDS_LENGTH: 'the record does not have one field per header column',
  CSV_RECORD_INCONSISTENT_COLUMNS: 'the record does not have one field per header column',
  CSV_INVALID_CLOSING_QUOTE: 'a quoted field goes on after its closing quote',
  INVALID_OPENING_QUOTE: 'a quote opens in the middle of a field',
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is never closed',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a quoted field goes on after its closing quote',
}

async function* csvRecords(file: FileHandle): AsyncGenerator<RawRecord> {
  let header = false
  const parser = parseCsv({
    bom: true,
    trim: true,
    skip_empty_lines: true,
    info: true,
    // A field or record past the limit is refused as it passes it, so memory stays bounded.
    max_record_size: IMPORT_RECORD_LIMIT,
    columns: (names: string[]) => {
      header = true
      const missing = COLUMNS.filter((c) => !names.includes(c))
      const extra = names.filter((c) => !COLUMNS.includes(c))
      if (missing.length > 0 || extra.length > 0 || names.length !== COLUMNS.length) {
        throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (got ${excerpt(names.join(','), 80)})`)
      }
      return names
    },
  })
  const reading: Readable = file.createReadStream()
  reading.on('error', (error) => parser.destroy(error))
  reading.pipe(parser)
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      const { petId, quantity, ...rest } = record
      // CSV has no types: an integer-looking quantity becomes a number, anything else stays text and fails validation.
      const fields = { ...rest, quantity: quantity !== undefined && /^(0|-?[1-9]\d*)$/.test(quantity) ? Number(quantity) : quantity }
      yield { position: info.lines, petId, fields }
    }
  } catch (error) {
    // The header check's own error may arrive wrapped by the parser.
    const cause = (error as { cause?: unknown }).cause
    if (error instanceof InvalidInputError) throw error
    if (cause instanceof InvalidInputError) throw cause
    const { code, lines } = error as { code?: string; lines?: number }
    const where = lines === undefined ? '' : `line ${lines}: `
    throw new InvalidInputError(
      `Not valid CSV: ${where}${(code && CSV_PROBLEMS[code]) ?? `the parser refused it (${code ?? 'unknown error'})`}`,
    )
  } finally {
    reading.destroy()
  }
  if (!header) throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (the file is empty)`)
}
