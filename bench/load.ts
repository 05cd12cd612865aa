// One bounded autocannon run (warm-up or measured), reduced to the numbers the report needs.
import autocannon from 'autocannon'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { LOAD_GRACE_MS, WORKERS } from './config.js'

export interface LoadSpec {
  url: string
  connections: number
  headers: Record<string, string>
  /** PATCH scenario: random pet ids FIRST..FIRST+count-1 via patch-request.cjs. */
  patchPets?: { firstPetId: number, petCount: number }
}

export interface Measured {
  rps: number
  p50: number
  p99: number
  completed: number
  non2xx: number
  /** Socket errors and timeouts. */
  errors: number
  statusCodes: string
}

/** Absolute path of the compiled setupRequest module (workers require() it themselves). */
const PATCH_SETUP = fileURLToPath(new URL('./patch-request.cjs', import.meta.url))

function options(spec: LoadSpec, seconds: number): autocannon.Options {
  const opts: autocannon.Options = {
    url: spec.url,
    connections: spec.connections,
    duration: seconds,
    timeout: 10,
    headers: spec.headers,
  }
  if (WORKERS > 0) opts.workers = WORKERS
  if (spec.patchPets) {
    const setupRequest: autocannon.SetupRequest | string = WORKERS > 0
      ? PATCH_SETUP
      : createRequire(import.meta.url)(PATCH_SETUP) as autocannon.SetupRequest
    opts.requests = [{ method: 'PATCH', setupRequest }]
    opts.initialContext = { ...spec.patchPets }
  }
  return opts
}

/** Runs autocannon for `seconds`; stops it and rejects if it has not finished LOAD_GRACE_MS later. */
export function runLoad(spec: LoadSpec, seconds: number): Promise<Measured> {
  return new Promise((resolve, reject) => {
    let settled = false
    const settle = (err: Error | null, value?: Measured): void => {
      if (settled) return
      settled = true
      clearTimeout(watchdog)
      if (err) reject(err)
      else if (value) resolve(value)
    }
    const instance = autocannon(options(spec, seconds), (err, result) => {
      if (err) {
        settle(err)
        return
      }
      const codes = Object.entries(result.statusCodeStats).map(([code, { count }]) => `${code}:${count}`).join(' ')
      settle(null, {
        rps: result.requests.average,
        p50: result.latency.p50,
        p99: result.latency.p99,
        completed: result.requests.total,
        non2xx: result.non2xx,
        errors: result.errors + result.mismatches,
        statusCodes: codes,
      })
    })
    // In workers mode a worker failure is reported only as an 'error' event and the callback never fires.
    instance.on('error', (err: unknown) => settle(err instanceof Error ? err : new Error(String(err))))
    const watchdog = setTimeout(() => {
      instance.stop()
      settle(new Error(`autocannon did not finish within ${seconds} s + ${LOAD_GRACE_MS} ms`))
    }, seconds * 1000 + LOAD_GRACE_MS)
  })
}
