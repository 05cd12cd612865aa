// The stock rules are written once in TypeScript (src/stock/planner.ts) and, for batches of plain sets
// on PostgreSQL, a second time in SQL (set_inventory_quantities), each set's reason and note included. This property feeds the same random
// batches to planBatch, on the state read from the storage, and to the storage itself, and requires the
// same results, ledger rows, entries and orders: on SQLite it checks that the backend reads the state
// and writes the plan faithfully; on PostgreSQL it checks both paths, the SQL function included.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  MAX_QUANTITY,
  ORDER_STATUSES,
  PET_STATUSES,
  SET_REASONS,
  type Actor,
  type InventoryItem,
  type Order,
  type OrderStatus,
  type PetStatus,
  type SetReason,
} from '../../src/domain.js'
import { claimKey, type StoredClaim } from '../../src/stock/claims.js'
import { planBatch, type BatchState } from '../../src/stock/planner.js'
import type { PlaceResult, Precondition, StockResult, StockWrite } from '../../src/stock/writes.js'
import type { StorageObserver } from '../../src/storage/ports.js'
import { BACKENDS, useStorage } from './backends.js'
import { BEYOND_DOUBLE, INT64_MAX, INT64_MIN, allOrders, changesAfter } from './fixtures.js'

/** The pets the batches name: int64 extremes, so the SQL function's arrays carry them exactly too. */
const PETS = [INT64_MIN, -1n, 0n, 7n, BEYOND_DOUBLE, INT64_MAX]
/** A pet that never has an entry. */
const MISSING_PET = 42n
const RUNS = Number(process.env.DIFFERENTIAL_RUNS ?? 50)

// Writes as plain data, turned into StockWrites at run time (a run's keys are its own; orders are named
// by index among those that exist, or as ids not yet given out, some of which the batch itself places).
type PetRef = number // index into PETS; PETS.length names MISSING_PET
type OrderRef = { existing: number } | { upcoming: number }
type PreconditionSpec = { quantityIs: number } | { statusIs: PetStatus }
type ClaimSpec = { key: 'a' | 'b' | 'c'; fingerprint: 'x' | 'y' }
type ActorSpec = { keyId: 1 | 2 | null; requestId: string | null }
/** A set's reason and note: absent (undefined) as well as given, null notes included. */
type WhySpec = { reason: SetReason | undefined; note: string | null | undefined }
type WriteSpec =
  | { kind: 'set'; pet: PetRef; quantity: number; precondition: PreconditionSpec | null; actor: ActorSpec; why: WhySpec }
  | { kind: 'place'; pet: PetRef; quantity: number; claim: ClaimSpec | null; actor: ActorSpec }
  | { kind: 'transition'; order: OrderRef; status: OrderStatus; actor: ActorSpec }

const petRef = fc.integer({ min: 0, max: PETS.length })
const quantityArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(MAX_QUANTITY, MAX_QUANTITY - 1) },
)
const actorArb: fc.Arbitrary<ActorSpec> = fc.record({
  keyId: fc.constantFrom(1 as const, 2 as const, null),
  requestId: fc.option(fc.constantFrom('r1', 'r2', 'r3')),
})
/** Any code point but NUL (refused before storage, see NOTE_PATTERN), short and at the 500 bound. */
const noteArb = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map((s) => s.replaceAll('\u0000', '')) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(500), '🐕'.repeat(500), 'tab\tline\n"q"\\') },
)
const whyArb: fc.Arbitrary<WhySpec> = fc.record({
  reason: fc.option(fc.constantFrom(...SET_REASONS), { nil: undefined }),
  note: fc.option(fc.option(noteArb, { nil: null }), { nil: undefined }),
})
const claimArb: fc.Arbitrary<ClaimSpec> = fc.record({ key: fc.constantFrom('a', 'b', 'c'), fingerprint: fc.constantFrom('x', 'y') })
const plainSetArb: fc.Arbitrary<WriteSpec> = fc.record({
  kind: fc.constant('set' as const),
  pet: petRef,
  quantity: quantityArb,
  precondition: fc.constant(null),
  actor: actorArb,
  why: whyArb,
})
const writeArb: fc.Arbitrary<WriteSpec> = fc.oneof(
  plainSetArb,
  fc.record({
    kind: fc.constant('set' as const),
    pet: petRef,
    quantity: quantityArb,
    precondition: fc.oneof(
      fc.record({ quantityIs: fc.integer({ min: 0, max: 8 }) }),
      fc.record({ statusIs: fc.constantFrom(...PET_STATUSES) }),
    ),
    actor: actorArb,
    why: whyArb,
  }),
  fc.record({
    kind: fc.constant('place' as const),
    pet: petRef,
    quantity: fc.integer({ min: 1, max: 5 }),
    claim: fc.option(claimArb),
    actor: actorArb,
  }),
  fc.record({
    kind: fc.constant('transition' as const),
    order: fc.oneof(fc.record({ existing: fc.nat(20) }), fc.record({ upcoming: fc.integer({ min: 1, max: 3 }) })),
    status: fc.constantFrom(...ORDER_STATUSES),
    actor: actorArb,
  }),
)

const scenarioArb = fc.record({
  /** Entries imported first (an import overwrites earlier runs' quantities and statuses). */
  inventory: fc.uniqueArray(
    fc.record({ pet: fc.integer({ min: 0, max: PETS.length - 1 }), quantity: quantityArb, status: fc.constantFrom(...PET_STATUSES) }),
    { selector: (e) => e.pet, maxLength: PETS.length },
  ),
  /** Writes applied one at a time before the batch: orders to move, claims to replay. */
  setup: fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant('place' as const),
        pet: petRef,
        quantity: fc.integer({ min: 1, max: 3 }),
        claim: fc.option(claimArb),
        actor: actorArb,
      }),
      fc.record({
        kind: fc.constant('transition' as const),
        order: fc.record({ existing: fc.nat(20) }),
        status: fc.constantFrom(...ORDER_STATUSES),
        actor: actorArb,
      }),
    ),
    { maxLength: 6 },
  ),
  /** Half the batches are plain sets only: on PostgreSQL, the SQL function's path. */
  batch: fc.oneof(fc.array(plainSetArb, { minLength: 1, maxLength: 12 }), fc.array(writeArb, { minLength: 1, maxLength: 12 })),
})

const precondition = (spec: PreconditionSpec): Precondition =>
  'quantityIs' in spec ? (current) => current.quantity === spec.quantityIs : (current) => current.status === spec.statusIs

/** Turns a write's data into a StockWrite of this run: keys prefixed by the run, orders resolved among `orders`. */
function toWrite(spec: WriteSpec, run: number, orders: bigint[], lastOrder: bigint): StockWrite {
  const actor: Actor = { keyId: spec.actor.keyId, requestId: spec.actor.requestId }
  const petId = (ref: PetRef) => PETS[ref] ?? MISSING_PET
  switch (spec.kind) {
    case 'set':
      return {
        kind: 'set',
        petId: petId(spec.pet),
        quantity: spec.quantity,
        reason: spec.why.reason,
        note: spec.why.note,
        actor,
        precondition: spec.precondition ? precondition(spec.precondition) : undefined,
      }
    case 'place':
      return {
        kind: 'place',
        petId: petId(spec.pet),
        quantity: spec.quantity,
        actor,
        idempotency: spec.claim ? { key: `run${run}-${spec.claim.key}`, fingerprint: spec.claim.fingerprint } : undefined,
      }
    case 'transition': {
      const ref = spec.order
      const orderId =
        'existing' in ref && orders.length > 0
          ? orders[ref.existing % orders.length]!
          : lastOrder + BigInt('upcoming' in ref ? ref.upcoming : 1)
      return { kind: 'transition', orderId, status: spec.status, actor }
    }
  }
}

/** Every time at or after `since` (the batch's own) as 'AT', as planBatch was given; earlier times kept, exact. */
function normalised<T>(value: T, since: string): T {
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === 'string' && (key === 'at' || key === 'placedAt' || key === 'updatedAt')) return v >= since ? 'AT' : v
    if (Array.isArray(v)) return v.map((x) => walk(x))
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]))
    return v
  }
  return walk(value) as T
}

/** The claims a batch's answers made (a placement with a key under an API key, answered fresh). */
function claimsMade(batch: StockWrite[], results: StockResult[]): StoredClaim[] {
  const made: StoredClaim[] = []
  batch.forEach((w, i) => {
    const r = results[i] as PlaceResult
    if (w.kind !== 'place' || !w.idempotency || w.actor.keyId === null || r === 'idempotency_key_reused' || r.replayed) return
    const { replayed, ...placement } = r
    made.push({ keyId: w.actor.keyId, key: w.idempotency.key, fingerprint: w.idempotency.fingerprint, answer: placement })
  })
  return made
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of BACKENDS) {
  describe(`Stock planner and storage agree (${backend.name})`, () => {
    // How many commits each batch took (the group commit may split a Promise.all; planBatch's rules are sequential either way).
    const commits: number[] = []
    const observer: StorageObserver = {
      batchCommitted: (_, writes) => commits.push(writes),
      statementRan: () => {},
      stockReplanned: () => {},
    }
    const fixture = useStorage(backend, { scope: 'describe', observer })

    test('When the same random batch is planned by planBatch and written by the storage, then results, ledger rows, entries and orders are identical', async (t) => {
      const { storage } = fixture
      // The claims this storage holds, as its answers made them (the ports have no read of claims).
      const claims = new Map<string, StoredClaim>()
      let run = 0
      let plainBatches = 0
      let mixedBatches = 0
      let singleCommit = 0
      // Rows of plain-set batches with a reason other than the default, and with a note: the SQL function's new columns.
      let reasonedRows = 0
      let notedRows = 0

      const apply = async (w: StockWrite) => {
        const r = await storage.writeStock(w)
        for (const c of claimsMade([w], [r])) claims.set(claimKey(c.keyId, c.key), c)
        return r
      }
      const readState = async (): Promise<BatchState> => {
        const entries = new Map<bigint, InventoryItem>()
        for (const petId of [...PETS, MISSING_PET]) {
          const e = await storage.getInventoryItem(petId)
          if (e) entries.set(petId, e)
        }
        const orders = await allOrders(storage)
        return {
          entries,
          orders: new Map(orders.map((o) => [o.id, o])),
          claims: new Map(claims),
          lastChange: await storage.lastChangeSeq(),
          // listOrders is by id: the last is the highest.
          lastOrder: orders.at(-1)?.id ?? 0n,
        }
      }

      await fc.assert(
        fc.asyncProperty(scenarioArb, async ({ inventory, setup, batch: specs }) => {
          run++
          if (inventory.length > 0) {
            await storage.importInventory(
              (async function* () {
                yield inventory.map((e, n) => ({ item: { petId: PETS[e.pet]!, quantity: e.quantity, status: e.status }, position: n + 1 }))
              })(),
            )
          }
          for (const spec of setup) {
            const orders = (await allOrders(storage)).map((o) => o.id)
            await apply(toWrite(spec, run, orders, orders.at(-1) ?? 0n))
          }

          const state = await readState()
          const batch = specs.map((spec) => toWrite(spec, run, [...state.orders.keys()], state.lastOrder))
          const plan = planBatch(batch, state, 'AT')
          const plain = batch.every((w) => w.kind === 'set' && !w.precondition)
          if (plain) {
            plainBatches++
            reasonedRows += plan.changes.filter((c) => c.reason !== 'adjustment').length
            notedRows += plan.changes.filter((c) => c.note !== null).length
          } else mixedBatches++

          // Every earlier write was answered before this time, so the batch's own times are the ones at or after it.
          await sleep(2)
          const since = new Date().toISOString()
          const committed = commits.length
          const results = await Promise.all(batch.map((w) => storage.writeStock(w)))
          if (commits.length - committed === 1) singleCommit++

          assert.deepEqual(normalised(results, since), plan.results, 'results')
          const changes = await changesAfter(storage, state.lastChange)
          assert.deepEqual(normalised(changes, since), plan.changes, 'ledger rows')
          assert.equal(await storage.lastChangeSeq(), plan.lastChange)

          const after = await readState()
          const expectedEntries = new Map(state.entries)
          for (const [petId, quantity] of plan.quantities) expectedEntries.set(petId, { ...state.entries.get(petId)!, quantity })
          assert.deepEqual(after.entries, expectedEntries, 'entries')
          const expectedOrders = new Map<bigint, Order>(state.orders)
          for (const o of [...plan.newOrders, ...plan.changedOrders]) expectedOrders.set(o.id, o)
          assert.deepEqual(normalised([...after.orders.values()], since), [...expectedOrders.values()], 'orders')
          assert.equal(after.lastOrder, plan.lastOrder)

          for (const c of claimsMade(batch, results)) claims.set(claimKey(c.keyId, c.key), c)
          // The claims the batch made are kept: each replays as planBatch says it answered, and changes nothing.
          for (const c of plan.claims) {
            const replay = await storage.writeStock({
              kind: 'place',
              petId: MISSING_PET,
              quantity: 1,
              actor: { keyId: c.keyId, requestId: null },
              idempotency: { key: c.key, fingerprint: c.fingerprint },
            })
            assert.deepEqual(normalised(replay, since), { ...c.answer, replayed: true }, 'a replayed claim')
          }
          assert.equal(await storage.lastChangeSeq(), plan.lastChange)
        }),
        { numRuns: RUNS },
      )
      t.diagnostic(`${plainBatches} plain-set batches, ${mixedBatches} mixed; ${singleCommit} of ${RUNS} committed as one`)
      t.diagnostic(`plain-set rows: ${reasonedRows} with a reason other than adjustment, ${notedRows} with a note`)
      // The property covered both paths, and the group commit applied most batches as one commit.
      assert.ok(plainBatches >= RUNS / 5, `only ${plainBatches} of ${RUNS} batches were plain sets`)
      assert.ok(mixedBatches >= RUNS / 5, `only ${mixedBatches} of ${RUNS} batches were mixed`)
      assert.ok(singleCommit > 0, 'no batch was committed as one')
      assert.ok(reasonedRows > 0 && notedRows > 0, 'plain-set batches carried reasons and notes')
    })
  })
}
