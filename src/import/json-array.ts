import { LosslessNumber, isLosslessNumber } from 'lossless-json'
import type { FileHandle } from 'node:fs/promises'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import parserStream from 'stream-json'
import streamArray from 'stream-json/streamers/stream-array.js'
import { InvalidInputError } from '../errors.js'
import { excerpt } from '../validation.js'
import { IMPORT_RECORD_LIMIT } from './import-source.js'

/** One element of a JSON import: an object whose numbers are all LosslessNumbers, and its place (from 1). */
export interface JsonElement {
  position: number
  value: Record<string, unknown>
}

/**
 * The objects of a JSON file's top-level array, parsed as the file is read, never whole, so memory
 * stays bounded whatever the file holds: an element is refused as soon as it passes
 * IMPORT_RECORD_LIMIT characters. Every number, nested ones included, is kept as its exact text (a
 * LosslessNumber: int64 ids beyond 2^53 stay exact, and a number never passes for a string). Throws
 * InvalidInputError for a file that is not JSON or not an array, an element that is not an object, or
 * an object that repeats a key. `shape` names what the elements should be, for the messages. The
 * handle (see openRegularFile) is closed when the reading ends.
 */
export async function* jsonArrayObjects(file: FileHandle, shape: string): AsyncGenerator<JsonElement> {
  const elements = streamArray.asStream()
  const parsing = pipeline(
    file.createReadStream(),
    withoutBom(),
    // Values come in chunks, not packed whole by the parser: boundedTokens packs them, within the limit.
    parserStream({ packValues: false, streamValues: true }),
    boundedTokens(shape),
    elements,
  ).catch((error: unknown) => {
    elements.destroy(error as Error)
  })
  try {
    for await (const { key, value } of elements as AsyncIterable<{ key: number; value: unknown }>) {
      const position = key + 1
      if (typeof value !== 'object' || value === null || Array.isArray(value) || isLosslessNumber(value)) {
        throw new InvalidInputError(`entry ${position}: must be an object ${shape}`)
      }
      yield { position, value: value as Record<string, unknown> }
    }
  } catch (error) {
    throw asJsonError(error, shape)
  } finally {
    elements.destroy()
    await parsing
  }
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
 * Packs the parser's value chunks into whole keys, strings and numbers (every number kept as its
 * exact text, a LosslessNumber), counting each element of the top-level array as it grows: past
 * IMPORT_RECORD_LIMIT characters (its keys and values, plus one for each token) it is refused there
 * and then, before more of it is held. A key repeated within one object is refused rather than
 * silently overwritten.
 */
const ELEMENT_STARTS = new Set(['startObject', 'startArray', 'startString', 'startNumber', 'nullValue', 'trueValue', 'falseValue'])

function boundedTokens(shape: string): Transform {
  const keys: Set<string>[] = []
  let depth = 0
  let entry = 0
  let size = 0
  let text = ''
  const tooLarge = () =>
    new InvalidInputError(`entry ${entry}: larger than the limit of ${IMPORT_RECORD_LIMIT} characters a record may hold`)
  return new Transform({
    objectMode: true,
    transform(token: { name: string; value?: string }, _encoding, done) {
      // Anything but an array at the top is refused before any of it is held.
      if (depth === 0 && token.name !== 'startArray') return done(new InvalidInputError(`A JSON import must be an array of ${shape}`))
      if (depth === 1 && ELEMENT_STARTS.has(token.name)) {
        entry++
        size = 0
      }
      // The top-level array's own brackets belong to no element.
      if (depth > 1 || (depth === 1 && token.name !== 'endArray')) size++
      if (size > IMPORT_RECORD_LIMIT) return done(tooLarge())
      switch (token.name) {
        case 'startObject':
          keys.push(new Set())
          depth++
          break
        case 'startArray':
          depth++
          break
        case 'endObject':
          keys.pop()
          depth--
          break
        case 'endArray':
          depth--
          break
        case 'startKey':
        case 'startString':
        case 'startNumber':
          text = ''
          return done()
        case 'stringChunk':
        case 'numberChunk':
          size += token.value!.length
          if (size > IMPORT_RECORD_LIMIT) return done(tooLarge())
          text += token.value!
          return done()
        case 'endKey': {
          const seen = keys[keys.length - 1]!
          if (seen.has(text)) return done(new InvalidInputError(`Not valid JSON: entry ${entry} repeats the key ${excerpt(text)}`))
          seen.add(text)
          return done(null, { name: 'keyValue', value: text })
        }
        case 'endString':
          return done(null, { name: 'stringValue', value: text })
        case 'endNumber':
          return done(null, { name: 'stringValue', value: new LosslessNumber(text) })
      }
      done(null, token)
    },
  })
}

function asJsonError(error: unknown, shape: string): unknown {
  if (error instanceof InvalidInputError) return error
  const message = (error as Error).message ?? String(error)
  if (/top-level object should be an array/i.test(message)) {
    return new InvalidInputError(`A JSON import must be an array of ${shape}`)
  }
  return new InvalidInputError(`Not valid JSON: ${message}`)
}
