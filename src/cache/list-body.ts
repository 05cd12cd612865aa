import type { PetStatus } from '../domain.js'
import { EntityTagger } from '../entity-tags.js'
import { type ByteSource, Spool } from './spool.js'

/** A body up to this size is kept in memory as one buffer; a larger one goes to a spool file. */
const IN_MEMORY_MAX = 1024 * 1024

/** The list's JSON bytes, with the strong entity tag of the whole. */
export interface ListBody {
  /** One buffer; for a large list a spool file, or (when no spool could be made) its pieces. */
  bytes: Buffer | Buffer[] | ByteSource
  length: number
  tag: string
  entries: number
}

/**
 * Where the list's JSON comes from: the entries' JSON, comma-separated, in bounded pieces read from
 * one snapshot, each with the number of entries it completes (InventoryService.forEachJsonPiece).
 */
export interface JsonPieces {
  forEachJsonPiece(each: (json: Buffer, count: number) => Promise<void>, status?: PetStatus): Promise<void>
}

export interface BuildListOptions {
  /** Only the entries of this status (the list filtered by `status`). */
  status?: PetStatus
  /** Where a large body goes; resolves undefined when none can be made, and the body stays in memory. */
  spool?: () => Promise<Spool | undefined>
}

/**
 * Builds the list body from one snapshot, in the bounded pieces storage reads it in, with the event
 * loop running between them, so a million entries never stall the process. The tag is computed as
 * the bytes come. Past IN_MEMORY_MAX the bytes go to a spool file piece by piece, so the heap holds
 * one piece at a time whatever the size.
 */
export async function buildListBody(inventory: JsonPieces, options: BuildListOptions = {}): Promise<ListBody> {
  const makeSpool = options.spool ?? (() => Spool.create())
  const tagger = new EntityTagger()
  let chunks: Buffer[] = []
  let spool: Spool | undefined
  let spoolTried = false
  let length = 0
  let entries = 0
  const push = async (bytes: Buffer) => {
    tagger.update(bytes)
    length += bytes.length
    if (spool) return spool.append(bytes)
    // Storage may reuse nothing it handed over, but a piece kept in memory is copied out of any
    // larger buffer it is a view of, so that buffer is not kept alive with it.
    chunks.push(bytes.byteOffset === 0 && bytes.length === bytes.buffer.byteLength ? bytes : Buffer.from(bytes))
    if (length <= IN_MEMORY_MAX || spoolTried) return
    spoolTried = true
    spool = await makeSpool()
    if (!spool) return
    for (const chunk of chunks) await spool.append(chunk)
    chunks = []
  }
  try {
    await push(Buffer.from('['))
    await inventory.forEachJsonPiece(async (json, count) => {
      await push(json)
      entries += count
    }, options.status)
    await push(Buffer.from(']'))
  } catch (error) {
    spool?.retire()
    throw error
  }
  const tag = tagger.tag()
  const bytes = spool ?? (length <= IN_MEMORY_MAX ? Buffer.concat(chunks, length) : chunks)
  return { bytes, length, tag, entries }
}

/** Lets go of a body that is no longer served: a spool file closes once its readers are done. */
export function releaseListBody(body: ListBody): void {
  if (body.bytes instanceof Spool) body.bytes.retire()
}
