import { isDeepStrictEqual } from 'node:util'
import { codeForStatus, ERROR_CODES, type ErrorCode } from '../errors.js'
import { ERROR_EXAMPLES, errorResponses } from './error.schema.js'
import { REQUEST_ID } from './plugins/request-ids.js'
import { RATE_LIMIT_HEADERS } from './rate-limit.js'

/**
 * What the OpenAPI document says about every operation at once, added to the document
 * @fastify/swagger generated from the routes' schemas (its `transformObject`): what the service
 * sends outside any route's schema (X-Request-Id on every answer; 405, 408 and 431 before any route
 * runs), the Error examples of each error response, and the shared headers written once under
 * `components`. Everything here is derived from the same constants the service uses.
 */

// The document is plain JSON data walked by key: its shape is OpenAPI's, not a TypeScript type.
// biome-ignore lint/suspicious/noExplicitAny: see above
type Json = any

const ERROR_REF = '#/components/schemas/Error'

/** A response header as @fastify/swagger writes one from a route's TypeBox header schema. */
function headerObject(schema: object): Json {
  const { description, ...rest } = JSON.parse(JSON.stringify(schema)) as Json
  return { schema: rest, description }
}

/** Headers declared once under components.headers; a response's header of the same name refers to it. */
const SHARED_HEADERS: Record<string, Json> = {
  'X-Request-Id': {
    description:
      "The request's id, on every response: the client's own X-Request-Id when it sent one of 1 to 128 letters, digits or " +
      '`._:@/+=-`, otherwise a generated UUID. Every log line of the request carries it: quote it when reporting a problem.',
    schema: { type: 'string', pattern: REQUEST_ID.source, examples: ['0b9c2f5e-4d1a-4c8e-9f3b-7a6d5e4c3b2a'] },
  },
  'RateLimit-Policy': headerObject(RATE_LIMIT_HEADERS['RateLimit-Policy']),
  RateLimit: headerObject(RATE_LIMIT_HEADERS.RateLimit),
}
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

/**
 * Sent to any operation's request by the HTTP server or the 405 routes, before any route of the
 * operation runs: declared once under components.responses, and referred to by every operation that
 * does not declare its own (the deprecated lookup does, its 405s carrying the deprecation headers).
 */
const SHARED_RESPONSES: Record<number, string> = { 405: 'MethodNotAllowed', 408: 'RequestTimeout', 431: 'HeadersTooLarge' }

/** A response of errorResponses() (a TypeBox Ref to Error), as the document writes it. */
function errorResponseObject(status: number): Json {
  const { description, headers = {} } = errorResponses(status)[status] as unknown as { description: string; headers?: object }
  return {
    description,
    headers: {
      ...Object.fromEntries(Object.entries(headers).map(([name, schema]) => [name, headerObject(schema)])),
      'X-Request-Id': headerRef('X-Request-Id'),
    },
    content: { 'application/json': { schema: { $ref: ERROR_REF } } },
  }
}

/**
 * The codes an Error response of `status` is sent with: those of its status that its description
 * names (`code`), else the status's one code. A status whose codes are all rules' (409) must name them.
 */
export function codesOf(status: number, description: string): ErrorCode[] {
  const ofStatus = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code] === status)
  const named = ofStatus.filter((code) => description.includes(`\`${code}\``))
  if (named.length > 0) return named
  const code = codeForStatus(status)
  if (code === undefined) throw new Error(`an Error response ${status} must name its codes in its description: ${description}`)
  return [code]
}

/** One example per code the response is sent with, as the service words them. */
function addErrorExamples(status: number, response: Json) {
  const media = response.content?.['application/json']
  if (media?.schema?.$ref !== ERROR_REF) return
  media.examples = Object.fromEntries(
    codesOf(status, response.description).map((code) => [code, { value: { code, message: ERROR_EXAMPLES[code], status } }]),
  )
}

/** Replaces each shared header by a reference; a header of a shared name must be declared the same. */
function shareHeaders(where: string, response: Json) {
  response.headers = { ...response.headers, 'X-Request-Id': SHARED_HEADERS['X-Request-Id'] }
  for (const [name, header] of Object.entries<Json>(response.headers)) {
    const shared = SHARED_HEADERS[name]
    if (shared === undefined) continue
    if (!isDeepStrictEqual(header, shared)) throw new Error(`${where} declares ${name} unlike components.headers`)
    response.headers[name] = headerRef(name)
  }
}

/**
 * A document with a bigint anywhere (an int64 example: TypeBox schemas write them as bigints, since
 * a double cannot hold 9007199254740993) made writable: each becomes a BigInt object that JSON
 * writes digit for digit (JSON.rawJSON) and YAML as the number it holds.
 */
function exactIntegers(value: Json): Json {
  if (typeof value === 'bigint') {
    const exact = Object(value)
    Object.defineProperty(exact, 'toJSON', { value: () => rawJSON(value.toString()) })
    return exact
  }
  if (Array.isArray(value)) return value.map(exactIntegers)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, exactIntegers(item)]))
  }
  return value
}

// Node 22 and 24 have it (ES2025's JSON.parse source text access); TypeScript 5.9's lib does not declare it yet.
const rawJSON = (JSON as unknown as { rawJSON(text: string): object }).rawJSON

const byStatus = (responses: Json) => Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))

/** For the swagger plugin's `transformObject`, which passes `{ openapiObject }` for an OpenAPI 3 document. */
export function finishDocument({ openapiObject: doc }: Json): Json {
  doc.components.headers = SHARED_HEADERS
  doc.components.responses = Object.fromEntries(
    Object.entries(SHARED_RESPONSES).map(([status, name]) => {
      const response = errorResponseObject(Number(status))
      addErrorExamples(Number(status), response)
      return [name, response]
    }),
  )
  for (const [path, operations] of Object.entries<Json>(doc.paths)) {
    for (const [method, operation] of Object.entries<Json>(operations)) {
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        shareHeaders(`${method} ${path} ${status}`, response)
        addErrorExamples(Number(status), response)
      }
      for (const [status, name] of Object.entries(SHARED_RESPONSES)) {
        operation.responses[status] ??= { $ref: `#/components/responses/${name}` }
      }
      operation.responses = byStatus(operation.responses)
    }
  }
  return exactIntegers(doc)
}
