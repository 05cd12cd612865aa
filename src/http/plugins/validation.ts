import fp from 'fastify-plugin'
import type { TSchema } from 'typebox'
import { compileParamsValidator, compileQueryValidator, createValidator, describeValidationError } from '../../validation.js'

interface ObjectSchema {
  properties?: Record<string, unknown>
  required?: string[]
}

/**
 * A headers schema names its headers in their canonical case (`If-Match`: what the OpenAPI document
 * shows), and Node.js gives them lower-case: they are matched by their lower-case names, as Fastify
 * does itself for the schemas it compiles (it leaves a custom compiler's alone).
 */
function lowerCaseHeaderNames(schema: ObjectSchema): ObjectSchema {
  return {
    ...schema,
    ...(schema.properties && {
      properties: Object.fromEntries(Object.entries(schema.properties).map(([name, value]) => [name.toLowerCase(), value])),
    }),
    ...(schema.required && { required: schema.required.map((name) => name.toLowerCase()) }),
  }
}

export interface ValidationOptions {
  /** The schemas routes refer to by $id (`Type.Ref('Pet')`), added to the app and to its validator. */
  schemas: TSchema[]
}

/**
 * Requests are validated by the service's one validator (validation.ts: strict types, no coercion,
 * unknown fields refused), with the shared schemas, and a refusal names the first problem. Registered
 * before any route: a route keeps the compilers and schemas it was registered with.
 */
export const validation = fp<ValidationOptions>(
  async (app, { schemas }) => {
    const ajv = createValidator(schemas)
    app.setValidatorCompiler(({ schema, httpPart }) =>
      httpPart === 'params'
        ? compileParamsValidator(schema as object)
        : httpPart === 'querystring'
          ? compileQueryValidator(schema as object)
          : ajv.compile(httpPart === 'headers' ? lowerCaseHeaderNames(schema as ObjectSchema) : schema),
    )
    app.setSchemaErrorFormatter(
      (errors, dataVar) => new Error(errors[0] ? describeValidationError(errors[0], dataVar) : `${dataVar} is invalid`),
    )
    for (const schema of schemas) app.addSchema(schema)
  },
  { name: 'petstore-validation' },
)
