import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Storage } from '../storage/storage.js'
import { errorResponses } from './error.schema.js'

const Status = Type.Object({ status: Type.String() })

/**
 * Probes for load balancers and orchestrators, outside the versioned API and without a key:
 * liveness says the process serves HTTP; readiness also needs the database to answer (a storage
 * error becomes 503 service_unavailable). While shutting down, both answer 503 (see app.ts).
 */
export async function healthRoutes(app: FastifyInstance, { storage }: { storage: Storage }) {
  app.get('/healthz', { schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }))
  app.get(
    '/readyz',
    { schema: { hide: true, response: { 200: Status, ...errorResponses(503) } } },
    async () => {
      await storage.ping()
      return { status: 'ready' }
    },
  )
}
