import { parse as parseCsv } from 'csv-parse'
import { LosslessNumber, isLosslessNumber } from 'lossless-json'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { extname } from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import parserStream from 'stream-json'
import streamArray from 'stream-json/streamers/stream-array.js'
import { InvalidInputError } from '../errors.js'
import { parseInt64 } from '../int64.js'
import type { ImportRecord } from '../storage/storage.js'
import { describeValidationError, type Validate } from '../validation.js'
import type { InventoryItem, PetStatus } from '../domain.js'

/** Records handed on per step: the file is read, checked and written a chunk at a time. */
export const IMPORT_CHUNK_SIZE = 5000

/** An inventory file being read: its checked records in chunks, and how to name a record's place. */
export interface ImportSource {
  /** Throws InvalidInputError, naming the entry or line, at the first record that is not valid. */
  chunks: AsyncIterable<ImportRecord[]>
  /** "entry 3" (JSON, counted from 1) or "line 4" (CSV) for a record's position. */
  where(position: number): string
}

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
export async function openInventoryFile(path: string, validateRecord: Validate): Promise<ImportSource> {
  const extension = extname(path).toLowerCase()
  if (extension !== '.json' && extension !== '.csv') {
    throw new InvalidInputError(`Unsupported file type '${extension}': use .json or .csv`)
  }
  await readable(path)
  const json = extension === '.json'
  const raw = json ? jsonRecords(path) : csvRecords(path)
  return { chunks: checked(raw, validateRecord, json), where: json ? (n) => `entry ${n}` : (n) => `line ${n}` }
}

async function readable(path: string) {
  try {
    if ((await stat(path)).isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable')
    throw new InvalidInputError(`Cannot read ${path}: ${why}`)
  }
}

async function* checked(raw: AsyncIterable<RawRecord>, validateRecord: Validate, json: boolean) {
  const where = (n: number) => (json ? `entry ${n}` : `line ${n}`)
  let chunk: ImportRecord[] = []
  for await (const { position, petId: rawPetId, fields } of raw) {
    const petId = typeof rawPetId === 'string' ? parseInt64(rawPetId) : undefined
    if (petId === undefined) throw new InvalidInputError(`${where(position)}: petId must be a decimal int64 integer`)
    if (!validateRecord(fields)) {
      const problem = describeValidationError(validateRecord.errors![0]!, 'record')
      throw new InvalidInputError(`${where(position)} (petId ${petId}): ${problem}`)
    }
    const item: InventoryItem = { petId, quantity: fields.quantity as number, status: fields.status as PetStatus }
    chunk.push({ item, position })
    if (chunk.length === IMPORT_CHUNK_SIZE) {
      yield chunk
      chunk = []
    }
  }
  if (chunk.length > 0) yield chunk
}

/** Drops a UTF-8 byte order mark at the very start (some editors write one). */
function withoutBom(): Transform {
  let first = true
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (first && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) chunk = chunk.subarray(3)
      first = false
      done(null, chunk)
    },
  })
}

/**
 * The parser's tokens, with every number kept as its exact text (a LosslessNumber, so petIds beyond
 * 2^53 stay exact and a number never passes for a string), and a key repeated within one object
 * refused rather than silently overwritten.
 */
function exactTokens(): Transform {
  const keys: Set<string>[] = []
  let entry = 0
  return new Transform({
    objectMode: true,
    transform(token: { name: string; value?: string }, _encoding, done) {
      switch (token.name) {
        case 'startObject':
          if (keys.length === 0) entry++
          keys.push(new Set())
          break
        case 'endObject':
          keys.pop()
          break
        case 'keyValue': {
          const seen = keys[keys.length - 1]!
          if (seen.has(token.value!)) {
            return done(new InvalidInputError(`Not valid JSON: entry ${entry} repeats the key '${token.value}'`))
          }
          seen.add(token.value!)
          break
        }
        case 'numberValue':
          return done(null, { name: 'stringValue', value: new LosslessNumber(token.value!) })
      }
      done(null, token)
    },
  })
}

async function* jsonRecords(path: string): AsyncGenerator<RawRecord> {
  const elements = streamArray.asStream()
  const parsing = pipeline(
    createReadStream(path),
    withoutBom(),
    parserStream({ packValues: true, streamValues: false }),
    exactTokens(),
    elements,
  ).catch((error: unknown) => {
    elements.destroy(error as Error)
  })
  try {
    for await (const { key, value } of elements as AsyncIterable<{ key: number; value: unknown }>) {
      const position = key + 1
      if (typeof value !== 'object' || value === null || Array.isArray(value) || isLosslessNumber(value)) {
        throw new InvalidInputError(`entry ${position}: must be an object {petId, quantity, status}`)
      }
      const { petId, ...rest } = value as Record<string, unknown>
      const fields = Object.fromEntries(
        // `+ 0` folds -0 into 0.
        Object.entries(rest).map(([k, v]) => [k, isLosslessNumber(v) ? Number(v.value) + 0 : v]),
      )
      yield { position, petId: isLosslessNumber(petId) ? petId.value : undefined, fields }
    }
  } catch (error) {
    throw asJsonError(error)
  } finally {
    elements.destroy()
    await parsing
  }
}

function asJsonError(error: unknown): unknown {
  if (error instanceof InvalidInputError) return error
  const message = (error as Error).message ?? String(error)
  if (/top-level object should be an array/i.test(message)) {
    return new InvalidInputError('A JSON import must be an array of {petId, quantity, status}')
  }
  return new InvalidInputError(`Not valid JSON: ${message}`)
}

async function* csvRecords(path: string): AsyncGenerator<RawRecord> {
  let header = false
  const parser = parseCsv({
    bom: true,
    trim: true,
    skip_empty_lines: true,
    info: true,
    columns: (names: string[]) => {
      header = true
      const missing = COLUMNS.filter((c) => !names.includes(c))
      const extra = names.filter((c) => !COLUMNS.includes(c))
      if (missing.length > 0 || extra.length > 0 || names.length !== COLUMNS.length) {
        throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (got ${names.join(',')})`)
      }
      return names
    },
  })
  const reading: Readable = createReadStream(path)
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
    throw new InvalidInputError(`Not valid CSV: ${(error as Error).message}`)
  } finally {
    reading.destroy()
  }
  if (!header) throw new InvalidInputError(`line 1: the header must be ${COLUMNS.join(',')} (the file is empty)`)
}
