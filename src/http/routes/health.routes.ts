import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { UnavailableError } from '../../errors.js'
import { faultError } from '../../storage/faults.js'
import type { Storage } from '../../storage/ports.js'
import { errorResponses } from '../error.schema.js'
import type { Lifecycle } from '../lifecycle.js'
import { PROBE_CONFIG } from '../plugins/admission.js'

const Status = Type.Object({ status: Type.String() })

export interface HealthRoutesOptions {
  /** Readiness needs it to answer, and to take writes. */
  storage: Pick<Storage, 'ping' | 'faults'>
  /** Readiness fails while it drains. */
  lifecycle: Lifecycle
}

/**
 * Probes for load balancers and orchestrators, outside the versioned API and without a key, never
 * refused for load: liveness says the process serves HTTP (until it exits); readiness also needs the
 * database to answer (a storage error becomes 503 service_unavailable) and to take writes (a lasting
 * fault, a full disk or a read-only database, is 503 naming it until a probe write succeeds), and
 * fails from the moment a SIGTERM starts the drain, so the instance is taken out of rotation while it
 * still serves.
 */
export const healthRoutes = fp<HealthRoutesOptions>(
  async (app, { storage, lifecycle }) => {
    app.get('/healthz', { config: PROBE_CONFIG, schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }))
    app.get('/readyz', { config: PROBE_CONFIG, schema: { hide: true, response: { 200: Status, ...errorResponses(503) } } }, async () => {
      if (lifecycle.draining) throw new UnavailableError('The service is shutting down; retry on another instance', 'draining')
      const fault = storage.faults.current
      if (fault !== undefined) throw faultError(fault)
      await storage.ping()
      return { status: 'ready' }
    })
  },
  {
    name: 'petstore-health-routes',
    dependencies: ['petstore-errors', 'petstore-admission', 'petstore-served-paths'],
    encapsulate: true,
  },
)
