/**
 * Where this process is in its life, as the HTTP layer sees it. On SIGTERM the service drains first
 * (server.ts): readiness fails, so load balancers stop sending new requests, and every response
 * carries `Connection: close`, so clients move their keep-alive connections elsewhere; meanwhile
 * every request is still served in full. Only then does the listener close.
 */
export class Lifecycle {
  draining = false
  /** performance.now() when the listener opened; undefined before. */
  listeningSince: number | undefined
}
