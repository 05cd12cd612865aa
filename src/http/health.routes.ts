import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { UnavailableError } from '../errors.js'
import type { Storage } from '../storage/storage.js'
import { PROBE_CONFIG } from './admission.js'
import { errorResponses } from './error.schema.js'
import type { Lifecycle } from './lifecycle.js'

const Status = Type.Object({ status: Type.String() })

/**
 * Probes for load balancers and orchestrators, outside the versioned API and without a key, never
 * refused for load: liveness says the process serves HTTP (until it exits); readiness also needs the
 * database to answer (a storage error becomes 503 service_unavailable), and fails from the moment a
 * SIGTERM starts the drain, so the instance is taken out of rotation while it still serves.
 */
export async function healthRoutes(app: FastifyInstance, { storage, lifecycle }: { storage: Storage; lifecycle: Lifecycle }) {
  app.get('/healthz', { config: PROBE_CONFIG, schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { config: PROBE_CONFIG, schema: { hide: true, response: { 200: Status, ...errorResponses(503) } } }, async () => {
    if (lifecycle.draining) throw new UnavailableError('The service is shutting down; retry on another instance')
    await storage.ping()
    return { status: 'ready' }
  })
}
