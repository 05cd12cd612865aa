// The real brokers the broker-subscription tests publish into (issue 38): NATS with JetStream on
// 127.0.0.1:4222 and RabbitMQ on 127.0.0.1:5672 (guest/guest), as this project's machines and CI run
// them. Each test makes its own stream, or exchange and queue, under a fresh name, and removes it.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node'
import { type ChannelModel, connect as amqpConnect } from 'amqplib'
import { freePort } from '../support/metrics-scrape.js'
import { waitFor } from './receiver.js'

export const NATS_HOST = '127.0.0.1:4222'
export const AMQP_HOST = '127.0.0.1:5672'
export const BROKER_ENV = { BROKER_ALLOWED_HOSTS: `${NATS_HOST},${AMQP_HOST}` }

const fresh = (what: string) => `${what}${randomBytes(5).toString('hex')}`

/** One stored JetStream message, as a consumer reads it. */
export interface StoredMessage {
  streamSeq: number
  subject: string
  body: string
  msgId: string | undefined
  contentType: string | undefined
  /** Only when the message carried one (the service traced its delivery). */
  traceparent?: string
}

/** A JetStream stream of its own covering `<prefix>.>`, and the subscription URL publishing there. */
export class TestStream {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly name: string,
    readonly prefix: string,
    readonly host: string,
  ) {}

  /** Without `create`, only the names: the stream is made later (a subscription waiting for it). */
  static async open(create = true, host = NATS_HOST): Promise<TestStream> {
    // The test's own reads reconnect (a server restart is a test's point): only the service's must not.
    const nc = await natsConnect({ servers: host, maxReconnectAttempts: -1, reconnectTimeWait: 100 })
    const jsm = await jetstreamManager(nc)
    const stream = new TestStream(nc, jsm, fresh('PETSTORE_TEST_'), fresh('petstore_test_'), host)
    if (create) await stream.create()
    return stream
  }

  async create(): Promise<void> {
    await this.jsm.streams.add({ name: this.name, subjects: [`${this.prefix}.>`], duplicate_window: 120_000_000_000 })
  }

  url(auth = ''): string {
    return `nats://${auth}${this.host}/${this.prefix}`
  }

  async count(): Promise<number> {
    try {
      return (await this.jsm.streams.info(this.name)).state.messages
    } catch {
      return 0
    }
  }

  /** Every message the stream holds, in the stream's order. */
  async messages(): Promise<StoredMessage[]> {
    const info = await this.jsm.streams.info(this.name)
    const out: StoredMessage[] = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await this.jsm.streams.getMessage(this.name, { seq })
      if (!m) continue
      out.push({
        streamSeq: m.seq,
        subject: m.subject,
        body: new TextDecoder().decode(m.data),
        msgId: m.header?.get('Nats-Msg-Id') || undefined,
        contentType: m.header?.get('Content-Type') || undefined,
        ...(m.header?.get('traceparent') ? { traceparent: m.header.get('traceparent') } : {}),
      })
    }
    return out
  }

  async close(): Promise<void> {
    await this.jsm.streams.delete(this.name).catch(() => {})
    await this.nc.close()
  }
}

/** Waits until a server of the test's own takes a connection (closed again at once). */
async function untilConnects(connect: () => Promise<{ close(): Promise<void> }>, ms: number, what: string): Promise<void> {
  await waitFor(
    async () => {
      try {
        await (await connect()).close()
        return true
      } catch {
        return false
      }
    },
    ms,
    what,
  )
}

/**
 * A nats-server of the test's own, with JetStream stored in a folder of its own, on a free port: one
 * that a test may stop and start again without disturbing the others.
 */
export class PrivateNats {
  private child: ChildProcess | undefined

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get host() {
    return `127.0.0.1:${this.port}`
  }

  static async start(): Promise<PrivateNats> {
    const nats = new PrivateNats(await freePort(), mkdtempSync(join(tmpdir(), 'petstore-nats-')))
    await nats.up()
    return nats
  }

  async up(): Promise<void> {
    this.child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir], { stdio: 'ignore' })
    await untilConnects(() => natsConnect({ servers: this.host, reconnect: false }), 15_000, `nats-server on ${this.host}`)
  }

  async down(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }

  async close(): Promise<void> {
    await this.down()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** One message a RabbitMQ queue delivered, as a consumer sees it. */
export interface QueuedMessage {
  body: string
  messageId: string | undefined
  contentType: string | undefined
  deliveryMode: number | undefined
  routingKey: string
  /** Only when the message carried one (the service traced its delivery). */
  traceparent?: string
}

/** A topic exchange and a queue bound to it with `#`, of their own, and the subscription URL publishing there. */
export class TestExchange {
  readonly received: QueuedMessage[] = []

  private constructor(
    private readonly model: ChannelModel,
    readonly exchange: string,
    readonly queue: string,
  ) {}

  static async open(): Promise<TestExchange> {
    const model = await amqpConnect(`amqp://guest:guest@${AMQP_HOST}`)
    const t = new TestExchange(model, fresh('petstore.test.'), fresh('petstore.test.q.'))
    const channel = await model.createChannel()
    await channel.assertExchange(t.exchange, 'topic', { durable: false, autoDelete: false })
    await channel.assertQueue(t.queue, { durable: false, exclusive: false, autoDelete: false })
    await channel.bindQueue(t.queue, t.exchange, '#')
    await channel.consume(
      t.queue,
      (m) => {
        if (!m) return
        t.received.push({
          body: m.content.toString(),
          messageId: m.properties.messageId,
          contentType: m.properties.contentType,
          deliveryMode: m.properties.deliveryMode,
          routingKey: m.fields.routingKey,
          ...(m.properties.headers?.traceparent ? { traceparent: String(m.properties.headers.traceparent) } : {}),
        })
      },
      { noAck: true },
    )
    return t
  }

  url(password = 'guest', routingKey = 'stock.changed'): string {
    return `amqp://guest:${password}@${AMQP_HOST}/%2F?exchange=${encodeURIComponent(this.exchange)}&routingKey=${routingKey}`
  }

  async close(): Promise<void> {
    const channel = await this.model.createChannel()
    await channel.deleteQueue(this.queue).catch(() => {})
    await channel.deleteExchange(this.exchange).catch(() => {})
    await this.model.close()
  }
}

/** Where Debian's rabbitmq-server puts the server itself (its /usr/sbin wrapper runs as the rabbitmq user, with the machine's node's settings). */
const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'

/**
 * A RabbitMQ node of the test's own (its own name, ports, data and cookie in a folder of its own),
 * with a durable topic exchange and a durable queue bound to it with `#`: one that a test may stop
 * and start again without disturbing the others, its persistent messages kept across the restart.
 * Nothing consumes the queue until `drain`.
 */
export class PrivateRabbit {
  private child: ChildProcess | undefined
  readonly exchange = fresh('petstore.test.')
  readonly queue = fresh('petstore.test.q.')

  private constructor(
    readonly port: number,
    private readonly distPort: number,
    private readonly dir: string,
  ) {}

  get host() {
    return `127.0.0.1:${this.port}`
  }

  static async start(): Promise<PrivateRabbit> {
    const rabbit = new PrivateRabbit(await freePort(), await freePort(), mkdtempSync(join(tmpdir(), 'petstore-rabbit-')))
    writeFileSync(join(rabbit.dir, 'rabbitmq.conf'), `listeners.tcp.local = 127.0.0.1:${rabbit.port}\n`)
    writeFileSync(join(rabbit.dir, 'enabled_plugins'), '[].\n')
    await rabbit.up()
    const model = await amqpConnect(rabbit.connection())
    const channel = await model.createChannel()
    await channel.assertExchange(rabbit.exchange, 'topic', { durable: true })
    await channel.assertQueue(rabbit.queue, { durable: true })
    await channel.bindQueue(rabbit.queue, rabbit.exchange, '#')
    await model.close()
    return rabbit
  }

  private connection() {
    return `amqp://guest:guest@${this.host}`
  }

  url(routingKey = 'stock.changed'): string {
    return `${this.connection()}/%2F?exchange=${encodeURIComponent(this.exchange)}&routingKey=${routingKey}`
  }

  async up(): Promise<void> {
    const env = {
      ...process.env,
      HOME: this.dir,
      RABBITMQ_NODENAME: `petstore-test-${this.port}@localhost`,
      RABBITMQ_NODE_PORT: String(this.port),
      RABBITMQ_DIST_PORT: String(this.distPort),
      RABBITMQ_CONFIG_FILE: join(this.dir, 'rabbitmq.conf'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(this.dir, 'enabled_plugins'),
      RABBITMQ_MNESIA_BASE: join(this.dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(this.dir, 'log'),
      RABBITMQ_PID_FILE: join(this.dir, 'pid'),
    }
    this.child = spawn(RABBITMQ_SERVER, [], { env, stdio: 'ignore', detached: true })
    await untilConnects(() => amqpConnect(this.connection()), 60_000, `rabbitmq-server on ${this.host}`)
  }

  /** A graceful stop (SIGTERM to the node's process group), as `systemctl restart` does. */
  async down(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.pid === undefined) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    process.kill(-child.pid, 'SIGTERM')
    await exited
  }

  /** How many messages the queue holds, or undefined while the node does not answer. */
  async depth(): Promise<number | undefined> {
    try {
      const model = await amqpConnect(this.connection())
      try {
        return (await (await model.createChannel()).checkQueue(this.queue)).messageCount
      } finally {
        await model.close()
      }
    } catch {
      return undefined
    }
  }

  /** Every message the queue holds, in the queue's order (taken off it). */
  async drain(): Promise<QueuedMessage[]> {
    const model = await amqpConnect(this.connection())
    const channel = await model.createChannel()
    const out: QueuedMessage[] = []
    for (let m = await channel.get(this.queue, { noAck: true }); m !== false; m = await channel.get(this.queue, { noAck: true }))
      out.push({
        body: m.content.toString(),
        messageId: m.properties.messageId,
        contentType: m.properties.contentType,
        deliveryMode: m.properties.deliveryMode,
        routingKey: m.fields.routingKey,
      })
    await model.close()
    return out
  }

  async close(): Promise<void> {
    await this.down()
    rmSync(this.dir, { recursive: true, force: true })
  }
}
