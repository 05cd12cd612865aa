import { InvalidInputError } from '../errors.js'
import { DuplicatePetIdError } from '../errors.js'

/**
 * The most characters one record of an import file may hold (its keys and values in JSON, its
 * fields in CSV): as much as a request body (64 KiB), several times a pet at its limits. A record
 * that passes it is refused as soon as it does, so memory stays bounded whatever the file holds.
 */
export const IMPORT_RECORD_LIMIT = 64 * 1024

/** An import file being read: its checked records in chunks, and how to name a record's place. */
export interface ImportSource<R> {
  /** Throws InvalidInputError, naming the entry or line, at the first record that is not valid. */
  chunks: AsyncIterable<R[]>
  /** "entry 3" (JSON, counted from 1) or "line 4" (CSV) for a record's position. */
  where(position: number): string
}

/** Groups records into arrays of at most `size`: a file is read, checked and written a chunk at a time. */
export async function* inChunks<T>(records: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = []
  for await (const record of records) {
    chunk.push(record)
    if (chunk.length === size) {
      yield chunk
      chunk = []
    }
  }
  if (chunk.length > 0) yield chunk
}

/**
 * Runs an import whose storage refuses a repeated id (DuplicatePetIdError, found while staging), and
 * says so naming both places in the file; `field` is the id's name there (petId, id).
 */
export async function refusingDuplicates<T>(source: ImportSource<unknown>, field: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (!(error instanceof DuplicatePetIdError)) throw error
    throw new InvalidInputError(
      `${source.where(error.position)}: ${field} ${error.petId} appears twice (first at ${source.where(error.firstPosition)})`,
    )
  }
}
