import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What the proxy does with one request that a fault matches. */
export type Fault =
  /** Forward it, let the service answer, then drop the connection: the service acted, the answer is lost. */
  | { kind: 'drop-answer' }
  /** Keep the connection and never answer (a hung network): the client's timeout is the only way out. */
  | { kind: 'hang' }
  /** Answer this instead of forwarding (a 503 or 429 from a load balancer in front, say). */
  | { kind: 'reply'; status: number; headers?: Record<string, string>; body?: string }

export interface Seen {
  method: string
  path: string
  headers: IncomingMessage['headers']
}

/**
 * An HTTP proxy of the tests' own in front of a real service: it forwards every request, except
 * that each queued fault, matched by method and path prefix, is applied once to the next request it
 * matches. It records every request it saw, so a test can count what the client really sent.
 */
export class FaultProxy {
  readonly seen: Seen[] = []
  private readonly faults: { method: string; path: string; fault: Fault }[] = []
  private server: Server | undefined
  baseUrl = ''

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy())
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const path = req.url ?? '/'
    this.seen.push({ method: req.method ?? '', path, headers: req.headers })
    const at = this.faults.findIndex((f) => f.method === req.method && path.startsWith(f.path))
    const fault = at < 0 ? undefined : this.faults.splice(at, 1)[0]!.fault
    if (fault?.kind === 'hang') return
    if (fault?.kind === 'reply') {
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers }).end(fault.body ?? '')
      return
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'connection')) as Record<
      string,
      string
    >
    // A path under /petstore stands for a deployment behind a proxy that serves the API there.
    const upstream = await fetch(this.target + path.replace(/^\/petstore(?=\/)/, ''), {
      method: req.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    })
    const body = Buffer.from(await upstream.arrayBuffer())
    if (fault?.kind === 'drop-answer') {
      req.socket.destroy()
      return
    }
    const out: Record<string, string> = {}
    upstream.headers.forEach((value, name) => {
      if (name !== 'content-encoding' && name !== 'transfer-encoding' && name !== 'connection' && name !== 'keep-alive') out[name] = value
    })
    res.writeHead(upstream.status, out).end(body)
  }

  /** Applies `fault` to the next request with this method whose path starts with `path`. */
  inject(method: string, path: string, fault: Fault): void {
    this.faults.push({ method, path, fault })
  }

  /** The requests seen with this method whose path starts with `path`. */
  count(method: string, path: string): Seen[] {
    return this.seen.filter((s) => s.method === method && s.path.startsWith(path))
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
