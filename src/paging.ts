/**
 * The bound on a page of any listing, whoever reads it: the API's `limit` parameter and the CLI's
 * `history --limit` share it. No HTTP here, so the CLI can import it without the HTTP layer.
 */
export const MAX_PAGE_SIZE = 1000

/** The page size of a paged listing whose `limit` is not given. */
export const DEFAULT_PAGE_SIZE = 100
