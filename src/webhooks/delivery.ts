import { type KeyObject, randomUUID } from 'node:crypto'
import type { Config } from '../config.js'
import type { InventoryChange, WebhookTarget } from '../domain.js'
import { DestinationRefusedError, jumpedOver } from '../errors.js'
import type { LedgerTail } from '../changes/ledger-tail.js'
import { traceparentOf, tracing } from '../spans.js'
import type { LedgerJumps, LedgerReads, LedgerRetention, WebhookStore } from '../storage/ports.js'
import { isBrokerUrl, parseBrokerUrl } from './broker-destination.js'
import { openPublisher } from './brokers/open-publisher.js'
import { type BrokerMessage, describeError, type Published, type Publisher } from './brokers/publisher.js'
import { brokerSpans, endBrokerSpans, endWebhookSpan, webhookSpan } from './delivery-spans.js'
import { webhookMessage } from './message.js'
import { WebhookSender } from './send.js'
import { sign, signingKey } from './signature.js'
import { saidOnce } from '../storage/faults.js'

/** Ledger rows a subscription reads per step: POSTed one by one, or published to a broker pipelined. */
const READ_ROWS = 100
const BROKER_READ_ROWS = 1000
/** While its lease may have lapsed, a loop waits this long between looks. */
const LEASE_WAIT_MS = 250
/** After a database failure, a subscription's loop waits this long (doubling up to the last) and tries again. */
const BACKOFF_MS = [250, 500, 1000, 2000, 5000]
/** Each retry waits its scheduled time, give or take this fraction, so failing receivers are not hit in step. */
const JITTER = 0.1

export type DeliverySettings = {
  timeoutMs: Config['webhookTimeoutMs']
  retryScheduleMs: Config['webhookRetryScheduleMs']
  allowPrivate: Config['webhookAllowPrivate']
  leaseMs: Config['webhookLeaseMs']
  brokerAllowedHosts: Config['brokerAllowedHosts']
}

export interface DeliveryLog {
  info(object: object, message: string): void
  warn(object: object, message: string): void
  error(object: object, message: string): void
}

/** What delivery reports, for the metrics. */
export interface DeliveryObserver {
  attempted(outcome: 'delivered' | 'failed' | 'disabled'): void
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })

/**
 * Webhook delivery in one process. Every WEBHOOK_LEASE_MS / 3 it takes (or renews) the lease of each
 * enabled subscription that no live process holds, and runs one loop per subscription it holds:
 * each ledger row after the subscription's durable cursor becomes one signed message, POSTed in seq
 * order; a 2xx moves the cursor (only while the lease is still this process's), a failure is
 * retried along WEBHOOK_RETRY_SCHEDULE with the same webhook-id, and past the schedule the
 * subscription is disabled. A process that dies stops renewing: another takes its subscriptions once
 * their leases expire, and sends again the message that was in flight (at least once).
 */
export class WebhookDelivery {
  /** This process's name on the leases: a new one at every start. */
  readonly owner = randomUUID()
  private readonly loops = new Map<number, SubscriptionLoop>()
  private timer: NodeJS.Timeout | undefined
  private scanning: Promise<void> | undefined
  private rescan: Promise<void> | undefined
  private stopped = false

  constructor(
    private readonly store: WebhookStore,
    private readonly ledger: LedgerReads & LedgerRetention & Pick<LedgerJumps, 'jumpOver'>,
    private readonly tail: LedgerTail,
    private readonly settings: DeliverySettings,
    private readonly log: DeliveryLog,
    private readonly observer?: DeliveryObserver,
  ) {}

  start(): void {
    if (this.timer || this.stopped) return
    this.timer = setInterval(() => void this.scan(), Math.max(100, Math.floor(this.settings.leaseMs / 3))).unref()
    void this.scan()
  }

  /**
   * Takes and renews leases now (after a subscription is created, enabled or deleted here). Asked
   * during a scan, it scans once more after it: the one in progress may have read the table before.
   */
  scan(): Promise<void> {
    if (this.scanning) {
      this.rescan ??= this.scanning.then(() => {
        this.rescan = undefined
        return this.scan()
      })
      return this.rescan
    }
    this.scanning = this.leaseAndRun().finally(() => {
      this.scanning = undefined
    })
    return this.scanning
  }

  /** Stops every loop (a message in flight is left to finish or not) and gives the leases up. */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    await this.scanning
    for (const loop of this.loops.values()) loop.stop()
    await Promise.all([...this.loops.values()].map((loop) => loop.done))
    this.loops.clear()
    await this.store.releaseWebhooks(this.owner).catch(() => {})
  }

  private async leaseAndRun(): Promise<void> {
    if (this.stopped) return
    let held: WebhookTarget[]
    try {
      held = await this.store.leaseWebhooks(this.owner, this.settings.leaseMs)
      // The tail (a LISTEN connection on PostgreSQL) only once there is something to deliver.
      if (held.length > 0) await this.tail.start()
    } catch (error) {
      // A lasting fault of the database is said once, by its own lines (storage/faults.ts).
      if (!saidOnce(error)) this.log.warn({ err: error }, 'webhook delivery could not renew its leases; retrying')
      return
    }
    if (this.stopped) return
    const ids = new Set(held.map((w) => w.id))
    for (const [id, loop] of this.loops) {
      if (!ids.has(id) || loop.finished) {
        loop.stop()
        this.loops.delete(id)
      }
    }
    // This process's view of when the leases it just took end (a little early: clocks and the query's time).
    const leaseUntil = Date.now() + this.settings.leaseMs * 0.8
    for (const webhook of held) {
      const running = this.loops.get(webhook.id)
      if (running) {
        running.leaseUntil = leaseUntil
        running.refresh(webhook)
        continue
      }
      const loop = new SubscriptionLoop(webhook, this.owner, this.store, this.ledger, this.tail, this.settings, this.log, this.observer)
      loop.leaseUntil = leaseUntil
      this.loops.set(webhook.id, loop)
    }
  }
}

/** One subscription's deliveries, in seq order, while this process holds its lease. */
class SubscriptionLoop {
  private readonly abort = new AbortController()
  /** Aborts the wait for a retry (refresh). */
  private nap: AbortController | undefined
  /**
   * The cursor as last written. Every message up to state.deliveredThrough was answered 2xx; the two
   * differ only between an answer and its record, or after a write failed (the loop then writes
   * again, backing off, before it sends anything).
   */
  private recorded: bigint
  private lastSuccessAt = ''
  /** The lease went to another process (or the subscription was deleted). */
  private lostLease = false
  /** An http(s) subscription's sender, or none for a broker's. */
  private readonly sender: WebhookSender | undefined
  /** A broker subscription's connection, opened at its first publish. */
  private publisher: Publisher | undefined
  private readonly broker: boolean
  /** The subscription secret as an HMAC key, made once. */
  private readonly key: KeyObject
  finished = false
  readonly done: Promise<void>
  /**
   * When the lease, as this process last renewed it, ends: past it no message is sent (the renewals
   * have been failing, and another process may hold the subscription by now).
   */
  leaseUntil = Number.POSITIVE_INFINITY

  constructor(
    private readonly state: WebhookTarget,
    private readonly owner: string,
    private readonly store: WebhookStore,
    private readonly ledger: LedgerReads & LedgerRetention & Pick<LedgerJumps, 'jumpOver'>,
    private readonly tail: LedgerTail,
    private readonly settings: DeliverySettings,
    private readonly log: DeliveryLog,
    private readonly observer?: DeliveryObserver,
  ) {
    this.recorded = state.deliveredThrough
    this.broker = isBrokerUrl(state.destination)
    this.sender = this.broker
      ? undefined
      : new WebhookSender(new URL(state.destination), { timeoutMs: settings.timeoutMs, allowPrivate: settings.allowPrivate })
    this.key = signingKey(state.secret)
    this.done = this.run().finally(async () => {
      this.finished = true
      this.sender?.close()
      await this.publisher?.close()
    })
  }

  /**
   * Ends the loop after the message in flight, if any: it is answered (or times out) and recorded
   * first, so a graceful stop sends nothing twice. `done` resolves then.
   */
  stop(): void {
    this.abort.abort()
  }

  /**
   * The subscription as the lease renewal read it: enabled again while a retry waited (its failures
   * cleared, its cursor where this loop left it), the retry is due now.
   */
  refresh(fresh: WebhookTarget): void {
    const s = this.state
    if (
      s.nextAttemptAt !== null &&
      fresh.nextAttemptAt === null &&
      fresh.failedAttempts === 0 &&
      fresh.deliveredThrough === s.deliveredThrough
    ) {
      Object.assign(s, { nextAttemptAt: null, failedAttempts: 0 })
      this.nap?.abort()
    }
  }

  private get stopped() {
    return this.abort.signal.aborted
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal
    let failures = 0
    while (!this.stopped) {
      try {
        const due = this.state.nextAttemptAt === null ? 0 : Date.parse(this.state.nextAttemptAt) - Date.now()
        if (due > 0) {
          this.nap = new AbortController()
          await sleep(due, AbortSignal.any([signal, this.nap.signal]))
          continue
        }
        // An answer whose record failed is recorded before anything else is sent.
        await this.record()
        if (this.tail.position <= this.state.deliveredThrough) {
          await this.tail.beyond(this.state.deliveredThrough, signal)
          continue
        }
        const rows = await this.ledger.listChanges({
          after: this.state.deliveredThrough,
          limit: this.broker ? BROKER_READ_ROWS : READ_ROWS,
          // Traced: each delivery's span links to the request that made its row.
          traceContexts: tracing(),
        })
        // Rows after the cursor removed by retention: sending on would skip them silently.
        const pruned = await this.ledger.prunedThrough()
        if (this.state.deliveredThrough < pruned) {
          await this.expire(`retention removed every change up to ${pruned}`, 'its cursor is before rows retention removed')
          continue
        }
        // A cursor in a jump's seqs (set by hand, or a store restored without its subscriptions' rows):
        // the rows after the jump are of another history than the one the receiver has seen.
        const jump = await this.ledger.jumpOver(this.state.deliveredThrough)
        if (jump) {
          await this.expire(jumpedOver(jump), 'its cursor is in the seqs a restore or a bump skipped')
          continue
        }
        // None past the cursor though the tail is beyond it: rows removed from the ledger. Wait for new ones.
        if (rows.length === 0) await this.tail.beyond(this.tail.position, signal)
        else if (this.broker) await this.publish(rows)
        else await this.post(rows)
        failures = 0
      } catch (error) {
        const wait = BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)]!
        if (!saidOnce(error))
          this.log.warn({ err: error, webhook: this.state.id }, 'webhook delivery could not reach the database; retrying')
        await sleep(wait, signal)
      }
    }
    // Stopping (gracefully): what was answered is recorded before the lease goes.
    await this.record().catch((error: unknown) => {
      if (!saidOnce(error)) this.log.warn({ err: error, webhook: this.state.id }, 'could not record the webhook cursor')
    })
  }

  /**
   * Writes the cursor when an answered message is not yet recorded; fenced by the lease (a lost lease
   * ends the loop). Throws what the write met: the caller backs off and this runs again first.
   */
  private async record(): Promise<void> {
    const seq = this.state.deliveredThrough
    if (this.recorded >= seq || this.lostLease) return
    if (await this.store.recordDelivery(this.state.id, this.owner, seq, this.lastSuccessAt)) this.recorded = seq
    else this.lost()
  }

  /** An http(s) subscription's rows, POSTed one at a time, each recorded before the next. */
  private async post(rows: InventoryChange[]): Promise<void> {
    for (const row of rows) {
      if (this.stopped) return
      if (Date.now() >= this.leaseUntil) {
        await sleep(LEASE_WAIT_MS, this.abort.signal)
        return
      }
      if (!(await this.deliver(row))) return
    }
  }

  /**
   * One attempt of one row's message; true when it was delivered and recorded. The record is durable
   * before the next message is sent, so a crash sends again only the message that was in flight.
   */
  private async deliver(row: InventoryChange): Promise<boolean> {
    const { id: messageId, body } = webhookMessage(this.state.messageTag, row)
    const timestamp = Math.floor(Date.now() / 1000)
    const headers: Record<string, string> = {
      'webhook-id': messageId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': sign(this.key, messageId, timestamp, body),
      'user-agent': 'petstore-webhooks/1',
    }
    const span = webhookSpan(this.sender!.url, this.state.id, row)
    if (span !== undefined) headers.traceparent = traceparentOf(span)
    const outcome = await this.sender!.send(headers, body)
    endWebhookSpan(span, outcome.status, outcome.ok ? undefined : outcome.errorType)
    const at = new Date().toISOString()
    if (outcome.ok) {
      Object.assign(this.state, { deliveredThrough: row.seq, failedAttempts: 0, nextAttemptAt: null, failingSince: null })
      this.lastSuccessAt = at
      this.observer?.attempted('delivered')
      await this.record()
      return !this.lostLease
    }
    return this.failed(messageId, outcome.error)
  }

  /**
   * A broker subscription's rows, published pipelined: the cursor moves past the messages the broker
   * acknowledged (recorded before anything more is sent), and a failure counts as one failed attempt
   * of the first message not acknowledged, retried along the schedule as an HTTP one is.
   */
  private async publish(rows: InventoryChange[]): Promise<void> {
    if (Date.now() >= this.leaseUntil) {
      await sleep(LEASE_WAIT_MS, this.abort.signal)
      return
    }
    const messages: BrokerMessage[] = rows.map((row) => ({ ...webhookMessage(this.state.messageTag, row), petId: row.petId }))
    const spans = brokerSpans(
      this.state.destination,
      rows,
      messages.map((m) => m.id),
    )
    if (spans !== undefined) for (const [i, span] of spans.entries()) messages[i]!.traceparent = traceparentOf(span)
    let published: Published
    try {
      // Checked again at each connection: the operator may have taken the broker off BROKER_ALLOWED_HOSTS.
      this.publisher ??= await openPublisher(parseBrokerUrl(this.state.destination, this.settings.brokerAllowedHosts ?? []), {
        timeoutMs: this.settings.timeoutMs,
      })
      published = await this.publisher.publish(messages)
    } catch (error) {
      published = {
        acknowledged: 0,
        error: error instanceof DestinationRefusedError ? error.message : describeError(error),
      }
    }
    endBrokerSpans(spans, published.acknowledged)
    if (published.acknowledged > 0) {
      const through = rows[published.acknowledged - 1]!.seq
      Object.assign(this.state, { deliveredThrough: through, failedAttempts: 0, nextAttemptAt: null, failingSince: null })
      this.lastSuccessAt = new Date().toISOString()
      for (let n = 0; n < published.acknowledged; n++) this.observer?.attempted('delivered')
      await this.record()
    }
    if (published.error !== undefined && !this.lostLease) await this.failed(messages[published.acknowledged]!.id, published.error)
  }

  /** One failed attempt of the message `messageId`: recorded, retried along the schedule, or the subscription disabled past it. */
  private async failed(messageId: string, reason: string): Promise<false> {
    // Stopping: a failure now is not counted against the subscription (the next holder tries at once).
    if (this.stopped) return false
    const at = new Date().toISOString()
    const failedAttempts = this.state.failedAttempts + 1
    const wait = this.settings.retryScheduleMs[failedAttempts - 1]
    const nextAttemptAt =
      wait === undefined ? undefined : new Date(Date.now() + wait * (1 - JITTER + 2 * JITTER * Math.random())).toISOString()
    const error = wait === undefined ? `${failedAttempts} attempts failed; the last: ${reason}` : reason
    if (!(await this.store.recordFailure(this.state.id, this.owner, { at, error, failedAttempts, nextAttemptAt }))) return this.lost()
    Object.assign(this.state, { failedAttempts, nextAttemptAt: nextAttemptAt ?? null })
    const context = { webhook: this.state.id, messageId, error: reason, failedAttempts }
    if (nextAttemptAt === undefined) {
      this.observer?.attempted('disabled')
      this.log.error(context, 'webhook disabled: its retry schedule ran out')
      this.abort.abort()
    } else {
      this.observer?.attempted('failed')
      this.log.warn({ ...context, nextAttemptAt }, 'webhook delivery failed; it will be retried')
    }
    return false
  }

  /**
   * The cursor is before rows retention removed, or in a jump's seqs: the subscription is disabled,
   * saying so (enabling it resumes from the ledger's end then), and this loop ends.
   */
  private async expire(why: string, logged: string): Promise<void> {
    const error =
      `cursor_expired: the ledger no longer holds the changes after ${this.state.deliveredThrough} (${why}); ` +
      `enabling the subscription resumes from the ledger's end`
    const failure = { at: new Date().toISOString(), error, failedAttempts: this.state.failedAttempts + 1, nextAttemptAt: undefined }
    if (!(await this.store.recordFailure(this.state.id, this.owner, failure))) {
      this.lost()
      return
    }
    this.log.error({ webhook: this.state.id, error }, `webhook disabled: ${logged}`)
    this.abort.abort()
  }

  /** The lease went to another process (or the subscription was deleted): this loop ends. */
  private lost(): false {
    this.lostLease = true
    this.abort.abort()
    return false
  }
}
