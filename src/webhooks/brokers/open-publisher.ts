import type { BrokerDestination } from '../broker-destination.js'
import type { Publisher, PublisherOptions } from './publisher.js'

/** The broker's client, loaded only now: a service without broker subscriptions never loads it. */
export async function openPublisher(destination: BrokerDestination, options: PublisherOptions): Promise<Publisher> {
  if (destination.kind === 'nats') return new (await import('./jetstream.js')).JetStreamPublisher(destination, options)
  return new (await import('./amqp.js')).AmqpPublisher(destination, options)
}
