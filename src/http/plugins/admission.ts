import underPressurePlugin from '@fastify/under-pressure'
import type { FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { logRefusal, sendError } from '../errors.js'
import type { Lifecycle } from '../lifecycle.js'
import { sendReconnect } from '../reconnect.js'
import { routeOf } from '../route-of.js'

/** How long a refused client is asked to wait: about one sample of the load measurements. */
export const RETRY_AFTER_SECONDS = 1
/** How often the load is sampled; each sample covers the interval before it. */
const SAMPLE_INTERVAL_MS = 1000
/**
 * No shedding until two samples after the listener opened: the first ones measure the start itself
 * (loading modules, migrating, compiling), not load, and made a new or replacement worker refuse its
 * first requests while the cores were busy.
 */
export const SHED_AFTER_LISTENING_MS = 2 * SAMPLE_INTERVAL_MS

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A health probe: never refused for load, so an orchestrator never restarts a busy but healthy instance. */
    probe?: boolean
    /** A long-lived response (a change stream): not counted against MAX_IN_FLIGHT; STREAM_MAX_PER_KEY bounds those. */
    stream?: boolean
  }
  interface FastifyInstance {
    /** How many requests are being handled now (admitted and not yet answered), for the metrics. */
    requestsInFlight: () => number
  }
}

/** Route config for the health probes: exempt from the in-flight bound and from load shedding. */
export const PROBE_CONFIG = { probe: true }

function refuse(reply: FastifyReply, message: string) {
  // An EventSource gives up for good on a 503: a change stream is told to come back instead.
  if (routeOf(reply.request).config.stream) return sendReconnect(reply, 'overloaded', message)
  logRefusal(reply.request, 'overloaded', message)
  reply.header('retry-after', String(RETRY_AFTER_SECONDS))
  return sendError(reply, 'service_unavailable', message)
}

export interface AdmissionOptions extends Pick<Config, 'maxInFlight' | 'shedEventLoopDelayMs' | 'shedEventLoopUtilization'> {
  /** Shared with server.ts: when the listener opened (no shedding before), and whether it drains. */
  lifecycle: Lifecycle
}

/**
 * What every request meets first, after its id and the nosniff header (hence the dependencies):
 * `Connection: close` while the process drains, and a bound on the requests handled at once
 * (MAX_IN_FLIGHT) past which new ones get 503 with Retry-After instead of queueing without bound.
 * Then load shedding (@fastify/under-pressure): while the event loop is saturated (its mean delay or
 * utilization over the last second past the configured limits), new requests get the same 503, from
 * SHED_AFTER_LISTENING_MS after the listener opened; a change stream is told to reconnect instead
 * (http/reconnect.ts). Health probes are exempt from both.
 */
export const admission = fp<AdmissionOptions>(
  async (app, { maxInFlight, shedEventLoopDelayMs, shedEventLoopUtilization, lifecycle }) => {
    let inFlight = 0
    const onClose = () => inFlight--
    app.decorate('requestsInFlight', () => inFlight)
    // @fastify/under-pressure measures the event loop; it is registered in a scope with no routes, so
    // that its own onRequest hook (which reads the route's options again) runs for none, and its
    // verdict is asked here, in the one hook every request passes anyway.
    let isUnderPressure: () => boolean = () => false
    await app.register(async (sampler) => {
      await sampler.register(underPressurePlugin, {
        maxEventLoopDelay: shedEventLoopDelayMs,
        maxEventLoopUtilization: shedEventLoopUtilization,
        // Utilization over the last sample, not since the process started.
        eventLoopUtilizationMode: 'interval',
        sampleInterval: SAMPLE_INTERVAL_MS,
      })
      isUnderPressure = sampler.isUnderPressure
    })
    app.addHook('onRequest', (request, reply, done) => {
      const { probe, stream } = routeOf(request).config
      if (probe) return done()
      // A change stream lasts as long as its client wants: its own bound is STREAM_MAX_PER_KEY.
      if (!stream && inFlight >= maxInFlight) return refuse(reply, 'Too many requests in progress; retry shortly')
      if (isUnderPressure()) {
        const since = lifecycle.listeningSince
        if (since !== undefined && performance.now() - since >= SHED_AFTER_LISTENING_MS)
          return refuse(reply, 'The service is overloaded; retry shortly')
      }
      if (stream) return done()
      inFlight++
      // 'close' comes whether the response finished or the client went away.
      reply.raw.once('close', onClose)
      done()
    })
    // Decided as the response goes out, not as the request came in: a request that was in flight when
    // the drain began must close its connection too, or an idle keep-alive would hold the close open.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (lifecycle.draining) reply.header('connection', 'close')
      done(null, payload)
    })
  },
  { name: 'petstore-admission', dependencies: ['petstore-request-ids', 'petstore-representation'] },
)
