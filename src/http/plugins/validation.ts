import fp from 'fastify-plugin'
import type { TSchema } from 'typebox'
import { compileParamsValidator, compileQueryValidator, createValidator, describeValidationError } from '../../validation.js'

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
          : ajv.compile(schema),
    )
    app.setSchemaErrorFormatter(
      (errors, dataVar) => new Error(errors[0] ? describeValidationError(errors[0], dataVar) : `${dataVar} is invalid`),
    )
    for (const schema of schemas) app.addSchema(schema)
  },
  { name: 'petstore-validation' },
)
