import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP balancer of the test's own in front of several `petstore serve` instances, so that a client
 * that reconnects to one URL (as EventSource does) reaches whichever instances are up. Each new
 * connection goes to the first backend of the list that accepts it: as a balancer that has not yet
 * noticed an instance is draining, it keeps sending clients to that instance while it listens, and
 * only then to the next. A connection already made stays with its backend until either side closes
 * it. `backends` may be replaced at any time (an instance restarted, another one put first).
 */
export class Balancer {
  private readonly sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    readonly port: number,
    /** The ports of the instances, on 127.0.0.1. */
    public backends: number[],
  ) {}

  static async start(backends: number[]): Promise<Balancer> {
    let balancer: Balancer | undefined
    const server = createServer((client) => balancer!.accept(client))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    balancer = new Balancer(server, typeof address === 'object' && address ? address.port : 0, backends)
    return balancer
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  private accept(client: Socket) {
    this.sockets.add(client)
    client.on('close', () => this.sockets.delete(client))
    client.on('error', () => {})
    // What the client sends before a backend is chosen waits for it.
    client.pause()
    const tries = this.backends.slice()
    const attempt = (n: number) => {
      if (n >= tries.length || client.destroyed) {
        client.destroy()
        return
      }
      const upstream = connect(tries[n]!, '127.0.0.1')
      const refused = () => attempt(n + 1)
      upstream.once('error', refused)
      upstream.once('connect', () => {
        upstream.off('error', refused)
        this.sockets.add(upstream)
        upstream.on('error', () => client.destroy())
        upstream.on('close', () => {
          this.sockets.delete(upstream)
          client.destroy()
        })
        client.on('close', () => upstream.destroy())
        client.pipe(upstream)
        upstream.pipe(client)
      })
    }
    attempt(0)
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    this.sockets.clear()
    await new Promise((resolve) => this.server.close(resolve))
  }
}
