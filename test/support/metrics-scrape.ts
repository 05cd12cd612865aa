// Scraping the service's metrics listener in tests: starting a server with METRICS_PORT, and
// reading the Prometheus text it answers.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import type { StartOptions, TestServer, useResources } from './helpers.js'

export const METRICS_LISTENING = /^Metrics listening at (http:\/\/127\.0\.0\.1:\d+)$/

/** A port that was free a moment ago (the kernel's pick for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Parses Prometheus text: one sample per line that is not a comment. */
export function parseSamples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [, name, labelText, value] = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line) ?? assert.fail(`not a sample: ${line}`)
      const labels: Record<string, string> = {}
      for (const [, key, raw] of (labelText ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = raw!
      return { name: name!, labels, value: Number(value) }
    })
}

/** A scrape, parsed, with the lookups the tests need. */
export class Scraped {
  readonly samples: Sample[]
  constructor(readonly text: string) {
    this.samples = parseSamples(text)
  }

  /** Every sample of `name` whose labels include `labels`. */
  matching(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  }

  /** The one sample of `name` with exactly these labels, or undefined. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const keys = Object.keys(labels)
    return this.matching(name, labels).find((s) => Object.keys(s.labels).length === keys.length)?.value
  }

  sum(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((total, s) => total + s.value, 0)
  }
}

export async function scrape(metricsUrl: string): Promise<Scraped> {
  const res = await fetch(`${metricsUrl}/metrics`)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
  return new Scraped(await res.text())
}

/** Starts `petstore serve` with METRICS_PORT on a free port; resolves with the metrics listener's URL once it is up. */
export async function startWithMetrics(
  resources: ReturnType<typeof useResources>,
  databaseUrl: string,
  env: Record<string, string> = {},
  options: StartOptions = {},
): Promise<{ server: TestServer; metricsUrl: string }> {
  // The port is free when picked, but another process could take it before the server does: try again.
  for (let attempt = 1; ; attempt++) {
    const server = await resources.server(databaseUrl, { METRICS_PORT: String(await freePort()), ...env }, options)
    try {
      const line = await server.waitForLog((l) => METRICS_LISTENING.test(String(l.msg)))
      return { server, metricsUrl: METRICS_LISTENING.exec(String(line.msg))![1]! }
    } catch (error) {
      if (attempt === 3 || !/EADDRINUSE/.test(server.stderr)) throw error
    }
  }
}
