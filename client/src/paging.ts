// Paged listings: each page's `Link: <…>; rel="next"` (RFC 8288) leads to the next, so a walk holds
// one page at a time whatever the size of the list.
import type { Call, Transport } from './transport.js'
import type { Page } from './types.js'

/** One page: its items and the `after` of the page after it. */
async function readPage<T>(transport: Transport, call: Call): Promise<Page<T> & { link: URL | undefined }> {
  const answer = await transport.json<T[]>(call)
  const link = nextLink(answer.headers, transport.base)
  const after = link?.searchParams.get('after')
  return { items: answer.body, next: after === null || after === undefined ? undefined : BigInt(after), link }
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
    call = { ...first, path: page.link, query: undefined }
  }
}

function nextLink(headers: Headers, base: URL): URL | undefined {
  const header = headers.get('link')
  if (header === null) return undefined
  for (const part of header.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match && /(?:^|;)\s*rel="?next"?\s*(?:;|$)/i.test(match[2]!)) return new URL(match[1]!, base)
  }
  return undefined
}
