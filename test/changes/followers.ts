// The change stream followed as its users follow it: a standard EventSource (the `eventsource`
// package, the WHATWG EventSource for Node, its `fetch` option adding the key), and petstore-client's
// iterator; and what both must have seen: the ledger's rows after their start, each once, in order.
import assert from 'node:assert/strict'
import { EventSource } from 'eventsource'
import { createClient, type InventoryChange } from 'petstore-client'
import { feedTexts, seqOf } from './sse.js'

export interface Received {
  id: string
  data: string
  /** How many times the client had opened (a 200 text/event-stream) when the event came: 1 on its first stream. */
  opened: number
}

/**
 * A standard EventSource on the change stream. Every request it makes carries X-Request-Id
 * `<name>-<n>`, so the server's log says which of them it refused; `attempts` records what each got.
 */
export class StandardClient {
  readonly source: EventSource
  readonly events: Received[] = []
  opened = 0
  /** Each request's answer: its status (a 200 refusal is the one with a Content-Length) or the error. */
  readonly attempts: string[] = []

  constructor(
    url: string,
    token: string,
    readonly name: string,
  ) {
    let n = 0
    this.source = new EventSource(url, {
      fetch: async (input, init) => {
        const requestId = `${name}-${++n}`
        try {
          const res = await fetch(input, {
            ...init,
            headers: { ...init.headers, authorization: `Bearer ${token}`, 'x-request-id': requestId },
          })
          this.attempts.push(`${requestId}: ${res.status}${res.headers.has('content-length') ? ' (ends)' : ''}`)
          return res
        } catch (error) {
          this.attempts.push(`${requestId}: ${((error as Error).cause as NodeJS.ErrnoException)?.code ?? (error as Error).message}`)
          throw error
        }
      },
    })
    this.source.addEventListener('open', () => this.opened++)
    this.source.addEventListener('change', (event) => {
      this.events.push({ id: event.lastEventId, data: event.data, opened: this.opened })
    })
  }

  get open(): boolean {
    return this.source.readyState === EventSource.OPEN
  }

  /** Closed for good: what the standard does on any answer but a 200 text/event-stream. */
  get closedForGood(): boolean {
    return this.source.readyState === EventSource.CLOSED
  }

  close(): void {
    this.source.close()
  }
}

/** petstore-client's stream, followed in the background. */
export function projectClient(baseUrl: string, token: string, after: bigint) {
  const api = createClient({ baseUrl: `${baseUrl}/v1`, token })
  const controller = new AbortController()
  const rows: InventoryChange[] = []
  const done = (async () => {
    for await (const row of api.changes.stream({ after, signal: controller.signal })) rows.push(row)
  })()
  return {
    rows,
    async stop() {
      controller.abort()
      await done
    },
  }
}

/**
 * The ledger's rows after `start` as the feed writes them: each client must have had exactly these,
 * in this order, the standard one byte for byte, the project's one as the same seqs.
 */
export async function assertEveryRowOnce(
  baseUrl: string,
  token: string,
  start: bigint,
  standard: StandardClient,
  project: { rows: InventoryChange[] },
): Promise<string[]> {
  const ledger = await feedTexts(baseUrl, token, start)
  // The seqs first: a difference shows as a few numbers rather than whole rows.
  assert.deepEqual(
    standard.events.map((e) => e.id),
    ledger.map((text) => String(seqOf(text))),
    `${standard.name}: every seq after ${start} once, in order`,
  )
  assert.deepEqual(
    standard.events.map((e) => [e.id, e.data]),
    ledger.map((text) => [String(seqOf(text)), text]),
    `${standard.name}: every row after ${start} once, in seq order`,
  )
  assert.deepEqual(
    project.rows.map((r) => r.seq),
    ledger.map(seqOf),
    'petstore-client: every row once, in seq order',
  )
  return ledger
}
