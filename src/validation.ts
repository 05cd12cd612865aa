import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { parseInt64 } from './int64.js'

/**
 * The one validator for request bodies and import rows: strict JSON types, no coercion
 * ("5", true and 1.5 are not quantities), unknown fields rejected rather than stripped.
 */
export function createValidator(sharedSchemas: object[]) {
  const ajv = new Ajv({
    coerceTypes: false,
    removeAdditional: false,
    useDefaults: false,
    allErrors: false,
    strict: true,
  })
  ajv.addFormat('int64', { type: 'number', validate: () => true })
  // Only responses carry dates, and the service writes them itself.
  ajv.addFormat('date-time', { type: 'string', validate: () => true })
  for (const schema of sharedSchemas) ajv.addSchema(schema)
  return ajv
}

/** One readable sentence for the first validation error, naming the offending field. */
export function describeValidationError(error: ErrorObject, subject: string): string {
  // An array's item by its index, as a client writes it: body.changes[17].delta.
  const where =
    subject +
    error.instancePath
      .split('/')
      .slice(1)
      .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
      .join('')
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where} has unknown field ${excerpt(String(error.params.additionalProperty))}`
    case 'required':
      return `${where} is missing required field '${String(error.params.missingProperty)}'`
    case 'enum':
      return `${where} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
    default:
      return `${where} ${error.message ?? 'is invalid'}`
  }
}

export type Validate = ValidateFunction

/**
 * A piece of client-supplied text for a message: at most `max` characters, quoted and escaped as a
 * JSON string, so it can neither flood a message nor put control bytes on a terminal or in a log.
 */
export function excerpt(text: string, max = 40): string {
  const cut = [...text].length > max ? `${[...text].slice(0, max).join('')}…` : text
  return JSON.stringify(cut).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * Path parameters arrive as text, and a JSON-schema integer check would go through a double and lose
 * digits beyond 2^53. Parameters declared `format: int64` are parsed exactly to bigint instead.
 */
export function compileParamsValidator(schema: { properties?: Record<string, { type?: string; format?: string }> }) {
  const props = Object.entries(schema.properties ?? {})
  for (const [name, prop] of props) {
    if (prop.format !== 'int64') throw new Error(`path parameter ${name}: only int64 parameters are supported`)
  }
  return (params: Record<string, string>) => {
    const value: Record<string, bigint> = {}
    for (const [name] of props) {
      const parsed = parseInt64(params[name] ?? '')
      if (parsed === undefined) {
        return { error: new Error(`path parameter ${name} must be a decimal int64 integer`) }
      }
      value[name] = parsed
    }
    return { value }
  }
}

interface QueryProperty {
  type?: string
  format?: string
  minimum?: number
  maximum?: number
  enum?: string[]
  default?: unknown
}

/**
 * Query parameters arrive as text, like path parameters, and get the same exactness: an `int64` is
 * parsed to a bigint, an integer must be canonical decimal text within its bounds, a string one of
 * its enum. A parameter named twice, or one the operation does not declare, is refused: a typo in a
 * filter must not silently widen the answer. Declared defaults fill what is absent.
 */
export function compileQueryValidator(schema: { properties?: Record<string, QueryProperty> }) {
  const props = Object.entries(schema.properties ?? {})
  for (const [name, prop] of props) {
    if (!(prop.type === 'integer' || (prop.type === 'string' && prop.enum))) {
      throw new Error(`query parameter ${name}: only integers and string enums are supported`)
    }
  }
  const declared = new Set(props.map(([name]) => name))
  return (query: Record<string, unknown>) => {
    const unknown = Object.keys(query).find((name) => !declared.has(name))
    if (unknown !== undefined) {
      const allowed = declared.size > 0 ? `allowed: ${[...declared].join(', ')}` : 'this operation takes no query parameters'
      return { error: new Error(`unknown query parameter ${excerpt(unknown)}; ${allowed}`) }
    }
    const value: Record<string, unknown> = {}
    for (const [name, prop] of props) {
      const given = query[name]
      if (given === undefined) {
        if (prop.default !== undefined) value[name] = prop.format === 'int64' ? BigInt(prop.default as number) : prop.default
        continue
      }
      const parsed = typeof given === 'string' ? parseQueryValue(given, prop) : undefined
      if (parsed === undefined) return { error: new Error(`query parameter ${name} ${expectation(prop)}`) }
      value[name] = parsed
    }
    return { value }
  }
}

function parseQueryValue(text: string, prop: QueryProperty): unknown {
  if (prop.enum) return prop.enum.includes(text) ? text : undefined
  const exact = parseInt64(text)
  if (exact === undefined) return undefined
  if ((prop.minimum !== undefined && exact < BigInt(prop.minimum)) || (prop.maximum !== undefined && exact > BigInt(prop.maximum))) {
    return undefined
  }
  return prop.format === 'int64' ? exact : Number(exact)
}

function expectation(prop: QueryProperty): string {
  if (prop.enum) return `must be one of: ${prop.enum.join(', ')}`
  const range =
    prop.minimum !== undefined && prop.maximum !== undefined
      ? ` from ${prop.minimum} to ${prop.maximum}`
      : prop.minimum !== undefined
        ? ` of at least ${prop.minimum}`
        : ''
  return `must be a decimal ${prop.format === 'int64' ? 'int64 ' : ''}integer${range}, given once`
}
