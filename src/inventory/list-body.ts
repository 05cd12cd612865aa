import { EntityTagger } from '../http/entity-tags.js'
import { itemJson } from './inventory.json.js'
import type { InventoryService } from './inventory.service.js'

/** Entries read and serialized per step: about 100 KB of JSON, a millisecond or two of work. */
export const LIST_PAGE_SIZE = 2000
/** A body up to this size is kept as one buffer; a larger one stays in its page-sized pieces. */
const SINGLE_BUFFER_MAX = 1024 * 1024

/** The list's JSON bytes, in pieces, with the strong entity tag of the whole. */
export interface ListBody {
  chunks: Buffer[]
  length: number
  tag: string
  entries: number
}

/**
 * Builds the list body a page at a time from one snapshot: each page is serialized on its own, and
 * the event loop runs between pages, so no single step grows with the inventory and a million
 * entries never stall the process. The tag is computed as the bytes are made.
 */
export async function buildListBody(inventory: InventoryService, pageSize = LIST_PAGE_SIZE): Promise<ListBody> {
  const chunks: Buffer[] = []
  const tagger = new EntityTagger()
  let length = 0
  let entries = 0
  const push = (text: string) => {
    const bytes = Buffer.from(text)
    tagger.update(bytes)
    chunks.push(bytes)
    length += bytes.length
  }
  push('[')
  await inventory.forEachPage(pageSize, (items) => {
    push((entries === 0 ? '' : ',') + items.map(itemJson).join(','))
    entries += items.length
  })
  push(']')
  const tag = tagger.tag()
  return length <= SINGLE_BUFFER_MAX ? { chunks: [Buffer.concat(chunks, length)], length, tag, entries } : { chunks, length, tag, entries }
}
