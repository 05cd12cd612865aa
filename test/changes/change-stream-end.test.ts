// ChangeStream.finish() (what the drain calls on every open stream) must end the stream cleanly
// whatever the stream is doing then. These drive one stream directly, with a stand-in tail and
// ledger, in the two states a drain can find it in: its client's connection backed up (the pipe
// paused, nothing buffered), then a heartbeat; and a catch-up read in flight.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ChangeStream } from '../../src/changes/change-stream.js'
import type { LedgerTail } from '../../src/changes/ledger-tail.js'
import type { InventoryChange } from '../../src/domain.js'
import type { LedgerJumps, LedgerReads, LedgerRetention } from '../../src/storage/ports.js'

function row(seq: number): InventoryChange {
  return {
    seq: BigInt(seq),
    petId: 1n,
    previousQuantity: 1,
    quantity: 2,
    reason: 'adjustment',
    note: null,
    orderId: null,
    batchId: null,
    keyId: 1,
    requestId: 'r',
    at: '2026-01-01T00:00:00.000Z',
  }
}

function standIns(position: bigint, listChanges: () => Promise<InventoryChange[]>) {
  const tail = { position, follow() {}, unfollow() {}, fallBehind() {}, recentAfter: () => undefined } as unknown as LedgerTail
  const ledger = {
    listChanges,
    lastChangeSeq: async () => position,
    prunedThrough: async () => 0n,
    jumpOver: async () => undefined,
  } as unknown as LedgerReads & LedgerRetention & Pick<LedgerJumps, 'jumpOver'>
  return { tail, ledger }
}

/** How the stream ended: 'end' (cleanly), or the error it was destroyed with. */
function outcome(stream: ChangeStream): Promise<string> {
  return new Promise((resolve) => {
    stream.once('end', () => resolve('end'))
    stream.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

test('When the drain finishes a stream whose client is backed up, then a heartbeat before the client reads does not break it: it ends cleanly', async () => {
  const { tail, ledger } = standIns(0n, async () => [])
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  await stream.start()
  const ended = outcome(stream)
  // The consumer has everything so far and is not reading (its socket is full): nothing is buffered.
  assert.equal(stream.readableLength, 0)
  stream.finish()
  stream.heartbeat(30_000) // the next beat, during the drain
  await new Promise((resolve) => setImmediate(resolve))
  stream.resume() // the client reads at last
  assert.equal(await ended, 'end')
})

test('When the drain finishes a stream in the middle of a catch-up read, then the page read does not break it: it ends cleanly', async () => {
  let answer!: (rows: InventoryChange[]) => void
  let asked = 0
  const { tail, ledger } = standIns(3n, () => {
    asked++
    return new Promise((resolve) => (answer = resolve))
  })
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  const starting = stream.start()
  assert.equal(asked, 1, 'the first catch-up read is in flight')
  const ended = outcome(stream)
  stream.finish()
  answer([row(1), row(2), row(3)])
  await starting.catch(() => {})
  stream.resume()
  assert.equal(await ended, 'end')
})

test('When a finished stream holds nothing itself but its socket holds bytes the client never takes, then the heartbeat cuts it off', async () => {
  const { tail, ledger } = standIns(0n, async () => [])
  const stream = new ChangeStream(tail, ledger, 0n, undefined)
  await stream.start()
  // The client vanished: the kernel took nothing more, and the connection still holds what was written.
  stream.sent = () => 1000
  stream.unsent = () => 16_384
  stream.finish()
  assert.equal(stream.readableLength, 0)
  assert.equal(stream.heartbeat(50), true, 'the first beat starts the wait')
  await new Promise((resolve) => setTimeout(resolve, 80))
  assert.equal(stream.heartbeat(50), false, 'two beats later: cut off, so a shutdown does not wait for it')
  // A client that takes bytes meanwhile is not cut off.
  let sent = 1000
  const reading = new ChangeStream(tail, ledger, 0n, undefined)
  await reading.start()
  reading.sent = () => sent
  reading.unsent = () => 16_384
  assert.equal(reading.heartbeat(50), true)
  await new Promise((resolve) => setTimeout(resolve, 80))
  sent += 4096
  assert.equal(reading.heartbeat(50), true)
  stream.destroy()
  reading.destroy()
})
