import { type DatabaseFault, UnavailableError } from '../errors.js'

/**
 * Each fault of the database in an operator's words (the 503's message, the log lines, readiness),
 * and whether it lasts: a lasting fault is a state of the database that holds until a probe sees it
 * gone (a full disk, a read-only database); the others are one statement's bad luck.
 */
export const FAULTS: Readonly<Record<DatabaseFault, { message: string; lasting: boolean }>> = {
  disk_full: { message: 'The disk holding the database is full: writes are refused until space is freed', lasting: true },
  read_only: {
    message: 'The database accepts no writes: it is read-only (a standby, or a primary switched to read-only after a failover)',
    lasting: true,
  },
  connection_limit: { message: 'The database refuses new connections: its connection limit is reached', lasting: true },
  terminated: { message: 'The database ended its connections (an administrator, or the server restarting)', lasting: true },
  io_error: { message: "The database's disk failed a read or a write", lasting: true },
  cancelled: { message: 'The database cancelled the statement (a statement timeout, or an administrator)', lasting: false },
}

/** The 503 for a fault: retrying is safe, nothing of the request was applied. */
export function faultError(cause: DatabaseFault): UnavailableError {
  const { message, lasting } = FAULTS[cause]
  return new UnavailableError(message, 'database', { cause, lasting })
}

/** True for an error of a lasting fault: the fault's own lines say it, once, so a caller logs nothing more. */
export const saidOnce = (error: unknown): boolean => error instanceof UnavailableError && error.fault?.lasting === true

/** A lasting fault beginning (`fault` set) or ending (`fault` undefined, `ended` the one that ended). */
export interface FaultChange {
  fault: DatabaseFault | undefined
  ended?: DatabaseFault
  /** How long the fault that ended held, in ms. */
  heldMs?: number
}

/** What logs a fault's lines: pino's shape. */
interface FaultLog {
  warn(fields: object, message: string): void
  info(fields: object, message: string): void
}

/**
 * One line when a lasting fault begins (warn: it passes by itself, or an operator acts; no stack,
 * nothing is wrong with the service's code) and one when it ends (info), each naming the cause.
 */
export function logFaultChange(log: FaultLog, change: FaultChange): void {
  if (change.fault !== undefined) log.warn({ fault: change.fault }, `database fault: ${FAULTS[change.fault].message}`)
  else if (change.ended !== undefined)
    log.info({ fault: change.ended, heldMs: change.heldMs }, `database fault ended, writes succeed again: ${FAULTS[change.ended].message}`)
}

/** How often a probe checks whether a lasting fault is gone: the 5 s to recover, with room. */
export const PROBE_MS = 1000

/**
 * The database's lasting fault, if one holds: set by any operation that meets one (`seen`), cleared
 * only by the probe, a small real write (and on SQLite, free space on the disk) that the backend
 * runs every PROBE_MS while a fault holds. Requests and background work never clear it by chance,
 * so the state changes once when a fault begins and once when it ends; listeners hear each change.
 */
export class DatabaseFaults {
  private fault: DatabaseFault | undefined
  private since = 0
  private timer: NodeJS.Timeout | undefined
  private probing = false
  private stopped = false
  private readonly listeners = new Set<(change: FaultChange) => void>()

  /** `probe` resolves with the lasting fault it still finds, or undefined when a write succeeds. */
  constructor(private readonly probe: () => Promise<DatabaseFault | undefined>) {}

  get current(): DatabaseFault | undefined {
    return this.fault
  }

  subscribe(listener: (change: FaultChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** An operation met `cause`: a lasting one becomes the state (once), and the probe starts. */
  seen(cause: DatabaseFault): void {
    if (!FAULTS[cause].lasting || this.fault === cause || this.stopped) return
    this.change(cause)
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private change(fault: DatabaseFault | undefined): void {
    const ended = this.fault
    const heldMs = Date.now() - this.since
    this.fault = fault
    this.since = Date.now()
    const change: FaultChange = fault === undefined ? { fault, ...(ended && { ended }), heldMs } : { fault }
    for (const listener of this.listeners) listener(change)
    if (fault !== undefined) this.schedule()
  }

  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.check()
    }, PROBE_MS)
    this.timer.unref()
  }

  private async check(): Promise<void> {
    if (this.probing || this.fault === undefined) return
    this.probing = true
    let found: DatabaseFault | undefined
    try {
      found = await this.probe()
    } catch {
      // The database cannot be reached at all: the fault is not seen gone.
      found = this.fault
    } finally {
      this.probing = false
    }
    if (this.stopped) return
    if (found === undefined) this.change(undefined)
    else {
      if (found !== this.fault && FAULTS[found].lasting) this.change(found)
      this.schedule()
    }
  }
}
