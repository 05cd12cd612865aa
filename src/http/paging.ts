import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../paging.js'

/** The `limit` query parameter of every paged listing. */
export const PageLimitSchema = Type.Integer({
  minimum: 1,
  maximum: MAX_PAGE_SIZE,
  default: DEFAULT_PAGE_SIZE,
  description: `How many items to return at most, from 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}).`,
})

/** The Link header of a page that has a next one, as documented on every paged response. */
export const NEXT_LINK_HEADER = {
  Link: Type.String({
    description:
      'Present when more items remain: `<…>; rel="next"` (RFC 8288), the URL of the next page, path-absolute, ' +
      'with the same filters and limit. Absent on the last page.',
  }),
}

/**
 * One page of a listing read with one row beyond the limit: the page, and a Link to the next one
 * when that row exists (so the last page never points to an empty one). `cursor` is the value the
 * next page continues after; the query keeps its parameters in the order given.
 */
export function page<T>(reply: FastifyReply, rows: T[], limit: number, path: string, cursor: (last: T) => bigint, filters: Filters): T[] {
  if (rows.length <= limit) return rows
  const items = rows.slice(0, limit)
  reply.header('link', nextLink(path, cursor(items[items.length - 1]!), limit, filters))
  return items
}

type Filters = Record<string, string | bigint | undefined>

/**
 * The Link to the page after `cursor` (or, for a listing read newest first, before it), with the same
 * limit and filters (in the order given).
 */
export function nextLink(path: string, cursor: bigint, limit: number, filters: Filters, direction: 'after' | 'before' = 'after'): string {
  const query = new URLSearchParams({ [direction]: String(cursor), limit: String(limit) })
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.append(name, String(value))
  return `<${path}?${query}>; rel="next"`
}
