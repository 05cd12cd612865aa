import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'

type SerializerFactory = ReturnType<typeof SerializerSelector>

/**
 * Fastify's own response serializers (fast-json-stringify), each compiled on its first use rather
 * than all while the app is built. Compiling every response schema of every route took about 2 s of
 * a start's 4 s of CPU, and most routes never use theirs: they send JSON text the service wrote
 * itself (json-reply.ts). Every worker, CLI run and test server starts that much sooner; the first
 * answer of a given route and status pays for its own serializer once.
 */
export function lazySerializers(): SerializerFactory {
  const build = SerializerSelector()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined
      return (doc) => {
        serialize ??= compile(route)
        return serialize(doc)
      }
    }
  }
}
