import { WEBHOOK_LIMITS, type Webhook } from '../domain.js'
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js'
import type { LedgerJumps, LedgerReads, LedgerRetention, WebhookStore } from '../storage/ports.js'
import { isBrokerUrl, parseBrokerUrl } from './broker-destination.js'
import { checkDestination } from './destination.js'
import { newMessageTag, newSecret } from './signature.js'

export interface WebhooksSettings {
  /** WEBHOOK_ALLOW_PRIVATE: destinations on non-public addresses are accepted. */
  allowPrivate: boolean
  /** In production only https URLs are accepted. */
  httpsOnly: boolean
  /** BROKER_ALLOWED_HOSTS: the brokers a nats:// or amqp:// subscription may name (none when unset). */
  brokerAllowedHosts: readonly string[] | undefined
}

/** Ids are 32-bit: a larger one names no subscription. */
export const MAX_WEBHOOK_ID = 2 ** 31 - 1

/**
 * Webhook subscriptions, as an admin (over HTTP or the CLI) manages them. `onChange` tells this
 * process's delivery to look at the subscriptions now, rather than at its next lease renewal.
 */
export class WebhooksService {
  constructor(
    private readonly store: WebhookStore & Pick<LedgerReads, 'lastChangeSeq'> & LedgerRetention & Pick<LedgerJumps, 'jumpOver'>,
    private readonly settings: WebhooksSettings,
    private readonly onChange: () => void = () => {},
  ) {}

  /** Creates a subscription starting at the ledger's current end; its secret is returned this once. */
  async create(url: string, description: string | null): Promise<{ webhook: Webhook; secret: string }> {
    // The HTTP schema says the same; the CLI comes here directly.
    if ([...url].length > WEBHOOK_LIMITS.urlLength) throw new InvalidInputError(`url is longer than ${WEBHOOK_LIMITS.urlLength} characters`)
    if (description !== null && [...description].length > WEBHOOK_LIMITS.descriptionLength) {
      throw new InvalidInputError(`description is longer than ${WEBHOOK_LIMITS.descriptionLength} characters`)
    }
    if (isBrokerUrl(url)) parseBrokerUrl(url, this.settings.brokerAllowedHosts ?? [])
    else checkDestination(url, this.settings)
    const secret = newSecret()
    const webhook = await this.store.createWebhook(
      { url, description, secret, messageTag: newMessageTag(), createdAt: new Date().toISOString() },
      WEBHOOK_LIMITS.subscriptions,
    )
    if (!webhook) {
      throw new ConflictError(
        'webhook_limit_reached',
        `There are ${WEBHOOK_LIMITS.subscriptions} webhook subscriptions already; remove one first`,
      )
    }
    this.onChange()
    return { webhook, secret }
  }

  list(): Promise<Webhook[]> {
    return this.store.listWebhooks()
  }

  async get(id: bigint | number): Promise<Webhook> {
    const webhook = inRange(id) ? await this.store.getWebhook(Number(id)) : undefined
    if (!webhook) throw notFound(id)
    return webhook
  }

  async remove(id: bigint | number): Promise<void> {
    if (!inRange(id) || !(await this.store.deleteWebhook(Number(id)))) throw notFound(id)
    this.onChange()
  }

  /**
   * Resumes a subscription from its cursor: disabled or failing, it is tried again now. A cursor
   * before rows retention removed, or in a jump's seqs (disabled as cursor_expired), resumes from the
   * ledger's end instead.
   */
  async enable(id: bigint | number): Promise<Webhook> {
    if (!inRange(id)) throw notFound(id)
    let expiredBefore = await this.store.prunedThrough()
    const current = await this.store.getWebhook(Number(id))
    if (current && (await this.store.jumpOver(current.deliveredThrough)) && current.deliveredThrough >= expiredBefore)
      expiredBefore = current.deliveredThrough + 1n
    const webhook = await this.store.enableWebhook(Number(id), expiredBefore, await this.store.lastChangeSeq())
    if (!webhook) throw notFound(id)
    this.onChange()
    return webhook
  }
}

const inRange = (id: bigint | number) => id >= 1 && id <= MAX_WEBHOOK_ID
const notFound = (id: bigint | number) => new NotFoundError(`No webhook subscription numbered ${id}`)
