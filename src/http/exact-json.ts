import { errorCodes, type FastifyInstance } from 'fastify'
import secureJson from 'secure-json-parse'
import { parseInt64 } from '../int64.js'

const SOURCE = Symbol('number source text')

/**
 * Request bodies are parsed as Fastify does (prototype poisoning refused), and every number keeps
 * its source text beside it, under a symbol the validator does not see. JSON numbers are doubles,
 * so an int64 field such as an order's petId would lose digits beyond 2^53: `exactInt64` reads it
 * back exactly from that text, after the schema has checked the field is an integer. Registered in
 * the scope of the routes that need it: the reviver costs a call per value.
 */
export function registerExactJsonParser(app: FastifyInstance) {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined)
    try {
      done(null, secureJson.parse(body as string, keepSource, { protoAction: 'error', constructorAction: 'error' }))
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined)
    }
  })
}

function keepSource(this: Record<string | symbol, unknown>, key: string, value: unknown, context?: { source?: string }) {
  if (typeof value === 'number' && context?.source !== undefined) {
    this[SOURCE] ??= new Map<string, string>()
    ;(this[SOURCE] as Map<string, string>).set(key, context.source)
  }
  return value
}

/** The exact value of an integer field of a parsed body, or undefined when it is not a canonical int64. */
export function exactInt64(body: object, key: string): bigint | undefined {
  const source = (body as Record<symbol, Map<string, string> | undefined>)[SOURCE]?.get(key)
  return source === undefined ? undefined : parseInt64(source)
}
