import pg from 'pg'
import type { LedgerSignals } from '../ports.js'
import type { PostgresConnection } from './connection.js'

/** The channel migration 009's trigger notifies at every commit that moves the ledger's end. */
export const LEDGER_CHANNEL = 'petstore_ledger'
/** Waits between attempts to reconnect the listening connection: doubling up to the last. */
const RECONNECT_MS = [100, 200, 500, 1000, 2000, 5000]
/**
 * How often the listening connection is asked a `SELECT 1`: a connection dropped without a reset (a
 * NAT's or a balancer's idle timeout, a failover) would otherwise lose every notification unseen
 * until TCP keep-alive gave up on it, hours later. One query per process, not per watcher.
 */
const CHECK_MS = 30_000

/**
 * Wake-ups for the ledger from PostgreSQL's LISTEN/NOTIFY: one connection per process, outside the
 * pool, opened while anything watches. Every commit that writes ledger rows notifies (in any
 * instance, or the CLI), so no watcher polls. A notification sent while the connection was down is
 * lost, so every (re)connection wakes the watchers once: they read the ledger itself, and catch up.
 */
export function postgresSignals(db: PostgresConnection): LedgerSignals & { stop(): void } {
  const watchers = new Set<() => void>()
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined
  let check: NodeJS.Timeout | undefined
  let failures = 0
  const notify = () => {
    for (const watcher of watchers) watcher()
  }

  const connect = () => {
    const c = new pg.Client({
      connectionString: db.url,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: db.timeoutMs,
      query_timeout: db.timeoutMs,
      application_name: 'petstore-listen',
    })
    client = c
    const lost = () => {
      clearInterval(check)
      c.removeAllListeners('notification')
      c.end().catch(() => {})
      if (client !== c) return // stopped, or already replaced
      client = undefined
      const wait = RECONNECT_MS[Math.min(failures++, RECONNECT_MS.length - 1)]
      retry = setTimeout(connect, wait)
      retry.unref()
    }
    c.on('error', lost)
    c.on('end', lost)
    c.on('notification', notify)
    c.connect()
      .then(() => c.query(`LISTEN ${LEDGER_CHANNEL}`))
      .then(() => {
        failures = 0
        if (client !== c) return
        notify()
        clearInterval(check)
        check = setInterval(() => c.query('SELECT 1').catch(lost), CHECK_MS).unref()
      }, lost)
  }

  const stop = () => {
    watchers.clear()
    clearTimeout(retry)
    clearInterval(check)
    const c = client
    client = undefined
    c?.end().catch(() => {})
  }
  return {
    watchLedger(onChange) {
      if (watchers.size === 0) connect()
      watchers.add(onChange)
      return () => {
        if (watchers.delete(onChange) && watchers.size === 0) stop()
      }
    },
    /** Ends the listening connection, whoever still watches (the storage closes). */
    stop,
  }
}
