import { DestinationRefusedError } from '../errors.js'

/*
 * Subscriptions that publish into a message broker the store runs (issue 38), named by URL as
 * Shopify's `pubsub://` and `arn:aws:events:` addresses are:
 *
 *   nats://[USER:PASSWORD@ | TOKEN@]HOST:PORT/SUBJECT_PREFIX     each change to SUBJECT_PREFIX.<petId>
 *   amqp://USER:PASSWORD@HOST:PORT/VHOST?exchange=NAME&routingKey=KEY   (amqps:// with TLS)
 *
 * Brokers live on private networks, so the public-address rule of http(s) does not apply; instead a
 * broker URL is accepted only for a host:port the operator listed in BROKER_ALLOWED_HOSTS, compared
 * as written, so that an admin key cannot make the service dial arbitrary internal ports. The URL may
 * carry credentials: it is stored whole, and shown only masked (config.ts maskUrl, where storage reads it).
 */

export const BROKER_SCHEMES = ['nats:', 'amqp:', 'amqps:'] as const

export type BrokerDestination =
  | {
      kind: 'nats'
      /** host:port, as written. */
      server: string
      user?: string
      pass?: string
      token?: string
      /** Each change goes to `<subjectPrefix>.<petId>`. */
      subjectPrefix: string
    }
  | {
      kind: 'amqp'
      /** The connection URL (scheme, credentials, host, port, vhost), without the query. */
      connection: string
      exchange: string
      routingKey: string
    }

/** A NATS subject token: no wildcards, separators or white space (the server's own rule, as ASCII printable). */
const SUBJECT_TOKEN = /^[!-~]+$/
const NO_TOKEN_CHARS = /[.*>]/

export const isBrokerUrl = (text: string) => BROKER_SCHEMES.some((scheme) => text.toLowerCase().startsWith(`${scheme}//`))

/**
 * Parses and checks a broker URL given at registration or read back for delivery; throws
 * DestinationRefusedError (400 destination_refused) saying what is wrong, never quoting a password.
 */
export function parseBrokerUrl(text: string, allowedHosts: readonly string[]): BrokerDestination {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new DestinationRefusedError('url is not a valid URL')
  }
  if (!(BROKER_SCHEMES as readonly string[]).includes(url.protocol))
    throw new DestinationRefusedError('url must be an http, https, nats, amqp or amqps URL')
  if (url.port === '') throw new DestinationRefusedError(`url must name the broker's port (${url.protocol}//HOST:PORT/…)`)
  const server = `${url.hostname}:${url.port}`
  if (!allowedHosts.includes(server))
    throw new DestinationRefusedError(
      `url names ${server}, which is not in BROKER_ALLOWED_HOSTS${allowedHosts.length === 0 ? ' (unset: no broker is allowed)' : ''}`,
    )
  if (url.hash !== '') throw new DestinationRefusedError('url must not have a fragment')
  const user = decodeURIComponent(url.username)
  const pass = decodeURIComponent(url.password)
  if (url.protocol === 'nats:') {
    if (url.search !== '') throw new DestinationRefusedError('a nats URL takes no query: nats://HOST:PORT/SUBJECT_PREFIX')
    const subjectPrefix = decodeURIComponent(url.pathname.replace(/^\//, ''))
    const tokens = subjectPrefix.split('.')
    if (subjectPrefix === '' || !tokens.every((t) => SUBJECT_TOKEN.test(t) && !NO_TOKEN_CHARS.test(t)))
      throw new DestinationRefusedError(
        'a nats URL ends in a subject prefix: dot-separated tokens of printable characters without *, > or spaces (nats://HOST:PORT/petstore.stock)',
      )
    const auth = pass !== '' ? { user, pass } : user !== '' ? { token: user } : {}
    return { kind: 'nats', server, subjectPrefix, ...auth }
  }
  const params = new URLSearchParams(url.search)
  for (const name of params.keys())
    if (name !== 'exchange' && name !== 'routingKey')
      throw new DestinationRefusedError(`an amqp URL takes exchange and routingKey in its query, not ${JSON.stringify(name).slice(0, 40)}`)
  const exchange = params.get('exchange')
  if (exchange === null)
    throw new DestinationRefusedError('an amqp URL names its exchange: amqp://USER:PASSWORD@HOST:PORT/VHOST?exchange=NAME&routingKey=KEY')
  const connection = new URL(url)
  connection.search = ''
  return { kind: 'amqp', connection: connection.toString(), exchange, routingKey: params.get('routingKey') ?? '' }
}
