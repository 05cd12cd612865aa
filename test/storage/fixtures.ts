// What the storage contract suites share: import records, actors, and reads of the whole state.
import assert from 'node:assert/strict'
import { parse } from 'lossless-json'
import type { Actor, ImportRecord, InventoryChange, InventoryItem, Order, PetStatus } from '../../src/domain.js'
import type { Storage } from '../../src/storage/ports.js'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
/** The first integer a double cannot hold: a petId read through a JS number would lose its last digit. */
export const BEYOND_DOUBLE = 2n ** 53n + 1n

export const actor = (keyId: number | null = 7, requestId: string | null = 'req-1'): Actor => ({ keyId, requestId })

export const item = (petId: bigint, quantity: number, status: PetStatus = 'available'): InventoryItem => ({ petId, quantity, status })

/** Records in file order (positions from 1), handed over in chunks of `chunkSize`. */
export async function* chunksOf(items: InventoryItem[], chunkSize = 2): AsyncGenerator<ImportRecord[]> {
  const records = items.map((i, n) => ({ item: i, position: n + 1 }))
  for (let i = 0; i < records.length; i += chunkSize) yield records.slice(i, i + chunkSize)
}

/** Imports the entries (a fresh inventory's starting point), and checks the count it answers. */
export async function seed(storage: Storage, items: InventoryItem[]): Promise<void> {
  assert.equal(await storage.importInventory(chunksOf(items)), items.length)
}

/** The whole listing (of one status, with `status`) as one text, with the entries its pieces said they completed and the number of pieces. */
export async function listText(storage: Storage, during?: (piece: number) => Promise<void>, status?: PetStatus) {
  const pieces: Buffer[] = []
  let entries = 0
  await storage.forEachInventoryJson(async (json, count) => {
    pieces.push(Buffer.from(json))
    entries += count
    await during?.(pieces.length)
  }, status)
  return { text: Buffer.concat(pieces).toString('utf8'), entries, pieces: pieces.length }
}

/** The listing parsed exactly: petId as bigint. */
export async function listItems(storage: Storage): Promise<InventoryItem[]> {
  const { text, entries } = await listText(storage)
  const items = parse(`[${text}]`, null, (digits) => BigInt(digits)) as { petId: bigint; quantity: bigint; status: PetStatus }[]
  assert.equal(items.length, entries, 'the pieces count the entries they hold')
  return items.map((i) => ({ petId: i.petId, quantity: Number(i.quantity), status: i.status }))
}

/** The JSON text the listing holds for these entries, in this order. */
export const entriesJson = (items: InventoryItem[]) =>
  items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":"${i.status}"}`).join(',')

/** Every ledger row after `after`. */
export const changesAfter = (storage: Storage, after = 0n) => storage.listChanges({ after, limit: 100_000 })

/** Every order, by id. */
export const allOrders = (storage: Storage): Promise<Order[]> => storage.listOrders({ after: 0n, limit: 100_000 })

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** Asserts `at` is an RFC 3339 UTC time with milliseconds within [from, to]. */
export function assertTimeWithin(at: string, from: string, to: string) {
  assert.match(at, ISO)
  assert.ok(at >= from && at <= to, `${at} within [${from}, ${to}]`)
}

/** A ledger row as expected, its `at` taken from the actual row once checked to be a time within [from, to]. */
export function expectChanges(actual: InventoryChange[], expected: Omit<InventoryChange, 'at'>[], from: string, to: string) {
  assert.equal(actual.length, expected.length, `ledger rows: ${actual.length}, expected ${expected.length}`)
  for (const c of actual) assertTimeWithin(c.at, from, to)
  assert.deepEqual(
    actual.map(({ at, ...rest }) => rest),
    expected,
  )
}

export const now = () => new Date().toISOString()

/** A row of the ledger, with the fields a PATCH's set, an import or an order leaves. */
export const row = (
  seq: bigint,
  petId: bigint,
  previousQuantity: number | null,
  quantity: number,
  reason: InventoryChange['reason'],
  who: Actor = { keyId: null, requestId: null },
  orderId: bigint | null = null,
  note: string | null = null,
): Omit<InventoryChange, 'at'> => ({
  seq,
  petId,
  previousQuantity,
  quantity,
  reason,
  note,
  orderId,
  batchId: null,
  keyId: who.keyId,
  requestId: who.requestId,
})
