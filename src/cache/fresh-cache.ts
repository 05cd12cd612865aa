import { type AuthenticatedKey, PET_STATUSES, type PetStatus } from '../domain.js'
import type { Storage, Versions } from '../storage/ports.js'
import { releaseListBody, type ListBody } from './list-body.js'
import { VersionedLru, VersionedValue } from './versioned.js'

/** Bound on remembered key verifications. */
const MAX_VERIFIED_KEYS = 10_000

/**
 * Everything this process keeps from the database between requests, and the one rule that keeps it
 * current: every value is filed under a change counter that every writer moves in the same
 * transaction as its change (Storage.versions: SQLite's data_version plus this connection's own
 * commits; PostgreSQL's version rows, moved by triggers), the counters are read once at the start of
 * each request before anything else, and a value is served only to a request that read the counter it
 * was filed under. A write through any instance, or the CLI, moves the counter, so no request is ever
 * answered from before an acknowledged write. Nothing here trusts a timer.
 *
 * Entity tags need no entry of their own: they are computed from the bytes, and the list's is kept
 * with its body.
 */
export class FreshCache {
  /** The serialized inventory list and its entity tag, under the inventory counter. */
  readonly inventoryList = new VersionedValue<ListBody>(releaseListBody)
  /** The list filtered by each status, each under the same inventory counter. */
  readonly inventoryListByStatus = Object.fromEntries(
    PET_STATUSES.map((status) => [status, new VersionedValue<ListBody>(releaseListBody)]),
  ) as Record<PetStatus, VersionedValue<ListBody>>
  /** The key (id and scopes) per verified token, under the keys counter (a key made or revoked moves it). */
  readonly verifiedKeys: VersionedLru<string, AuthenticatedKey>

  constructor(
    private readonly storage: Storage,
    options: { maxVerifiedKeys?: number } = {},
  ) {
    this.verifiedKeys = new VersionedLru(options.maxVerifiedKeys ?? MAX_VERIFIED_KEYS)
  }

  /**
   * The counters for one request, read before anything it serves. Requests that arrive in the same
   * turn of the event loop share one read, which starts after all of them arrived (on the next
   * turn): a read that starts after a request arrived is current for it. A request arriving once the
   * read has started waits for the next one. On SQLite that saves a read transaction per request;
   * on PostgreSQL a round trip.
   */
  versions(): Promise<Versions> {
    if (!this.nextRead) {
      let settle!: { resolve: (v: Versions) => void; reject: (e: unknown) => void }
      const promise = new Promise<Versions>((resolve, reject) => (settle = { resolve, reject }))
      this.nextRead = promise
      setImmediate(() => {
        this.nextRead = undefined
        this.storage.versions().then(settle.resolve, settle.reject)
      })
    }
    return this.nextRead
  }

  private nextRead: Promise<Versions> | undefined
}
