// A stream's first read happens before its response is answered (ChangeStream.start). When that read
// finds none of the stream's rows (a petId filter, resuming after an id), the stream must still go on
// to follow the tail: the Readable's own first _read came during the read and did nothing, and it
// asks again only after a push. Here with the real LedgerTail over a stand-in ledger that answers
// after a delay, as a database does.
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import { ChangeStream } from '../../src/changes/change-stream.js'
import { LedgerTail } from '../../src/changes/ledger-tail.js'
import type { InventoryChange } from '../../src/domain.js'
import type { ChangeQuery, LedgerJumps, LedgerReads, LedgerRetention, LedgerSignals } from '../../src/storage/ports.js'

const row = (seq: bigint, petId: bigint): InventoryChange => ({
  seq,
  petId,
  previousQuantity: 0,
  quantity: 1,
  reason: 'adjustment',
  note: null,
  orderId: null,
  batchId: null,
  keyId: 1,
  requestId: null,
  at: '2026-01-01T00:00:00.000Z',
})

test("When a petId stream's first read finds none of its pet's rows, then it follows the tail and gets the pet's next row at once", async () => {
  const rows = Array.from({ length: 50 }, (_, i) => row(BigInt(i + 1), 1n))
  const later = () => new Promise((resolve) => setTimeout(resolve, 5))
  let wake = () => {}
  const ledger: LedgerReads & LedgerSignals & LedgerRetention & Pick<LedgerJumps, 'jumpOver'> = {
    prunedThrough: async () => 0n,
    jumpOver: async () => undefined,
    pruneLedger: async () => 0,
    async listChanges({ after, through, limit, petId }: ChangeQuery) {
      await later()
      return rows
        .filter((r) => r.seq > after && (through === undefined || r.seq <= through) && (petId === undefined || r.petId === petId))
        .slice(0, limit)
    },
    async lastChangeSeq() {
      await later()
      return rows.at(-1)!.seq
    },
    watchLedger(onChange) {
      wake = onChange
      return () => {}
    },
  }
  const tail = new LedgerTail(ledger)
  await tail.start()
  const stream = new ChangeStream(tail, ledger, 10n, 2n) // after seq 10, pet 2: none of its rows since
  stream.push('retry: 1000\n\n')
  await stream.start()
  let received = ''
  stream.pipe(
    new Writable({
      write(chunk, _encoding, done) {
        received += chunk
        done()
      },
    }),
  )
  await new Promise((resolve) => setTimeout(resolve, 50))
  rows.push(row(51n, 2n))
  wake()
  const deadline = Date.now() + 1000
  while (!received.includes('id: 51') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  tail.stop()
  stream.destroy()
  assert.match(received, /^retry: 1000\n\nid: 51\nevent: change\n/)
})
