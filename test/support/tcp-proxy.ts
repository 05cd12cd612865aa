import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy of the test's own between the service and PostgreSQL, so a test can take the
 * database away from one service without touching the shared server.
 * - cut(): refuse new connections and reset the open ones (the database "went down").
 * - blackhole(): accept and keep connections but forward nothing (the network "hangs").
 * - restore(): forward again.
 */
export class TcpProxy {
  private mode: 'forward' | 'blackhole' = 'forward'
  private readonly sockets = new Set<Socket>()
  private server: Server | undefined

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const probe = createServer()
    const port = await new Promise<number>((resolve) =>
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address()
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
      }),
    )
    const proxy = new TcpProxy(port, target)
    await proxy.listen()
    return proxy
  }

  private listen(): Promise<void> {
    this.server = createServer((client) => {
      this.sockets.add(client)
      client.on('close', () => this.sockets.delete(client))
      client.on('error', () => {})
      if (this.mode === 'blackhole') return
      const upstream = connect(this.target.port, this.target.host)
      this.sockets.add(upstream)
      upstream.on('close', () => {
        this.sockets.delete(upstream)
        client.destroy()
      })
      upstream.on('error', () => client.destroy())
      client.on('close', () => upstream.destroy())
      client.pipe(upstream)
      upstream.pipe(client)
    })
    return new Promise((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()))
  }

  private dropAll() {
    for (const socket of this.sockets) socket.resetAndDestroy()
    this.sockets.clear()
  }

  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    this.dropAll()
    if (server) await new Promise((resolve) => server.close(resolve))
  }

  async blackhole(): Promise<void> {
    this.mode = 'blackhole'
    // Existing connections stop forwarding too: unpipe both directions and swallow what arrives.
    for (const socket of this.sockets) {
      socket.unpipe()
      socket.removeAllListeners('data')
      socket.on('data', () => {})
    }
  }

  async restore(): Promise<void> {
    this.dropAll()
    this.mode = 'forward'
    if (!this.server) await this.listen()
  }

  async close(): Promise<void> {
    await this.cut()
  }
}
