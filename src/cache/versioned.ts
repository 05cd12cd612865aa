import { LRUCache } from 'lru-cache'

/**
 * A value built from the database, filed under the change-counter version it was built at (see
 * Storage.versions). A caller passes the version it read at the start of its request: an equal version
 * means nothing was committed since, so the value is current for it. Callers that arrive with the same
 * version while it is being built share that one build, so a burst of requests after a write costs
 * one rebuild, not one each.
 */
export class VersionedValue<T> {
  private current: { version: string; value: T } | undefined
  private readonly building = new Map<string, Promise<T>>()

  /** `release` is called with a value once another has replaced it (to free what it holds). */
  constructor(private readonly release: (value: T) => void = () => {}) {}

  async get(version: string, build: () => Promise<T>): Promise<T> {
    if (this.current?.version === version) return this.current.value
    let pending = this.building.get(version)
    if (!pending) {
      pending = build()
        .then((value) => {
          const replaced = this.current
          this.current = { version, value }
          if (replaced) this.release(replaced.value)
          return value
        })
        .finally(() => this.building.delete(version))
      this.building.set(version, pending)
    }
    return pending
  }
}

/**
 * Many values, each filed under the version it was learnt at, at most `max` of them (the least
 * recently used goes first). A value is returned only to a caller with the same version.
 */
export class VersionedLru<K extends {}, V extends {}> {
  private readonly entries: LRUCache<K, { version: string; value: V }>

  constructor(max: number) {
    this.entries = new LRUCache({ max })
  }

  get(key: K, version: string): V | undefined {
    const entry = this.entries.get(key)
    return entry?.version === version ? entry.value : undefined
  }

  /** Whether `key` was learnt at any version: a hint only, never an answer (that needs the version). */
  has(key: K): boolean {
    return this.entries.has(key)
  }

  set(key: K, version: string, value: V): void {
    this.entries.set(key, { version, value })
  }

  delete(key: K): void {
    this.entries.delete(key)
  }
}
