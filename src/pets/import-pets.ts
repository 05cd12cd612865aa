import { isLosslessNumber } from 'lossless-json'
import { extname } from 'node:path'
import type { Pet, PetStatus } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { inChunks, type ImportSource } from '../import/import-source.js'
import { jsonArrayObjects, type JsonElement } from '../import/json-array.js'
import { openRegularFile } from '../import/regular-file.js'
import { parseInt64 } from '../int64.js'
import type { PetImportRecord } from '../domain.js'
import { describeValidationError, type Validate } from '../validation.js'

/**
 * Pets handed on per step. Fewer than an inventory import's records, as a pet is larger: at its
 * limits (PET_LIMITS) about 50,000 characters, so a chunk stays within some 25 MB of text.
 */
export const PET_IMPORT_CHUNK_SIZE = 500

const SHAPE = '{id, name, category, photoUrls, tags, status}'

/**
 * Opens a pets file (a .json array of Pet objects) for streaming: parsed as it is read, never whole,
 * every record checked with the API's own validator (`validateRecord`, compiled from PetRecordSchema)
 * and its int64 ids parsed exactly. Repeated ids are the storage's to find (Storage.importPets).
 */
export async function openPetsFile(path: string, validateRecord: Validate): Promise<ImportSource<PetImportRecord>> {
  const extension = extname(path).toLowerCase()
  if (extension !== '.json') throw new InvalidInputError(`Unsupported file type '${extension}': pets are imported from .json`)
  const file = await openRegularFile(path)
  return { chunks: inChunks(checked(jsonArrayObjects(file, SHAPE), validateRecord), PET_IMPORT_CHUNK_SIZE), where: (n) => `entry ${n}` }
}

async function* checked(elements: AsyncIterable<JsonElement>, validateRecord: Validate): AsyncGenerator<PetImportRecord> {
  for await (const { position, value } of elements) {
    const id = isLosslessNumber(value.id) ? parseInt64(value.id.value) : undefined
    const where = id === undefined ? `entry ${position}` : `entry ${position} (id ${id})`
    // The validator sees plain numbers; the ids are then read exactly from their text.
    if (!validateRecord(plain(value))) {
      throw new InvalidInputError(`${where}: ${describeValidationError(validateRecord.errors![0]!, 'pet')}`)
    }
    const exact = (number: unknown, field: string) => {
      const parsed = parseInt64((number as { value: string }).value)
      if (parsed === undefined) throw new InvalidInputError(`${where}: ${field} must be a decimal int64 integer`)
      return parsed
    }
    const category = value.category as { id: unknown; name: string } | undefined
    const tags = (value.tags ?? []) as { id: unknown; name: string }[]
    const pet: Pet = {
      id: exact(value.id, 'pet.id'),
      name: value.name as string,
      category: category && { id: exact(category.id, 'pet.category.id'), name: category.name },
      photoUrls: value.photoUrls as string[],
      tags: tags.map((tag, i) => ({ id: exact(tag.id, `pet.tags.${i}.id`), name: tag.name })),
      status: value.status as PetStatus | undefined,
    }
    yield { pet, position }
  }
}

/** The record with every number as a JS number, for the validator (`+ 0` folds -0 into 0). */
function plain(value: unknown): unknown {
  if (isLosslessNumber(value)) return Number(value.value) + 0
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  return value
}
