import type { LedgerSignals } from '../ports.js'
import type { SqliteConnection } from './connection.js'

/**
 * How often, while anything watches, this process asks SQLite whether another connection (a worker,
 * the CLI) committed: `PRAGMA data_version` costs microseconds, and one check serves every watcher.
 */
export const SQLITE_WATCH_INTERVAL_MS = 100

/**
 * Wake-ups for the ledger: this connection's own commits call the watchers at once (data_version
 * counts only other connections' commits); other processes' commits are seen by one shared check of
 * data_version every SQLITE_WATCH_INTERVAL_MS, running only while something watches.
 */
export function sqliteSignals(conn: SqliteConnection): LedgerSignals & { stop(): void } {
  const watchers = new Set<() => void>()
  const dataVersion = conn.db.prepare('PRAGMA data_version').pluck()
  let seen: unknown
  let timer: NodeJS.Timeout | undefined
  const notify = () => {
    for (const watcher of watchers) watcher()
  }
  const check = () => {
    let now: unknown
    try {
      now = dataVersion.get()
    } catch {
      return // busy (WAL recovery): the next check sees it
    }
    if (now === seen) return
    seen = now
    notify()
  }
  const stop = () => {
    watchers.clear()
    conn.afterInventoryWrite.delete(notify)
    clearInterval(timer)
  }
  return {
    watchLedger(onChange) {
      if (watchers.size === 0) {
        seen = dataVersion.get()
        conn.afterInventoryWrite.add(notify)
        timer = setInterval(check, SQLITE_WATCH_INTERVAL_MS)
        timer.unref()
      }
      watchers.add(onChange)
      return () => {
        if (watchers.delete(onChange) && watchers.size === 0) stop()
      }
    },
    /** Stops watching, whoever still watches (the storage closes). */
    stop,
  }
}
