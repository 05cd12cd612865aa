import { type JetStreamClient, jetstream } from '@nats-io/jetstream'
import { connect, headers, type NatsConnection, NoRespondersError, TimeoutError } from '@nats-io/transport-node'
import type { BrokerDestination } from '../broker-destination.js'
import { type BrokerMessage, describeError, LazyConnection, type Published, type Publisher, type PublisherOptions } from './publisher.js'

type NatsDestination = Extract<BrokerDestination, { kind: 'nats' }>

/*
 * Into NATS JetStream, exactly once and in seq order (issue 38): each message is a JetStream publish
 * to `<prefix>.<petId>` with Nats-Msg-Id = its webhook-id, so the stream's duplicate window absorbs a
 * message sent again after a crash or a lost acknowledgement. Publishes are pipelined on one
 * connection, which the server reads in order: an acknowledged message implies every one before it
 * was stored or refused. The connection never reconnects by itself (a reconnecting client would send
 * what it buffered on the new connection while what was in flight on the old one may be lost: a
 * later message stored before an earlier one); instead a failure closes it, and the delivery loop
 * sends again from the first message not acknowledged, on a new connection.
 */
export class JetStreamPublisher implements Publisher {
  private readonly connection: LazyConnection<{ nc: NatsConnection; js: JetStreamClient }>

  constructor(
    private readonly destination: NatsDestination,
    private readonly options: PublisherOptions,
  ) {
    this.connection = new LazyConnection(async () => {
      const { server, user, pass, token } = destination
      const nc = await connect({
        servers: server,
        name: 'petstore-webhooks',
        reconnect: false,
        timeout: options.timeoutMs,
        ...(user !== undefined ? { user, pass } : {}),
        ...(token !== undefined ? { token } : {}),
      })
      return { nc, js: jetstream(nc, { timeout: options.timeoutMs }) }
    })
  }

  async publish(messages: BrokerMessage[]): Promise<Published> {
    let js: JetStreamClient
    try {
      ;({ js } = await this.connection.get())
    } catch (error) {
      return { acknowledged: 0, error: `could not connect to NATS at ${this.destination.server}: ${describeError(error)}` }
    }
    const acks = messages.map((m) => {
      const subject = `${this.destination.subjectPrefix}.${m.petId}`
      // Headers of its own: the client adds Nats-Msg-Id to the object it is given.
      const h = headers()
      h.set('Content-Type', 'application/json')
      return js.publish(subject, m.body, { msgID: m.id, headers: h, timeout: this.options.timeoutMs }).then(
        () => undefined,
        (error: unknown) => failure(error, subject, this.options.timeoutMs),
      )
    })
    const outcomes = await Promise.all(acks)
    const failed = outcomes.findIndex((error) => error !== undefined)
    if (failed === -1) return { acknowledged: messages.length }
    await this.close()
    return { acknowledged: failed, error: outcomes[failed]! }
  }

  async close(): Promise<void> {
    await (await this.connection.drop())?.nc.close().catch(() => {})
  }
}

/** Why one publish failed, for the subscription's lastError: never a password (the server URL is masked). */
function failure(error: unknown, subject: string, timeoutMs: number): string {
  if (error instanceof TimeoutError) return `no acknowledgement from JetStream within ${timeoutMs} ms`
  const cause = (error as { cause?: unknown }).cause
  if (error instanceof NoRespondersError || cause instanceof NoRespondersError || /jetstream is not enabled/i.test(describeError(error)))
    return `no JetStream stream covers the subject ${subject} (or JetStream is not enabled)`
  return `JetStream refused the message: ${describeError(error)}`
}
