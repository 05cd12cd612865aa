import { maskUrl } from '../../config.js'

/** One ledger row's message to a broker: the webhook's id and body, and the pet it is about. */
export interface BrokerMessage {
  /** The webhook-id (`msg_<tag>_<seq>`): NATS's Nats-Msg-Id, AMQP's message_id. */
  id: string
  body: string
  petId: bigint
  /** The delivery's span (tracing on), carried out as the message's traceparent header. */
  traceparent?: string | undefined
}

/** How far a publish got: the messages the broker acknowledged, from the first, and why it stopped short. */
export interface Published {
  acknowledged: number
  error?: string
}

/**
 * A connection to one subscription's broker. `publish` sends every message pipelined, in order, on
 * one connection, and resolves once each is acknowledged or the first failed; a failure closes the
 * connection, so nothing sent after it on a new one can overtake it (the next call connects anew).
 */
export interface Publisher {
  publish(messages: BrokerMessage[]): Promise<Published>
  close(): Promise<void>
}

export interface PublisherOptions {
  /** How long a connection, or an acknowledgement, is waited for. */
  timeoutMs: number
}

/** A broker connection opened at its first use and kept until dropped; a failed open is not kept (the next use tries again). */
export class LazyConnection<T> {
  private pending: Promise<T> | undefined

  constructor(private readonly open: () => Promise<T>) {}

  get(): Promise<T> {
    if (this.pending === undefined) {
      const opening = this.open()
      this.pending = opening
      opening.catch(() => {
        if (this.pending === opening) this.pending = undefined
      })
    }
    return this.pending
  }

  /** Forgets the connection (the next use opens another); resolves with it, when it had opened, for closing. */
  drop(): Promise<T | undefined> {
    const pending = this.pending
    this.pending = undefined
    return pending === undefined ? Promise.resolve(undefined) : pending.catch(() => undefined)
  }
}

/** A client's error as a subscription's lastError: its message, any URL in it masked. */
export const describeError = (error: unknown) => maskUrl(error instanceof Error ? error.message : String(error))
