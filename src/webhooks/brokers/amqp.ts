import { type ChannelModel, type ConfirmChannel, connect } from 'amqplib'
import { maskUrl } from '../../config.js'
import type { BrokerDestination } from '../broker-destination.js'
import { type BrokerMessage, describeError, LazyConnection, type Published, type Publisher, type PublisherOptions } from './publisher.js'

type AmqpDestination = Extract<BrokerDestination, { kind: 'amqp' }>

/*
 * Into RabbitMQ (AMQP 0-9-1) with publisher confirms (issue 38): each message published persistent to
 * the exchange with the routing key, message_id = its webhook-id and content type application/json,
 * pipelined on one confirm channel; the delivery loop's cursor moves only past confirmed messages. At
 * least once, in seq order: after a failure the connection is closed and the loop publishes again
 * from the first unconfirmed message, so a consumer may see a message_id again (dedupe by it).
 */
export class AmqpPublisher implements Publisher {
  private readonly connection: LazyConnection<{ model: ChannelModel; channel: ConfirmChannel }>
  /** Why the channel or the connection closed, as the broker said. */
  private closedBecause: string | undefined

  constructor(
    private readonly destination: AmqpDestination,
    private readonly options: PublisherOptions,
  ) {
    this.connection = new LazyConnection(async () => {
      this.closedBecause = undefined
      const model = await connect(destination.connection, { timeout: options.timeoutMs })
      const lost = (error: unknown) => {
        this.closedBecause ??= describeError(error)
        void this.connection.drop()
      }
      model.on('error', lost)
      model.on('close', () => lost('the connection closed'))
      const channel = await model.createConfirmChannel()
      channel.on('error', lost)
      channel.on('close', () => lost('the channel closed'))
      return { model, channel }
    })
  }

  private where() {
    return maskUrl(this.destination.connection, true)
  }

  async publish(messages: BrokerMessage[]): Promise<Published> {
    let channel: ConfirmChannel
    try {
      ;({ channel } = await this.connection.get())
    } catch (error) {
      return { acknowledged: 0, error: `could not connect to AMQP at ${this.where()}: ${describeError(error)}` }
    }
    const { exchange, routingKey } = this.destination
    const confirms = messages.map(
      (m) =>
        new Promise<string | undefined>((resolve) => {
          try {
            channel.publish(
              exchange,
              routingKey,
              Buffer.from(m.body),
              {
                persistent: true,
                messageId: m.id,
                contentType: 'application/json',
                ...(m.traceparent !== undefined && { headers: { traceparent: m.traceparent } }),
              },
              (error) =>
                resolve(error ? (this.closedBecause ?? `the broker did not confirm the message (${describeError(error)})`) : undefined),
            )
          } catch (error) {
            resolve(this.closedBecause ?? describeError(error))
          }
        }),
    )
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), this.options.timeoutMs).unref())
    const outcomes = await Promise.race([Promise.all(confirms), timer])
    const results = outcomes === 'timeout' ? undefined : outcomes
    const failed = results === undefined ? -1 : results.findIndex((error) => error !== undefined)
    if (results !== undefined && failed === -1) return { acknowledged: messages.length }
    await this.close()
    if (results === undefined) return { acknowledged: 0, error: `no confirm from ${this.where()} within ${this.options.timeoutMs} ms` }
    return { acknowledged: failed, error: results[failed]! }
  }

  async close(): Promise<void> {
    await (await this.connection.drop())?.model.close().catch(() => {})
  }
}
