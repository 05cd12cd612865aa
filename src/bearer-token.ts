/**
 * The token of an `Authorization: Bearer <token>` header value (the scheme name in any case), if any.
 * Here, without HTTP or keys, because both the API keys and the metrics listener (which sits below
 * them) read bearer tokens: neither has to import the other for it.
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^bearer +(\S+) *$/i.exec(authorization ?? '')?.[1]
}
