import { write, writeSync } from 'node:fs'

/** Characters of log lines held for a reader that does not keep up; past it, lines are dropped and counted. */
export const MAX_PENDING_CHARS = 16 * 1024 * 1024
/** A full non-blocking pipe (EAGAIN): the write is tried again this much later. */
const EAGAIN_RETRY_MS = 10
/** For flushSync's waits on a full pipe: Atomics.wait on this sleeps without spinning. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4))

/**
 * Where pino writes the service's log lines: a file descriptor (stdout), written off the event loop
 * (the write runs on libuv's thread pool, so a reader that stalls never stalls a request), the lines
 * of one event-loop turn in one write.
 *
 * Why not pino's own destination (sonic-boom 4 and 5): while a write is in flight it appends each new
 * line to one pending string and measures the whole string's UTF-8 length again, so a line costs as
 * much as every line pending before it; with a line per request, that was 1.7 µs of CPU per request
 * (perf with V8's jitdump, GET of 100 entries at 64 connections, stdout a pipe). Here a line costs an
 * array push. It also bounds what a stalled reader can hold: MAX_PENDING_CHARS, then lines are
 * dropped (counted in `dropped`) rather than growing the heap without end.
 */
export class LogDestination {
  private pending: string[] = []
  private pendingChars = 0
  /** A write is in flight or scheduled: new lines wait for it. */
  private busy = false
  /** Lines dropped: the reader was MAX_PENDING_CHARS behind, or the descriptor failed (closed, EPIPE). */
  dropped = 0

  constructor(
    private readonly fd: number,
    private readonly maxPendingChars = MAX_PENDING_CHARS,
  ) {}

  /** pino's destination interface: one serialized line, newline included. */
  write(line: string): boolean {
    if (this.pendingChars + line.length > this.maxPendingChars) {
      this.dropped++
      return false
    }
    this.pending.push(line)
    this.pendingChars += line.length
    if (!this.busy) {
      this.busy = true
      setImmediate(this.flush)
    }
    return true
  }

  /**
   * What is pending, synchronously (at exit; a write still in flight finishes on its own thread). A
   * full non-blocking pipe is waited for in steps of 1 ms, for at most a second.
   */
  flushSync(): void {
    const bytes = this.take()
    const until = Date.now() + 1000
    for (let at = 0; at < bytes.length; ) {
      try {
        at += writeSync(this.fd, bytes, at)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > until) return
        Atomics.wait(PAUSE, 0, 0, 1)
      }
    }
  }

  private readonly flush = (): void => {
    if (this.pending.length === 0) {
      this.busy = false
      return
    }
    this.send(this.take())
  }

  private take(): Buffer {
    const text = this.pending.length === 1 ? this.pending[0]! : this.pending.join('')
    this.pending = []
    this.pendingChars = 0
    return Buffer.from(text)
  }

  private send(bytes: Buffer): void {
    write(this.fd, bytes, 0, bytes.length, null, (error, written) => {
      if (error?.code === 'EAGAIN') {
        setTimeout(() => this.send(bytes), EAGAIN_RETRY_MS)
        return
      }
      if (error) {
        // Nowhere to write (stdout closed): the lines go, the service goes on.
        this.dropped += this.pending.length + 1
        this.pending = []
        this.pendingChars = 0
        this.busy = false
        return
      }
      if (written < bytes.length) this.send(bytes.subarray(written))
      else this.flush()
    })
  }
}

let stdout: LogDestination | undefined

/** This process's stdout as a LogDestination, one for the process, flushed at exit. */
export function stdoutLog(): LogDestination {
  if (stdout === undefined) {
    const destination = new LogDestination(1)
    stdout = destination
    process.once('exit', () => destination.flushSync())
  }
  return stdout
}
