import { TooManyStreamsError } from '../errors.js'
import type { CursorChecks } from '../inventory/inventory.service.js'
import { ChangeStream } from './change-stream.js'
import type { LedgerTail } from './ledger-tail.js'

export interface ChangeStreamsSettings {
  heartbeatMs: number
  maxPerKey: number
}

/**
 * The change streams open in this process: at most `maxPerKey` per API key, a comment line on each
 * every heartbeat, and the end of any whose bytes have waited two beats without its client reading
 * (a client that stopped reading holds at most its stream's bounded buffer meanwhile).
 */
export class ChangeStreams {
  private readonly open = new Set<ChangeStream>()
  private readonly perKey = new Map<number, number>()
  private beat: NodeJS.Timeout | undefined

  constructor(
    private readonly tail: LedgerTail,
    private readonly ledger: CursorChecks,
    private readonly settings: ChangeStreamsSettings,
  ) {}

  /** How many are open now (the metrics). */
  get size(): number {
    return this.open.size
  }

  /**
   * Takes one of the key's places, or throws TooManyStreamsError; `release` gives it back. Taken
   * before anything is awaited, so concurrent requests of one key cannot pass the bound together.
   */
  reserve(keyId: number): () => void {
    const held = this.perKey.get(keyId) ?? 0
    if (held >= this.settings.maxPerKey) throw new TooManyStreamsError(this.settings.maxPerKey)
    this.perKey.set(keyId, held + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.perKey.get(keyId) ?? 1) - 1
      if (left === 0) this.perKey.delete(keyId)
      else this.perKey.set(keyId, left)
    }
  }

  /** A stream of the rows after `after` (of one pet, when given), counted until it is destroyed. */
  openStream(after: bigint, petId: bigint | undefined, release: () => void): ChangeStream {
    const stream = new ChangeStream(this.tail, this.ledger, after, petId)
    this.open.add(stream)
    stream.once('close', () => {
      this.open.delete(stream)
      release()
    })
    this.beat ??= setInterval(() => this.heartbeat(), this.settings.heartbeatMs).unref()
    return stream
  }

  /** Ends every open stream after what it holds (the drain, a close): clients reconnect and resume. */
  endAll(): void {
    for (const stream of this.open) stream.finish()
  }

  /** At close: every stream ends now; one whose client has not read what it holds is cut off rather than waited for. */
  close(): void {
    clearInterval(this.beat)
    for (const stream of this.open) {
      stream.finish()
      if (stream.readableLength > 0 || stream.unsent() > 0) stream.destroy()
    }
  }

  private heartbeat() {
    for (const stream of this.open) if (!stream.heartbeat(2 * this.settings.heartbeatMs)) stream.destroy()
  }
}
