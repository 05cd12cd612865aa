import { randomUUID } from 'node:crypto'
import { open, unlink, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finished, Readable } from 'node:stream'

/** What one read of a reader takes from the file (fs.ReadStream's own default). */
const READ_BYTES = 64 * 1024

/** Bytes that are streamed rather than held: each call of `stream()` reads them all from the start. */
export interface ByteSource {
  length: number
  stream(): Readable
}

/**
 * Bytes kept in a temporary file rather than in the heap: a large response body (a list of a million
 * entries is about 50 MiB) is written once and then streamed to every client that asks for it,
 * so the process's memory does not grow with the inventory; the kernel's page cache holds the hot
 * bytes instead, and gives them back under pressure.
 *
 * The file is unlinked as soon as it is created: only this process's open handle keeps it, so it
 * vanishes when the spool is released or the process ends, even by a crash. Every reader streams
 * with positional reads from the one handle, so concurrent responses never disturb each other.
 * `retire()` marks the spool as no longer wanted; it closes after its last reader finishes, and not
 * before the current event-loop turn ends, so a request that was handed the spool just before it
 * was retired still gets to stream it.
 */
export class Spool implements ByteSource {
  private written = 0
  private readers = 0
  private retired = false
  private closed = false

  private constructor(private readonly file: FileHandle) {}

  /** Creates a spool in `dir` (the OS's temporary directory, TMPDIR, by default). */
  static async create(dir = tmpdir()): Promise<Spool> {
    const path = join(dir, `petstore-spool-${process.pid}-${randomUUID()}`)
    const file = await open(path, 'wx+', 0o600)
    try {
      await unlink(path)
    } catch (error) {
      await file.close()
      throw error
    }
    return new Spool(file)
  }

  get length(): number {
    return this.written
  }

  async append(bytes: Buffer): Promise<void> {
    let offset = 0
    while (offset < bytes.length) {
      const { bytesWritten } = await this.file.write(bytes, offset, bytes.length - offset, this.written)
      offset += bytesWritten
      this.written += bytesWritten
    }
  }

  /**
   * A stream of every byte appended so far, read with positional reads of the shared handle. Not
   * FileHandle.createReadStream: destroying such a stream (a client that goes away mid-body) closes
   * the handle itself, autoClose or not, and so every later reader's list; and each one adds a
   * listener to the handle that outlives it.
   */
  stream(): Readable {
    if (this.closed) throw new Error('The spool was released')
    this.readers++
    const file = this.file
    const end = this.written
    let position = 0
    const stream = new Readable({
      highWaterMark: READ_BYTES,
      read() {
        if (position >= end) return void this.push(null)
        const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, end - position))
        file.read(buffer, 0, buffer.length, position).then(
          ({ bytesRead }) => {
            if (bytesRead === 0) return void this.destroy(new Error('The spool file ended early'))
            position += bytesRead
            this.push(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead))
          },
          (error: Error) => this.destroy(error),
        )
      },
    })
    // Ended, failed or destroyed (a client that went away). A read still in flight holds the handle:
    // FileHandle.close() waits for it.
    finished(stream, () => {
      this.readers--
      this.closeIfDone()
    })
    return stream
  }

  /** No new readers will come: the file closes once the current ones are done. */
  retire(): void {
    this.retired = true
    this.closeIfDone()
  }

  private closeIfDone() {
    if (!this.retired || this.readers > 0) return
    setImmediate(() => {
      if (this.readers > 0 || this.closed) return
      this.closed = true
      void this.file.close().catch(() => {})
    })
  }
}
