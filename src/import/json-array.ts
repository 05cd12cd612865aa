import { LosslessNumber, isLosslessNumber } from 'lossless-json'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import parserStream from 'stream-json'
import streamArray from 'stream-json/streamers/stream-array.js'
import { InvalidInputError } from '../errors.js'

/** Throws InvalidInputError, saying why, when `path` is not a readable file. */
export async function checkReadable(path: string): Promise<void> {
  try {
    if ((await stat(path)).isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable')
    throw new InvalidInputError(`Cannot read ${path}: ${why}`)
  }
}

/** One element of a JSON import: an object whose numbers are all LosslessNumbers, and its place (from 1). */
export interface JsonElement {
  position: number
  value: Record<string, unknown>
}

/**
 * The objects of a JSON file's top-level array, parsed as the file is read, never whole, so memory
 * stays bounded whatever its size. Every number, nested ones included, is kept as its exact text (a
 * LosslessNumber: int64 ids beyond 2^53 stay exact, and a number never passes for a string). Throws
 * InvalidInputError for a file that is not JSON or not an array, an element that is not an object, or
 * an object that repeats a key. `shape` names what the elements should be, for the messages.
 */
export async function* jsonArrayObjects(path: string, shape: string): AsyncGenerator<JsonElement> {
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
 * The parser's tokens, with every number kept as its exact text (a LosslessNumber), and a key
 * repeated within one object refused rather than silently overwritten.
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

function asJsonError(error: unknown, shape: string): unknown {
  if (error instanceof InvalidInputError) return error
  const message = (error as Error).message ?? String(error)
  if (/top-level object should be an array/i.test(message)) {
    return new InvalidInputError(`A JSON import must be an array of ${shape}`)
  }
  return new InvalidInputError(`Not valid JSON: ${message}`)
}
