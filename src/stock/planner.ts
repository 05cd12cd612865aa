import {
  type Allocation,
  DEFAULT_LOCATION_ID,
  MAX_QUANTITY,
  ORDER_TRANSITIONS,
  type Actor,
  type InventoryChange,
  type InventoryItem,
  type Order,
  type Reservation,
  type ReservationStatus,
} from '../domain.js'
import { allAtDefault, allocate } from './allocation.js'
import { type ClaimAnswer, claimKey, type StoredClaim } from './claims.js'
import {
  type ChangedEntry,
  type ChangeRefusal,
  type ChangesAnswer,
  type ExpireResult,
  type HoldAnswer,
  isTransfer,
  type LocationRefusal,
  type Placement,
  type ReservationResult,
  type ShortLine,
  type StockChange,
  type StockResult,
  type StockWrite,
} from './writes.js'

/** What a batch reads before it is planned: the rows it may touch, as they are under the write lock. */
export interface BatchState {
  /** Every existing entry the batch's writes name (and those of the orders it changes). */
  entries: Map<bigint, InventoryItem>
  /** Every existing order the batch's transitions name. */
  orders: Map<bigint, Order>
  /** The stored, unexpired claims of the batch's Idempotency-Keys, by claimKey. */
  claims: Map<string, StoredClaim>
  /** Every existing hold the batch's reservation and expire writes name, with its lines (none when absent). */
  reservations?: Map<bigint, Reservation> | undefined
  /** The last ledger seq and order id given out: the batch continues from them. */
  lastChange: bigint
  lastOrder: bigint
  /** The largest hold id (read only when the batch places a hold; 0 when absent). */
  lastReservation?: bigint | undefined
  /** Each entry's stock at the locations other than the default one (inventory.elsewhere); 0 when absent. */
  elsewhere?: Map<bigint, number> | undefined
  /**
   * Every stock level, at locations other than the default one, of the pets levelPetsToRead names
   * (an empty map for such a pet that has none): pet, then location, then quantity.
   */
  levels?: Map<bigint, Map<number, number>> | undefined
  /** Whether each location other than the default one that the batch names or gives units back to is active; absent: no such location. */
  locations?: Map<number, boolean> | undefined
  /**
   * Reads a pet's levels (as `levels` holds them) when the plan needs those of one not read before,
   * in the same transaction (SQLite's, synchronous); without it, such a need throws LevelsNotRead.
   */
  loadLevels?: ((petId: bigint) => Map<number, number>) | undefined
}

/** What the batch writes, in one transaction, and what each write answers. */
export interface BatchPlan {
  results: StockResult[]
  /** Entries whose quantity the batch changed: their final quantity (the sum over every location). */
  quantities: Map<bigint, number>
  /** Entries whose stock at the other locations than the default one changed: its final sum (inventory.elsewhere). */
  elsewhere: Map<bigint, number>
  /** Stock levels at locations other than the default one the batch changed: pet, then location, then final quantity. */
  levels: Map<bigint, Map<number, number>>
  /** Orders placed by the batch, as the batch leaves them. */
  newOrders: Order[]
  /** Existing orders the batch changed, as it leaves them. */
  changedOrders: Order[]
  /** Holds placed by the batch, and existing ones it changed, as it leaves them (lines included). */
  newReservations: Reservation[]
  changedReservations: Reservation[]
  /** Ledger rows, in the order their writes were applied; seqs follow lastChange. */
  changes: InventoryChange[]
  claims: StoredClaim[]
  lastChange: bigint
  lastOrder: bigint
  lastReservation: bigint
}

/**
 * The keys a batch must read before it is planned (orders and holds first: a cancellation names its
 * pet through its order, a release its pets through its hold's lines).
 */
export function batchReads(batch: StockWrite[]) {
  const petIds = new Set<bigint>()
  const orderIds = new Set<bigint>()
  const reservationIds = new Set<bigint>()
  const claims: { keyId: number; key: string }[] = []
  /** Locations named, the default one excepted, and the pets whose levels there the batch reads or writes. */
  const locationIds = new Set<number>()
  const levelPets = new Set<bigint>()
  /** Pets an order or a hold line takes units of where the allocation rule chooses: their levels are read when stocked elsewhere. */
  const allocatedPets = new Set<bigint>()
  const at = (petId: bigint, locationId: number | undefined) => {
    if (locationId === undefined || locationId === DEFAULT_LOCATION_ID) return
    locationIds.add(locationId)
    levelPets.add(petId)
  }
  /** Pets written by a key held to locations: their levels are read (its answers sum its locations only). */
  const heldPets = new Set<bigint>()
  let placesHold = false
  for (const w of batch) {
    const held = w.actor.locations
    if (held)
      for (const locationId of held) {
        if (locationId !== DEFAULT_LOCATION_ID) locationIds.add(locationId)
      }
    if (w.kind === 'transition') orderIds.add(w.orderId)
    else if (w.kind === 'changes')
      for (const c of w.changes) {
        petIds.add(c.petId)
        if (isTransfer(c)) {
          at(c.petId, c.fromLocationId)
          at(c.petId, c.toLocationId)
        } else at(c.petId, c.locationId)
      }
    else if (w.kind === 'hold') {
      placesHold = true
      for (const line of w.lines) {
        petIds.add(line.petId)
        if (line.locationId === undefined) allocatedPets.add(line.petId)
        else at(line.petId, line.locationId)
      }
    } else if (w.kind === 'reservation') reservationIds.add(w.reservationId)
    else if (w.kind === 'expire') for (const id of w.reservationIds) reservationIds.add(id)
    else {
      petIds.add(w.petId)
      if (w.kind === 'place' && w.locationId === undefined) allocatedPets.add(w.petId)
      else at(w.petId, w.locationId)
    }
    if ((w.kind === 'place' || w.kind === 'changes' || w.kind === 'hold') && w.idempotency && w.actor.keyId !== null)
      claims.push({ keyId: w.actor.keyId, key: w.idempotency.key })
    if (held)
      if (w.kind === 'changes') for (const c of w.changes) heldPets.add(c.petId)
      else if (w.kind === 'hold') for (const line of w.lines) heldPets.add(line.petId)
      else if (w.kind === 'set' || w.kind === 'place') heldPets.add(w.petId)
  }
  return { petIds, orderIds, reservationIds, claims, placesHold, locationIds, levelPets, allocatedPets, heldPets }
}

export type BatchReads = ReturnType<typeof batchReads>

/**
 * What a batch reads of the locations once its orders, holds and entries are read: the pets whose
 * levels it surely reads (those it names a location for, those of the orders and hold lines it may
 * give units back to that took them elsewhere), those whose levels it may read (those it allocates,
 * or writes for a key held to locations, that have stock elsewhere: only if the default location
 * does not cover an order, say), and the locations whose active flag it reads. A store with one
 * location reads none.
 */
export function locationReads(
  reads: BatchReads,
  state: BatchState,
): { levelPets: Set<bigint>; maybeLevelPets: Set<bigint>; locationIds: Set<number> } {
  const levelPets = new Set(reads.levelPets)
  const maybeLevelPets = new Set<bigint>()
  const locationIds = new Set(reads.locationIds)
  for (const petId of reads.allocatedPets) if ((state.elsewhere?.get(petId) ?? 0) > 0) maybeLevelPets.add(petId)
  for (const petId of reads.heldPets) if ((state.elsewhere?.get(petId) ?? 0) > 0) maybeLevelPets.add(petId)
  const taken = (petId: bigint, allocations: Allocation[] | undefined) => {
    if (allAtDefault(allocations)) return
    levelPets.add(petId)
    for (const a of allocations!) if (a.locationId !== DEFAULT_LOCATION_ID) locationIds.add(a.locationId)
  }
  for (const order of state.orders.values()) taken(order.petId, order.allocations)
  for (const r of state.reservations?.values() ?? []) for (const line of r.lines) taken(line.petId, line.allocations)
  for (const petId of levelPets) maybeLevelPets.delete(petId)
  return { levelPets, maybeLevelPets, locationIds }
}

/** The plan needs a pet's levels that were neither read nor can be (PostgreSQL without the lock): plan it again under the lock. */
export class LevelsNotRead extends Error {
  constructor(readonly petId: bigint) {
    super(`The levels of pet ${petId} were not read`)
  }
}

/** About how many ledger rows a write may add: what a group commit's size is bounded by. */
export function rowsOf(w: StockWrite): number {
  switch (w.kind) {
    case 'changes':
      return w.changes.length
    case 'hold':
      return w.lines.length
    case 'expire':
      return w.reservationIds.length
    default:
      return 1
  }
}

/** Whether a batch writes holds: on PostgreSQL such a batch is planned under the lock (src/storage/postgres/stock.ts). */
export const touchesHolds = (batch: StockWrite[]) => batch.some((w) => w.kind === 'hold' || w.kind === 'reservation' || w.kind === 'expire')

/** Whether a batch names a location other than the default one: on PostgreSQL such a batch is planned under the lock. */
export const namesLocations = (reads: BatchReads) => reads.locationIds.size > 0

/** Each of the hold's lines' pets, added to `petIds` (a batch's entries to read). */
export function addHoldPets(reservation: Reservation, petIds: Set<bigint>) {
  for (const line of reservation.lines) petIds.add(line.petId)
}

/** A set's or a delta's resulting quantity where `found` is held, or why it cannot apply. */
export function changedQuantity(change: Exclude<StockChange, { fromLocationId: number }>, found: number): number | ChangeRefusal {
  if ('delta' in change) {
    const quantity = found + change.delta
    if (quantity < 0) return { refused: 'insufficient_stock', found, delta: change.delta }
    if (quantity > MAX_QUANTITY) return { refused: 'stock_overflow', found, delta: change.delta }
    return quantity
  }
  if (change.expectedQuantity !== undefined && change.expectedQuantity !== found)
    return { refused: 'quantity_mismatch', found, expected: change.expectedQuantity }
  return change.quantity
}

/** A level's key in a batch's tentative state: pet and location. */
const levelKey = (petId: bigint, locationId: number) => `${petId}@${locationId}`

/**
 * Applies a batch of stock writes, in order, to the state read under the write lock: the one place
 * where the store's rules hold (no quantity below zero or above the bound at any location nor in
 * all, a compare quantity, the order transitions, an Idempotency-Key answers as it first did, the
 * allocation rule), for both backends. Pure: the backend reads the state, then writes the plan in
 * the same transaction. A write that is refused (404, 409, 412) changes nothing and never affects
 * its neighbours; each applied write gets its own ledger rows, in order (a write of several
 * changes, a row each, contiguous; a transfer, a row at each location; an order taken from two
 * locations, a row at each).
 *
 * An entry's quantity is its stock at every location; `elsewhere` is the part of it at the
 * locations other than the default one, whose levels are in `levels`: the default location's stock
 * is the entry's quantity less that. A store with one location has nothing elsewhere and writes what
 * it wrote before locations existed.
 */
export function planBatch(batch: StockWrite[], state: BatchState, at: string): BatchPlan {
  const entries = new Map(state.entries)
  const orders = new Map(state.orders)
  const reservations = new Map(state.reservations ?? [])
  const elsewhere = new Map(state.elsewhere ?? [])
  const levels = new Map([...(state.levels ?? [])].map(([petId, own]) => [petId, new Map(own)]))
  const locations = state.locations ?? new Map<number, boolean>()
  const changedElsewhere = new Map<bigint, number>()
  const changedLevels = new Map<bigint, Map<number, number>>()
  const placedHolds = new Set<bigint>()
  const changedHolds = new Set<bigint>()
  const placedIds = new Set<bigint>()
  const changedIds = new Set<bigint>()
  const quantities = new Map<bigint, number>()
  const claims = new Map(state.claims)
  const newClaims: StoredClaim[] = []
  const changes: InventoryChange[] = []
  let { lastChange, lastOrder } = state
  let lastReservation = state.lastReservation ?? 0n

  const elsewhereOf = (petId: bigint) => elsewhere.get(petId) ?? 0
  /**
   * The pet's levels at the other locations: read by the backend beforehand (locationReads), or now
   * through loadLevels; none to read when the pet has nothing elsewhere.
   */
  const levelsOf = (petId: bigint): Map<number, number> => {
    const own = levels.get(petId)
    if (own) return own
    if (elsewhereOf(petId) !== 0 && !state.loadLevels) throw new LevelsNotRead(petId)
    const read = elsewhereOf(petId) === 0 ? new Map<number, number>() : state.loadLevels!(petId)
    levels.set(petId, read)
    return read
  }
  /** The entry's stock at one location. */
  const levelAt = (entry: InventoryItem, locationId: number) =>
    locationId === DEFAULT_LOCATION_ID ? entry.quantity - elsewhereOf(entry.petId) : (levelsOf(entry.petId).get(locationId) ?? 0)
  /** Every location where the entry has stock, the default one included. */
  const stockOf = (entry: InventoryItem): Map<number, number> => {
    const all = new Map(levelsOf(entry.petId))
    all.set(DEFAULT_LOCATION_ID, levelAt(entry, DEFAULT_LOCATION_ID))
    return all
  }

  /**
   * Where a set or a delta that names no location applies: the default location; for a key held to
   * locations, its one location, or the default one when that is within its reach; undefined when
   * such a key must name one.
   */
  const homeOf = (actor: Actor): number | undefined => {
    const held = actor.locations
    if (!held) return DEFAULT_LOCATION_ID
    if (held.length === 1) return held[0]
    return held.includes(DEFAULT_LOCATION_ID) ? DEFAULT_LOCATION_ID : undefined
  }
  const inReach = (actor: Actor, locationId: number) => !actor.locations || actor.locations.includes(locationId)
  /** Whether a location named (or meant) is not there, not active, or out of the actor's reach (the default one is always there). */
  const refusedAt = (locationId: number | undefined, actor: Actor): LocationRefusal | undefined => {
    if (locationId === undefined) return { refused: 'location_out_of_reach', locationId: DEFAULT_LOCATION_ID, reach: actor.locations }
    if (!inReach(actor, locationId)) return { refused: 'location_out_of_reach', locationId, reach: actor.locations }
    if (locationId === DEFAULT_LOCATION_ID) return undefined
    const active = locations.get(locationId)
    if (active === undefined) return { refused: 'location_not_found', locationId }
    return active ? undefined : { refused: 'location_inactive', locationId }
  }
  /** The first of `ids`' locations refused, and at which index of them. */
  const firstRefused = (ids: (number | undefined)[][], actor: Actor): { index: number; refusal: LocationRefusal } | undefined => {
    for (const [index, named] of ids.entries())
      for (const locationId of named) {
        const refusal = refusedAt(locationId, actor)
        if (refusal) return { index, refusal }
      }
    return undefined
  }
  /** An entry as the actor sees it: for a key held to locations, its quantity the sum over theirs. */
  const seenBy = (entry: InventoryItem, actor: Actor): InventoryItem => {
    if (!actor.locations) return entry
    let quantity = 0
    for (const locationId of actor.locations) quantity += levelAt(entry, locationId)
    return { ...entry, quantity }
  }
  /** The first of the allocations out of the actor's reach, as a refusal (giving units back is a write there too). */
  const outOfReach = (allocations: Allocation[], actor: Actor): LocationRefusal | undefined => {
    const far = allocations.find((a) => !inReach(actor, a.locationId))
    return far && { refused: 'location_out_of_reach', locationId: far.locationId, reach: actor.locations }
  }
  /** Where units taken from a location come back to: there, unless it was deactivated since (then the default location). */
  const backTo = (locationId: number) => (locations.get(locationId) === true ? locationId : DEFAULT_LOCATION_ID)

  interface RowOf {
    reason: InventoryChange['reason']
    orderId?: bigint | null | undefined
    actor: Actor
    note?: string | null | undefined
    batchId?: string | null | undefined
    reservationId?: bigint | undefined
    transferId?: string | undefined
  }

  /** Sets the entry's stock at one location to `level`, with its ledger row; the entry's quantity moves by as much. */
  const move = (petId: bigint, locationId: number, level: number, row: RowOf) => {
    const entry = entries.get(petId)!
    const previous = levelAt(entry, locationId)
    const quantity = entry.quantity + level - previous
    if (locationId !== DEFAULT_LOCATION_ID) {
      levelsOf(petId).set(locationId, level)
      const changed = changedLevels.get(petId) ?? new Map<number, number>()
      changed.set(locationId, level)
      changedLevels.set(petId, changed)
      const other = elsewhereOf(petId) + level - previous
      elsewhere.set(petId, other)
      changedElsewhere.set(petId, other)
    }
    const logged: InventoryChange = {
      seq: ++lastChange,
      petId,
      previousQuantity: previous,
      quantity: level,
      reason: row.reason,
      note: row.note ?? null,
      orderId: row.orderId ?? null,
      batchId: row.batchId ?? null,
      keyId: row.actor.keyId,
      requestId: row.actor.requestId,
      at,
    }
    if (row.reservationId !== undefined) logged.reservationId = row.reservationId
    if (locationId !== DEFAULT_LOCATION_ID) logged.locationId = locationId
    if (row.transferId !== undefined) logged.transferId = row.transferId
    if (row.actor.traceContext !== undefined) logged.traceContext = row.actor.traceContext
    changes.push(logged)
    entries.set(petId, { ...entry, quantity })
    quantities.set(petId, quantity)
  }

  /**
   * Units of one pet taken: from `locationId` only, or where the allocation rule chooses (among the
   * actor's locations, for a key held to some); or what there is, when short.
   */
  const take = (
    entry: InventoryItem,
    quantity: number,
    locationId: number | undefined,
    actor: Actor,
  ): Allocation[] | { available: number } => {
    if (locationId !== undefined) {
      const level = levelAt(entry, locationId)
      return level < quantity ? { available: level } : [{ locationId, quantity }]
    }
    if (actor.locations) {
      const reachable = new Map(actor.locations.map((l) => [l, levelAt(entry, l)]))
      const available = [...reachable.values()].reduce((a, b) => a + b, 0)
      return (available >= quantity && allocate(quantity, reachable)) || { available }
    }
    if (entry.quantity < quantity) return { available: entry.quantity }
    // The default location first: when it covers the line, no other location's stock is read.
    if (levelAt(entry, DEFAULT_LOCATION_ID) >= quantity) return [{ locationId: DEFAULT_LOCATION_ID, quantity }]
    return allocate(quantity, stockOf(entry)) ?? { available: entry.quantity }
  }
  const takeRows = (petId: bigint, allocations: Allocation[], row: RowOf) => {
    for (const a of allocations) move(petId, a.locationId, levelAt(entries.get(petId)!, a.locationId) - a.quantity, row)
  }
  const shown = (allocations: Allocation[]) => (allAtDefault(allocations) ? undefined : allocations)
  const takenFrom = (quantity: number, allocations: Allocation[] | undefined): Allocation[] =>
    allocations ?? [{ locationId: DEFAULT_LOCATION_ID, quantity }]

  /**
   * Units given back where they were taken from (a cancellation, a release, an expiry), a row a
   * location; or the first pet whose stock would pass the bound, and nothing given back.
   */
  const giveBack = (
    lines: { petId: bigint; quantity: number; allocations?: Allocation[] | undefined }[],
    row: RowOf,
  ): { petId: bigint; stock: number } | undefined => {
    const adding = new Map<bigint, number>()
    for (const line of lines) {
      const entry = entries.get(line.petId)
      // Entries are never deleted, so each line's is there.
      if (!entry) continue
      const total = (adding.get(line.petId) ?? entry.quantity) + line.quantity
      if (total > MAX_QUANTITY) return { petId: line.petId, stock: entry.quantity }
      adding.set(line.petId, total)
    }
    for (const line of lines) {
      if (!entries.has(line.petId)) continue
      for (const a of takenFrom(line.quantity, line.allocations)) {
        const to = backTo(a.locationId)
        move(line.petId, to, levelAt(entries.get(line.petId)!, to) + a.quantity, row)
      }
    }
    return undefined
  }

  const place = (w: Extract<StockWrite, { kind: 'place' }>): Placement => {
    const entry = entries.get(w.petId)
    if (!entry) return { outcome: 'not_found' }
    const taken = take(entry, w.quantity, w.locationId, w.actor)
    if (!Array.isArray(taken)) return { outcome: 'insufficient_stock', available: taken.available }
    const order: Order = { id: ++lastOrder, petId: w.petId, quantity: w.quantity, status: 'placed', placedAt: at, updatedAt: at }
    const allocations = shown(taken)
    if (allocations) order.allocations = allocations
    orders.set(order.id, order)
    placedIds.add(order.id)
    takeRows(w.petId, taken, { reason: 'order', orderId: order.id, actor: w.actor })
    return { outcome: 'placed', order }
  }

  /** Changes all or nothing: each is checked against what the ones before it left, then all are applied. */
  const applyChanges = (w: Extract<StockWrite, { kind: 'changes' }>): ChangesAnswer => {
    // What the changes checked so far leave: each level and each entry's quantity.
    const tentative = new Map<string, number>()
    const totals = new Map<bigint, number>()
    const levelNow = (entry: InventoryItem, locationId: number) =>
      tentative.get(levelKey(entry.petId, locationId)) ?? levelAt(entry, locationId)
    const levelsSet: [number, number][][] = []
    for (const [index, c] of w.changes.entries()) {
      const entry = entries.get(c.petId)
      if (!entry) return { outcome: 'refused', index, refusal: { refused: 'not_found' } }
      const total = totals.get(c.petId) ?? entry.quantity
      if (isTransfer(c)) {
        const from = levelNow(entry, c.fromLocationId)
        if (from < c.quantity)
          return { outcome: 'refused', index, refusal: { refused: 'insufficient_stock', found: from, delta: -c.quantity } }
        const to = levelNow(entry, c.toLocationId) + c.quantity
        tentative.set(levelKey(c.petId, c.fromLocationId), from - c.quantity)
        tentative.set(levelKey(c.petId, c.toLocationId), to)
        levelsSet.push([
          [c.fromLocationId, from - c.quantity],
          [c.toLocationId, to],
        ])
        continue
      }
      // Refused before (firstRefused) when a key held to several locations names none.
      const locationId = c.locationId ?? homeOf(w.actor)!
      const found = levelNow(entry, locationId)
      const quantity = changedQuantity(c, found)
      if (typeof quantity !== 'number') return { outcome: 'refused', index, refusal: quantity }
      if (total - found + quantity > MAX_QUANTITY)
        return { outcome: 'refused', index, refusal: { refused: 'stock_overflow', found, delta: quantity - found } }
      tentative.set(levelKey(c.petId, locationId), quantity)
      totals.set(c.petId, total - found + quantity)
      levelsSet.push([[locationId, quantity]])
    }
    const applied = w.changes.map((c, i): ChangedEntry => {
      const row: RowOf = { reason: 'adjustment', actor: w.actor, note: c.note, batchId: w.batchId }
      if (isTransfer(c)) {
        row.reason = 'transfer'
        row.transferId = c.transferId
      } else row.reason = c.reason ?? 'adjustment'
      for (const [locationId, level] of levelsSet[i]!) move(c.petId, locationId, level, row)
      const entry = entries.get(c.petId)!
      if (isTransfer(c))
        return {
          petId: c.petId,
          locationId: c.toLocationId,
          quantity: levelAt(entry, c.toLocationId),
          status: entry.status,
          transferId: c.transferId,
          from: { locationId: c.fromLocationId, quantity: levelAt(entry, c.fromLocationId) },
        }
      if (c.locationId === undefined) return seenBy(entry, w.actor)
      return { petId: c.petId, locationId: c.locationId, quantity: levelAt(entry, c.locationId), status: entry.status }
    })
    return { outcome: 'applied', batchId: w.batchId, entries: applied }
  }

  /** A hold placed: every line covered, or nothing taken (the first unknown pet, else every short line). */
  const hold = (w: Extract<StockWrite, { kind: 'hold' }>): HoldAnswer => {
    const short: ShortLine[] = []
    const taken: Allocation[][] = []
    for (const [index, line] of w.lines.entries()) {
      const entry = entries.get(line.petId)
      if (!entry) return { outcome: 'unheld', refusal: { refused: 'not_found', index, petId: line.petId } }
      const got = take(entry, line.quantity, line.locationId, w.actor)
      if (Array.isArray(got)) taken.push(got)
      else short.push({ index, petId: line.petId, available: got.available, requested: line.quantity })
    }
    if (short.length > 0) return { outcome: 'unheld', refusal: { refused: 'insufficient_stock', short } }
    const id = ++lastReservation
    for (const [i, line] of w.lines.entries()) takeRows(line.petId, taken[i]!, { reason: 'reservation', actor: w.actor, reservationId: id })
    const reservation: Reservation = {
      id,
      status: 'active',
      lines: w.lines.map((l, i) => {
        const allocations = shown(taken[i]!)
        return allocations
          ? { petId: l.petId, quantity: l.quantity, orderId: null, allocations }
          : { petId: l.petId, quantity: l.quantity, orderId: null }
      }),
      expiresAt: w.expiresAt,
      reference: w.reference,
      createdAt: at,
      updatedAt: at,
    }
    reservations.set(id, reservation)
    placedHolds.add(id)
    return { outcome: 'held', reservation }
  }

  const ended = (r: Reservation, status: ReservationStatus, changed: Partial<Reservation> = {}) => {
    const next = { ...r, ...changed, status, updatedAt: at }
    reservations.set(r.id, next)
    if (!placedHolds.has(r.id)) changedHolds.add(r.id)
    return next
  }

  const isDue = (r: Reservation) => r.status === 'active' && r.expiresAt <= at

  /** A client's release, confirm or extend of a hold: only while it is active and not due. */
  const act = (w: Extract<StockWrite, { kind: 'reservation' }>): ReservationResult => {
    const r = reservations.get(w.reservationId)
    if (!r) return 'not_found'
    if (isDue(r)) {
      // Its time has come: it expires now, in this write, as the sweep would have made it.
      if (giveBack(r.lines, { reason: 'expiry', actor: w.actor, reservationId: r.id }) === undefined) ended(r, 'expired')
      return { refused: 'reservation_expired' }
    }
    if (r.status !== 'active') return { refused: `reservation_${r.status}` }
    switch (w.action) {
      case 'extend':
        return { reservation: ended(r, 'active', { expiresAt: w.expiresAt! }), orders: [] }
      case 'release': {
        const far = r.lines.map((line) => outOfReach(takenFrom(line.quantity, line.allocations), w.actor)).find(Boolean)
        if (far) return far
        const overflow = giveBack(r.lines, { reason: 'release', actor: w.actor, reservationId: r.id })
        if (overflow) return { refused: 'stock_overflow', ...overflow }
        return { reservation: ended(r, 'released'), orders: [] }
      }
      case 'confirm': {
        // The units were taken when the hold was placed: each order's rows move nothing, and name both.
        const placed = r.lines.map((line) => {
          const order: Order = {
            id: ++lastOrder,
            petId: line.petId,
            quantity: line.quantity,
            status: 'placed',
            placedAt: at,
            updatedAt: at,
          }
          if (line.allocations) order.allocations = line.allocations
          orders.set(order.id, order)
          placedIds.add(order.id)
          const entry = entries.get(line.petId)
          if (entry)
            for (const a of takenFrom(line.quantity, line.allocations)) {
              const level = levelAt(entries.get(line.petId)!, a.locationId)
              move(line.petId, a.locationId, level, { reason: 'order', orderId: order.id, actor: w.actor, reservationId: r.id })
            }
          return order
        })
        const lines = r.lines.map((line, i) => ({ ...line, orderId: placed[i]!.id }))
        return { reservation: ended(r, 'confirmed', { lines }), orders: placed }
      }
      default:
        return w.action satisfies never
    }
  }

  const expire = (w: Extract<StockWrite, { kind: 'expire' }>): ExpireResult => {
    const result: ExpireResult = { expired: [], overflowed: [] }
    for (const id of w.reservationIds) {
      const r = reservations.get(id)
      if (!r || !isDue(r)) continue
      if (giveBack(r.lines, { reason: 'expiry', actor: w.actor, reservationId: r.id }) !== undefined) result.overflowed.push(id)
      else {
        ended(r, 'expired')
        result.expired.push(id)
      }
    }
    return result
  }

  /**
   * A write with an Idempotency-Key: the stored answer when the key was used before (with the same
   * request: replayed; with another: refused), else the write's own answer, stored with the key.
   */
  const claiming = <A extends ClaimAnswer>(
    w: Extract<StockWrite, { kind: 'place' | 'changes' | 'hold' }>,
    answer: () => A,
  ): (A & { replayed: boolean }) | 'idempotency_key_reused' => {
    const claimed = w.idempotency && w.actor.keyId !== null ? { keyId: w.actor.keyId, ...w.idempotency } : undefined
    const stored = claimed && claims.get(claimKey(claimed.keyId, claimed.key))
    if (stored) {
      if (stored.fingerprint !== claimed.fingerprint) return 'idempotency_key_reused'
      return { ...(stored.answer as A), replayed: true }
    }
    const answered = answer()
    if (claimed) {
      const claim = { ...claimed, answer: answered }
      claims.set(claimKey(claimed.keyId, claimed.key), claim)
      newClaims.push(claim)
    }
    return { ...answered, replayed: false }
  }

  const results = batch.map((w): StockResult => {
    switch (w.kind) {
      case 'set': {
        const locationId = w.locationId ?? homeOf(w.actor)
        const refusal = refusedAt(locationId, w.actor)
        if (refusal || locationId === undefined) return refusal!
        const entry = entries.get(w.petId)
        if (!entry) return 'not_found'
        if (w.precondition && !w.precondition(seenBy(entry, w.actor))) return 'precondition_failed'
        const found = levelAt(entry, locationId)
        const quantity = changedQuantity(w, found)
        if (typeof quantity !== 'number') return quantity as Extract<ChangeRefusal, { refused: 'quantity_mismatch' }>
        if (entry.quantity - found + quantity > MAX_QUANTITY) return { refused: 'stock_overflow', found, delta: quantity - found }
        move(w.petId, locationId, quantity, { reason: w.reason ?? 'adjustment', actor: w.actor, note: w.note })
        return seenBy(entries.get(w.petId)!, w.actor)
      }
      // A location refused is bad input: answered before the Idempotency-Key is looked at, and not kept with it.
      case 'changes': {
        const refused = firstRefused(
          w.changes.map((c) => (isTransfer(c) ? [c.fromLocationId, c.toLocationId] : [c.locationId ?? homeOf(w.actor)])),
          w.actor,
        )
        if (refused) return { outcome: 'refused', ...refused, replayed: false }
        return claiming(w, () => applyChanges(w))
      }
      case 'place': {
        const refusal = w.locationId === undefined ? undefined : refusedAt(w.locationId, w.actor)
        if (refusal) return { outcome: 'location_refused', refusal, replayed: false }
        return claiming(w, () => place(w))
      }
      case 'hold': {
        const refused = firstRefused(
          w.lines.map((l) => (l.locationId === undefined ? [] : [l.locationId])),
          w.actor,
        )
        if (refused) return { outcome: 'unheld', refusal: { ...refused.refusal, index: refused.index }, replayed: false }
        return claiming(w, () => hold(w))
      }
      case 'reservation':
        return act(w)
      case 'expire':
        return expire(w)
      case 'transition': {
        const order = orders.get(w.orderId)
        if (!order) return 'not_found'
        if (!ORDER_TRANSITIONS[order.status].includes(w.status)) return { refused: 'invalid_transition', from: order.status }
        if (w.status === 'cancelled') {
          // The reserved quantity goes back where it was taken from: within the reach of the key that cancels.
          const far = outOfReach(takenFrom(order.quantity, order.allocations), w.actor)
          if (far) return far
          const overflow = giveBack([order], { reason: 'cancellation', orderId: order.id, actor: w.actor })
          if (overflow) return { refused: 'stock_overflow', stock: overflow.stock }
        }
        const next = { ...order, status: w.status, updatedAt: at }
        orders.set(order.id, next)
        if (!placedIds.has(order.id)) changedIds.add(order.id)
        return next
      }
      default:
        return w satisfies never
    }
  })

  return {
    results,
    quantities,
    elsewhere: changedElsewhere,
    levels: changedLevels,
    newOrders: [...placedIds].map((id) => orders.get(id)!),
    changedOrders: [...changedIds].map((id) => orders.get(id)!),
    newReservations: [...placedHolds].map((id) => reservations.get(id)!),
    changedReservations: [...changedHolds].map((id) => reservations.get(id)!),
    changes,
    claims: newClaims,
    lastChange,
    lastOrder,
    lastReservation,
  }
}
