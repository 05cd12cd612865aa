// Webhook receiver for the live-changes scenarios, run as its own process (forked, with an IPC channel):
// a node:http server on 127.0.0.1 that answers every POST 200 at once and counts the messages, checking
// that their seqs come in order without gaps, that webhook-id is msg_<tag>_<seq>, and (once the parent
// sends the secret) the Standard Webhooks signature. The parent asks for the counts over IPC.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'

export interface ReceiverStats {
  /** Messages received (duplicates included). */
  received: number
  firstSeq: number | undefined
  lastSeq: number | undefined
  /** Messages whose seq was not above the previous one (a re-send or an out-of-order message). */
  notAscending: number
  /** Seqs skipped between two consecutive messages (a gap of 3 counts 3). */
  missing: number
  /** webhook-id not msg_<tag>_<seq>, body not the envelope, or a bad signature (once a secret is known). */
  malformed: number
  badSignatures: number
  /** Epoch ms (sub-ms resolution) of the first and the last message. */
  firstAtMs: number | undefined
  lastAtMs: number | undefined
}

export type ReceiverRequest = { stats: number } | { secret: string } | { reset: true }
export type ReceiverReply = { port: number } | { stats: ReceiverStats; id: number }

const now = (): number => performance.timeOrigin + performance.now()
const fresh = (): ReceiverStats => ({
  received: 0,
  firstSeq: undefined,
  lastSeq: undefined,
  notAscending: 0,
  missing: 0,
  malformed: 0,
  badSignatures: 0,
  firstAtMs: undefined,
  lastAtMs: undefined,
})
let stats = fresh()
let key: Buffer | undefined
const SEQ = /"seq":(\d+)/

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    res.writeHead(200, { 'content-length': 0 })
    res.end()
    const at = now()
    const body = Buffer.concat(chunks).toString('utf8')
    const id = String(req.headers['webhook-id'] ?? '')
    const seq = Number(SEQ.exec(body)?.[1] ?? Number.NaN)
    stats.received++
    stats.firstAtMs ??= at
    stats.lastAtMs = at
    if (!Number.isSafeInteger(seq) || !id.endsWith(`_${seq}`) || !body.startsWith('{"type":"inventory.changed"')) {
      stats.malformed++
      return
    }
    if (key !== undefined) {
      const expected = createHmac('sha256', key)
        .update(`${id}.${String(req.headers['webhook-timestamp'])}.${body}`)
        .digest()
      const given = Buffer.from(String(req.headers['webhook-signature'] ?? '').replace(/^v1,/, ''), 'base64')
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) stats.badSignatures++
    }
    stats.firstSeq ??= seq
    if (stats.lastSeq !== undefined) {
      if (seq <= stats.lastSeq) stats.notAscending++
      else stats.missing += seq - stats.lastSeq - 1
    }
    if (stats.lastSeq === undefined || seq > stats.lastSeq) stats.lastSeq = seq
  })
})
server.keepAliveTimeout = 60_000

process.on('message', (m: ReceiverRequest) => {
  if ('secret' in m) key = Buffer.from(m.secret.replace(/^whsec_/, ''), 'base64')
  else if ('reset' in m) stats = fresh()
  else process.send?.({ stats: { ...stats }, id: m.stats } satisfies ReceiverReply)
})
process.on('disconnect', () => process.exit(0))
process.once('SIGTERM', () => process.exit(0))
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.send?.({ port: typeof address === 'object' && address !== null ? address.port : 0 } satisfies ReceiverReply)
})
