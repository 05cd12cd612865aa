import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { DestinationRefusedError } from '../errors.js'

/*
 * Where a webhook may deliver: public unicast addresses only, unless WEBHOOK_ALLOW_PRIVATE is set
 * (development, tests). A subscriber must not be able to make the service call into its own network
 * (server-side request forgery): loopback, private, link-local, unique-local, carrier-grade NAT,
 * multicast, and every other special range ipaddr.js knows are refused. A host name is checked on the
 * address it resolves to at each delivery, in the connection's own lookup, so the address checked is
 * the one connected to (a name that later resolves elsewhere gains nothing).
 */

/** Whether an IP address (v4, v6, or v4 mapped into v6) is an ordinary public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address)
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated) is 'unicast' to ipaddr.js, but names no public host.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return false
  return parsed.range() === 'unicast'
}

/** The URL's host as an address, when it is an IP literal (IPv6 without its brackets). */
function literalAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return isIP(host) ? host : undefined
}

/**
 * Checks a URL given at registration: http or https (https only in production), no credentials, and
 * where the address is known without a lookup (an IP literal, localhost), a public one.
 */
export function checkDestination(text: string, options: { allowPrivate: boolean; httpsOnly: boolean }): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new DestinationRefusedError('url must be an absolute http or https URL')
  }
  if (url.protocol !== 'https:' && (url.protocol !== 'http:' || options.httpsOnly)) {
    throw new DestinationRefusedError(options.httpsOnly ? 'url must be an https URL' : 'url must be an http or https URL')
  }
  if (url.username !== '' || url.password !== '') {
    throw new DestinationRefusedError('url must not hold credentials: the signature authenticates each message')
  }
  if (!options.allowPrivate) {
    const address = literalAddress(url)
    const host = url.hostname.replace(/\.$/, '') // `localhost.` is the same host
    const local = host === 'localhost' || host.endsWith('.localhost')
    if (local || (address !== undefined && !isPublicAddress(address))) {
      throw new DestinationRefusedError(
        `url names a loopback, private or otherwise non-public address (${url.hostname}); webhooks deliver to public addresses only`,
      )
    }
  }
  return url
}

/** Why a delivery to `url` may not connect, for an IP literal; undefined when it may (a name is checked by guardedLookup). */
export function refusedLiteral(url: URL, allowPrivate: boolean): string | undefined {
  const address = literalAddress(url)
  if (allowPrivate || address === undefined || isPublicAddress(address)) return undefined
  return `address ${address} is not public`
}

/** A connection's lookup that fails when the name resolves to any non-public address. */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...(options as LookupOptions), all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 4)
    const refused = addresses.find((a) => !isPublicAddress(a.address))
    if (refused) {
      const failure = Object.assign(new Error(`${hostname} resolves to ${refused.address}, which is not public`), {
        code: 'EREFUSEDADDRESS',
      })
      return callback(failure, '', 4)
    }
    if ((options as LookupOptions).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses)
    const [first] = addresses
    callback(null, first!.address, first!.family)
  })
}
