// The tail's recent batches: a stream whose client fell behind catches up from them (shared, already
// encoded) instead of reading the ledger itself, and reads the ledger only when it is further behind
// than they reach; either way it gets every row once, in seq order. With the real LedgerTail and
// ChangeStream over a stand-in ledger held in memory, which counts the streams' own reads (the tail's
// reads carry no `through`, a stream's catch-up reads do).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ChangeStream } from '../../src/changes/change-stream.js'
import { LedgerTail, TAIL_READ_ROWS, TAIL_RECENT_BYTES, TailBatch, changeEvent } from '../../src/changes/ledger-tail.js'
import type { InventoryChange } from '../../src/domain.js'
import type { ChangeQuery, LedgerJumps, LedgerReads, LedgerRetention, LedgerSignals } from '../../src/storage/ports.js'

const row = (seq: bigint, petId: bigint, note: string | null = null): InventoryChange => ({
  seq,
  petId,
  previousQuantity: 0,
  quantity: Number(seq % 1000n),
  reason: 'adjustment',
  note,
  orderId: null,
  batchId: null,
  keyId: 1,
  requestId: null,
  at: '2026-01-01T00:00:00.000Z',
})

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function memoryLedger() {
  const rows: InventoryChange[] = []
  let wake = () => {}
  const reads = { tail: 0, tailRows: 0, streams: 0 }
  const ledger: LedgerReads & LedgerSignals & LedgerRetention & Pick<LedgerJumps, 'jumpOver'> = {
    prunedThrough: async () => 0n,
    jumpOver: async () => undefined,
    pruneLedger: async () => 0,
    async listChanges({ after, through, limit, petId }: ChangeQuery) {
      await pause(1)
      const found = rows
        .filter((r) => r.seq > after && (through === undefined || r.seq <= through) && (petId === undefined || r.petId === petId))
        .slice(0, limit)
      if (through === undefined) {
        reads.tail++
        reads.tailRows += found.length
      } else reads.streams++
      return found
    },
    async lastChangeSeq() {
      return rows.at(-1)?.seq ?? 0n
    },
    watchLedger(onChange) {
      wake = onChange
      return () => {}
    },
  }
  /** Commits `count` rows (pets 1..3 in turn, a multi-byte note on every 7th) and wakes the tail. */
  const commit = (count: number) => {
    for (let i = 0; i < count; i++) {
      const seq = BigInt(rows.length + 1)
      rows.push(row(seq, (seq % 3n) + 1n, seq % 7n === 0n ? `crème brûlée ${'🐈'.repeat(Number(seq % 5n))}` : null))
    }
    wake()
  }
  return { ledger, rows, reads, commit }
}

/** Every `id: N` in the text, in order. */
const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => BigInt(m[1]!))

/** Waits (a ref'd timer) until `done()` or the deadline. */
async function until(done: () => boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!done() && Date.now() < deadline) await pause(10)
}

test('When a batch is asked for the events after a seq, then it gives the shared bytes, a slice from that row, or the rows of one pet, byte for byte', () => {
  const rows = [row(11n, 1n), row(12n, 2n, 'é🐈'), row(13n, 1n, 'ß'), row(14n, 2n)]
  const batch = new TailBatch(10n, 14n, rows)
  const text = (from: number, pet?: bigint) =>
    rows
      .filter((r, i) => i >= from && (pet === undefined || r.petId === pet))
      .map(changeEvent)
      .join('')
  const whole = batch.eventsAfter(10n)
  assert.equal(whole?.toString(), text(0))
  assert.equal(batch.eventsAfter(5n), whole, 'a follower from before the batch gets the one shared Buffer')
  assert.equal(batch.size, Buffer.byteLength(text(0)))
  assert.equal(batch.eventsAfter(12n)?.toString(), text(2))
  assert.equal(batch.eventsAfter(10n, 2n)?.toString(), text(0, 2n))
  assert.equal(batch.eventsAfter(12n, 2n)?.toString(), text(3, 2n))
  assert.equal(batch.eventsAfter(14n), undefined)
  assert.equal(batch.eventsAfter(10n, 3n), undefined)
  assert.deepEqual([...batch.seqs], [11n, 12n, 13n, 14n])
})

test('When a stream falls behind by less than the recent batches hold, then it catches up from them without a read of its own, every row once and in order', async () => {
  const { ledger, reads, commit } = memoryLedger()
  const tail = new LedgerTail(ledger)
  await tail.start()
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  await stream.start()
  // No one reads the stream: past its buffer it stops following; the rows go on committing.
  for (let i = 0; i < 20; i++) {
    commit(200)
    await pause(60)
  }
  await until(() => tail.position === 4000n)
  assert.equal(tail.position, 4000n)
  assert.ok(stream.readableLength < 4000 * 150, `the stream buffered ${stream.readableLength} bytes: it should have stopped following`)
  let received = ''
  stream.on('data', (chunk: Buffer) => {
    received += chunk.toString()
  })
  await until(() => received.includes('id: 4000\n'))
  commit(10) // and it follows the tail again afterwards
  await until(() => received.includes('id: 4010\n'))
  tail.stop()
  stream.destroy()
  assert.deepEqual(
    ids(received),
    Array.from({ length: 4010 }, (_, i) => BigInt(i + 1)),
  )
  assert.equal(reads.streams, 0, 'the stream read nothing from the ledger itself')
})

test('When a stream falls behind further than the recent batches reach, then the tail stops reading for it and it reads the ledger for the rest, every row once and in order', async () => {
  const { ledger, reads, commit } = memoryLedger()
  const tail = new LedgerTail(ledger)
  await tail.start()
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  await stream.start()
  const total = Math.ceil((2 * TAIL_RECENT_BYTES) / 200) // each event is over 200 bytes: twice what the tail keeps
  for (let committed = 0; committed < total; committed += 5000) {
    commit(Math.min(5000, total - committed))
    await until(() => tail.position === BigInt(Math.min(committed + 5000, total)))
  }
  assert.equal(tail.position, BigInt(total))
  assert.equal(tail.recentAfter(0n), undefined, 'the first rows are no longer among the recent batches')
  // With no one following, the tail read about what its recent batches hold past the stalled stream, then jumped to the end.
  const bound = TAIL_RECENT_BYTES / 200 + 3 * TAIL_READ_ROWS
  assert.ok(reads.tailRows <= bound, `the tail read ${reads.tailRows} rows of ${total} for a stalled stream (bound ${bound})`)
  let received = ''
  stream.on('data', (chunk: Buffer) => {
    received += chunk.toString()
  })
  await until(() => received.includes(`id: ${total}\n`), 30_000)
  tail.stop()
  stream.destroy()
  assert.deepEqual(
    ids(received),
    Array.from({ length: total }, (_, i) => BigInt(i + 1)),
  )
  assert.ok(reads.streams > 0, 'the stream read the rows the tail no longer held')
})

test('When no one follows, then the tail keeps no batches; while someone does, it keeps them, and drops them when the last one goes', async () => {
  const { ledger, commit } = memoryLedger()
  const tail = new LedgerTail(ledger)
  await tail.start()
  commit(5)
  await until(() => tail.position === 5n)
  assert.equal(tail.recentAfter(0n), undefined)
  const follower = { onBatch() {} }
  tail.follow(follower)
  commit(5)
  await until(() => tail.position === 10n)
  assert.deepEqual(
    tail.recentAfter(5n)?.flatMap((b) => [...b.seqs]),
    [6n, 7n, 8n, 9n, 10n],
  )
  assert.deepEqual(tail.recentAfter(8n)?.at(-1)?.seqs.at(-1), 10n)
  assert.equal(tail.recentAfter(4n), undefined, 'rows before the first kept batch are not there')
  tail.unfollow(follower)
  assert.equal(tail.recentAfter(5n), undefined)
  tail.stop()
})

test('When a stream that fell behind ends, then the tail lets it go: it keeps no batches for it and reads on for no one', async () => {
  const { ledger, reads, commit } = memoryLedger()
  const tail = new LedgerTail(ledger)
  await tail.start()
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  await stream.start()
  commit(2000) // more than its buffer: it falls behind
  await until(() => tail.position === 2000n)
  assert.ok(tail.recentAfter(stream.seen) !== undefined, 'the batches past the stream are kept for it')
  stream.destroy()
  await pause(10)
  assert.equal(tail.recentAfter(0n), undefined)
  const read = reads.tailRows
  commit(2000)
  await until(() => tail.position === 4000n)
  assert.equal(reads.tailRows, read, 'with no stream left, the tail only moved to the end')
  tail.stop()
})

test('When a stream of one pet falls behind, then it catches up from the recent batches with only its pet, once and in order', async () => {
  const { ledger, reads, commit } = memoryLedger()
  const tail = new LedgerTail(ledger)
  await tail.start()
  const onePet = new ChangeStream(tail, ledger, 0n, 2n)
  const everything = new ChangeStream(tail, ledger, 0n, undefined)
  await onePet.start()
  await everything.start()
  let all = ''
  everything.on('data', (chunk: Buffer) => {
    all += chunk.toString()
  })
  for (let i = 0; i < 10; i++) {
    commit(300)
    await pause(60)
  }
  await until(() => tail.position === 3000n && all.includes('id: 3000\n'))
  let mine = ''
  onePet.on('data', (chunk: Buffer) => {
    mine += chunk.toString()
  })
  await until(() => mine.includes('id: 2998\n'))
  tail.stop()
  onePet.destroy()
  everything.destroy()
  // Pet 2 is every seq with seq % 3 = 1.
  assert.deepEqual(
    ids(mine),
    Array.from({ length: 1000 }, (_, i) => BigInt(3 * i + 1)),
  )
  assert.equal(ids(all).length, 3000)
  assert.equal(reads.streams, 0, 'neither stream read the ledger itself')
})
