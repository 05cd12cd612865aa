import { errorCodes, type FastifyInstance } from 'fastify'
import secureJson from 'secure-json-parse'
import { parseInt64 } from '../int64.js'

const SOURCE = Symbol('number source text')

/**
 * Request bodies are parsed as Fastify does (prototype poisoning refused), and every number keeps
 * its source text beside it, under a symbol the validator does not see. JSON numbers are doubles,
 * so an int64 field such as an order's petId would lose digits beyond 2^53: `exactInt64` reads it
 * back exactly from that text, after the schema has checked the field is an integer. Registered in
 * the scope of the routes that need it: the reviver costs a call per value, so a body whose every
 * number is a plain integer of at most 15 digits (no fraction, no exponent: each read exactly as a
 * double) is parsed without it, and exactInt64 takes the value itself.
 */
export function registerExactJsonParser(app: FastifyInstance) {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined)
    try {
      const reviver = NOT_ALL_SAFE_INTEGERS.test(body as string) ? keepSource : undefined
      done(null, secureJson.parse(body as string, reviver, { protoAction: 'error', constructorAction: 'error' }))
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined)
    }
  })
}

/**
 * A digit followed by a fraction or an exponent, or 16 digits in a row: a number that a double may
 * not hold exactly, or whose text is not canonical. Strings are matched too, which only costs the
 * reviver (a batch of 1,000 changes: the reviver was 14 % of the server's profile).
 */
const NOT_ALL_SAFE_INTEGERS = /[0-9][.eE]|[0-9]{16}/

function keepSource(this: Record<string | symbol, unknown>, key: string, value: unknown, context?: { source?: string }) {
  if (typeof value === 'number' && context?.source !== undefined) {
    this[SOURCE] ??= new Map<string, string>()
    ;(this[SOURCE] as Map<string, string>).set(key, context.source)
  }
  return value
}

/** The exact value of an integer field of a parsed body, or undefined when it is not a canonical int64. */
export function exactInt64(body: object, key: string): bigint | undefined {
  const sources = (body as Record<symbol, Map<string, string> | undefined>)[SOURCE]
  if (sources !== undefined) {
    const source = sources.get(key)
    return source === undefined ? undefined : parseInt64(source)
  }
  // Parsed without the reviver (or an object without numbers): every number was a plain integer
  // literal of at most 15 digits, so its double is exact; -0 is not canonical.
  const value = (body as Record<string, unknown>)[key]
  return Number.isSafeInteger(value) && !Object.is(value, -0) ? BigInt(value as number) : undefined
}
