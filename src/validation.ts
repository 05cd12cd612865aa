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
  for (const schema of sharedSchemas) ajv.addSchema(schema)
  return ajv
}

/** One readable sentence for the first validation error, naming the offending field. */
export function describeValidationError(error: ErrorObject, subject: string): string {
  const where = subject + error.instancePath.replaceAll('/', '.')
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where} has unknown field '${String(error.params.additionalProperty)}'`
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
 * Path parameters arrive as text, and a JSON-schema integer check would go through a double and lose
 * digits beyond 2^53. Parameters declared `format: int64` are parsed exactly to bigint instead.
 */
export function compileParamsValidator(schema: {
  properties?: Record<string, { type?: string; format?: string }>
}) {
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
