import { Spool } from '../cache/spool.js'
import { EntityTagger } from '../http/entity-tags.js'
import type { ByteSource } from '../http/representation.js'
import { itemJson } from './inventory.json.js'
import type { InventoryService } from './inventory.service.js'

/** Entries read and serialized per step: about 100 KB of JSON, a millisecond or two of work. */
export const LIST_PAGE_SIZE = 2000
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

export interface BuildListOptions {
  pageSize?: number
  /** Where a large body goes; resolves undefined when none can be made, and the body stays in memory. */
  spool?: () => Promise<Spool | undefined>
}

/**
 * Builds the list body a page at a time from one snapshot: each page is serialized on its own, and
 * the event loop runs between pages, so no single step grows with the inventory and a million
 * entries never stall the process. The tag is computed as the bytes are made. Past IN_MEMORY_MAX the
 * bytes go to a spool file page by page, so the heap holds one page at a time whatever the size.
 */
export async function buildListBody(inventory: InventoryService, options: BuildListOptions = {}): Promise<ListBody> {
  const makeSpool = options.spool ?? (() => Spool.create())
  const tagger = new EntityTagger()
  let chunks: Buffer[] = []
  let spool: Spool | undefined
  let spoolTried = false
  let length = 0
  let entries = 0
  const push = async (text: string) => {
    const bytes = Buffer.from(text)
    tagger.update(bytes)
    length += bytes.length
    if (spool) return spool.append(bytes)
    chunks.push(bytes)
    if (length <= IN_MEMORY_MAX || spoolTried) return
    spoolTried = true
    spool = await makeSpool()
    if (!spool) return
    for (const chunk of chunks) await spool.append(chunk)
    chunks = []
  }
  try {
    await push('[')
    await inventory.forEachPage(options.pageSize ?? LIST_PAGE_SIZE, async (items) => {
      await push((entries === 0 ? '' : ',') + items.map(itemJson).join(','))
      entries += items.length
    })
    await push(']')
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
