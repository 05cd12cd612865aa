import { parse as parseCsv } from 'csv-parse/sync'
import { isLosslessNumber, parse as parseJsonLossless } from 'lossless-json'
import { readFile } from 'node:fs/promises'
import { extname } from 'node:path'
import { InvalidInputError } from '../errors.js'
import { parseInt64 } from '../int64.js'
import type { InventoryItem } from '../storage/storage.js'
import { describeValidationError, type Validate } from '../validation.js'
import type { PetStatus } from './inventory.schema.js'

interface RawRecord {
  /** Where the record is in the file, for error messages: "line 4" or "entry 3". */
  where: string
  petId: unknown
  fields: Record<string, unknown>
}

const COLUMNS = ['petId', 'quantity', 'status']

/**
 * Reads an inventory file (.json array or .csv with header petId,quantity,status) and checks every
 * record with the API's own validator. Throws InvalidInputError naming the first bad record.
 */
export async function readInventoryFile(path: string, validateRecord: Validate): Promise<InventoryItem[]> {
  // A UTF-8 byte order mark is noise from some editors; both readers skip it.
  const text = (await readText(path)).replace(/^\uFEFF/, '')
  const extension = extname(path).toLowerCase()
  const raw =
    extension === '.json' ? jsonRecords(text) : extension === '.csv' ? csvRecords(text) : unsupported(extension)
  const seen = new Map<bigint, string>()
  return raw.map(({ where, petId: rawPetId, fields }) => {
    const petId = typeof rawPetId === 'string' ? parseInt64(rawPetId) : undefined
    if (petId === undefined) throw new InvalidInputError(`${where}: petId must be a decimal int64 integer`)
    const first = seen.get(petId)
    if (first) throw new InvalidInputError(`${where}: petId ${petId} appears twice (first at ${first})`)
    seen.set(petId, where)
    if (!validateRecord(fields)) {
      throw new InvalidInputError(`${where} (petId ${petId}): ${describeValidationError(validateRecord.errors![0]!, 'record')}`)
    }
    return { petId, quantity: fields.quantity as number, status: fields.status as PetStatus }
  })
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable')
    throw new InvalidInputError(`Cannot read ${path}: ${why}`)
  }
}

function unsupported(extension: string): never {
  throw new InvalidInputError(`Unsupported file type '${extension}': use .json or .csv`)
}

// lossless-json keeps every number's text, so petIds beyond 2^53 arrive digit for digit.
function jsonRecords(text: string): RawRecord[] {
  let data: unknown
  try {
    data = parseJsonLossless(text)
  } catch (error) {
    throw new InvalidInputError(`Not valid JSON: ${(error as Error).message}`)
  }
  if (!Array.isArray(data)) throw new InvalidInputError('A JSON import must be an array of {petId, quantity, status}')
  return data.map((entry: unknown, index) => {
    const where = `entry ${index + 1}`
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry) || isLosslessNumber(entry)) {
      throw new InvalidInputError(`${where}: must be an object {petId, quantity, status}`)
    }
    const { petId, ...rest } = entry as Record<string, unknown>
    const fields = Object.fromEntries(
      // `+ 0` folds -0 into 0.
      Object.entries(rest).map(([key, value]) => [key, isLosslessNumber(value) ? Number(value.value) + 0 : value]),
    )
    return { where, petId: isLosslessNumber(petId) ? petId.value : undefined, fields }
  })
}

function csvRecords(text: string): RawRecord[] {
  let rows: { record: Record<string, string>; info: { lines: number } }[]
  try {
    rows = parseCsv(text, {
      bom: true,
      trim: true,
      skip_empty_lines: true,
      info: true,
      columns: (header: string[]) => {
        const missing = COLUMNS.filter((c) => !header.includes(c))
        const extra = header.filter((c) => !COLUMNS.includes(c))
        if (missing.length > 0 || extra.length > 0 || header.length !== COLUMNS.length) {
          throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (got ${header.join(',')})`)
        }
        return header
      },
    })
  } catch (error) {
    if (error instanceof InvalidInputError) throw error
    throw new InvalidInputError(`Not valid CSV: ${(error as Error).message}`)
  }
  if (rows.length === 0 && !/\S/.test(text)) {
    throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (the file is empty)`)
  }
  return rows.map(({ record, info }) => {
    const { petId, quantity, ...rest } = record
    // CSV has no types: an integer-looking quantity becomes a number, anything else stays text and fails validation.
    const fields = { ...rest, quantity: quantity !== undefined && /^(0|-?[1-9]\d*)$/.test(quantity) ? Number(quantity) : quantity }
    return { where: `line ${info.lines}`, petId, fields }
  })
}
