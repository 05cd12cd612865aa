// Paged listings: each page's `Link: <…>; rel="next"` (RFC 8288) leads to the next, so a walk holds
// one page at a time whatever the size of the list.
import type { Call, Transport } from './transport.js'
import type { Page } from './types.js'

/** One page: its items and the cursor of the page after it (its `before` when read newest first, else its `after`). */
async function readPage<T>(transport: Transport, call: Call): Promise<Page<T> & { link: URL | undefined }> {
  const answer = await transport.json<T[]>(call)
  const link = nextLink(answer.headers, transport.base)
  const cursor = link?.searchParams.get('before') ?? link?.searchParams.get('after')
  return { items: answer.body, next: cursor === null || cursor === undefined ? undefined : BigInt(cursor), link }
}

/** One page, as the client's `page` methods answer it. */
export async function page<T>(transport: Transport, call: Call): Promise<Page<T>> {
  const { items, next } = await readPage<T>(transport, call)
  return { items, next }
}

/** Every item of a listing, a page at a time, following the Links. */
export async function* walk<T>(transport: Transport, first: Call): AsyncGenerator<T, void, undefined> {
  let call: Call = first
  for (;;) {
    const page = await readPage<T>(transport, call)
    yield* page.items
    if (page.link === undefined) return
    // The Link's query on the first call's path: the Link's own path is origin-absolute (/v1/…),
    // which misses a base URL with a prefix in front of /v1 (a proxy's /petstore/v1).
    call = { ...first, query: Object.fromEntries(page.link.searchParams) }
  }
}

function nextLink(headers: Headers, base: URL): URL | undefined {
  const header = headers.get('link')
  if (header === null) return undefined
  for (const part of header.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    const rel = /(?:^|;)\s*rel=(?:"([^"]*)"|([^;\s]+))/i.exec(match?.[2] ?? '')
    if (match && rel && (rel[1] ?? rel[2] ?? '').toLowerCase().split(/\s+/).includes('next')) return new URL(match[1]!, base)
  }
  return undefined
}
