import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'

/**
 * The deprecation of one operation: RFC 9745's Deprecation header (when it was deprecated), RFC 8594's
 * Sunset header (from when it is gone), and a Link to where both are documented.
 */
export class Deprecation {
  /** The three headers, written once: every response of the operation carries them. */
  readonly headers: Readonly<Record<'deprecation' | 'sunset' | 'link', string>>

  constructor(
    readonly deprecatedAt: Date,
    readonly sunsetAt: Date,
    readonly link: string,
  ) {
    this.headers = {
      // An RFC 9651 Date: '@' and the Unix seconds.
      deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
      // An IMF-fixdate (RFC 9110), which is what toUTCString writes.
      sunset: sunsetAt.toUTCString(),
      link: `<${link}>; rel="deprecation", <${link}>; rel="sunset"`,
    }
  }

  isGone(now = Date.now()): boolean {
    return now >= this.sunsetAt.getTime()
  }

  addHeaders(reply: FastifyReply): void {
    reply.headers(this.headers)
  }
}

/** The deprecation headers, as the OpenAPI document declares them on every response of a deprecated operation. */
export const DEPRECATION_HEADERS = {
  Deprecation: Type.String({
    description: 'When the operation was deprecated (RFC 9745): `@` and the Unix time in seconds, e.g. `@1767225600`.',
  }),
  Sunset: Type.String({
    description: 'From when the operation is gone, answered 410 (RFC 8594): an HTTP date, e.g. `Thu, 01 Jul 2027 00:00:00 GMT`.',
  }),
  Link: Type.String({
    description: 'Where the deprecation and the sunset are documented: `<URL>; rel="deprecation", <URL>; rel="sunset"`.',
  }),
}

/** Declares the deprecation headers on each of an operation's responses. */
export function withDeprecationHeaders<T extends Record<string, object>>(responses: T): T {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      { ...response, headers: { ...(response as { headers?: object }).headers, ...DEPRECATION_HEADERS } },
    ]),
  ) as T
}
