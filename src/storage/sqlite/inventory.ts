import type { InventoryItem, PetStatus } from '../../domain.js'
import { LIST_ENTRY_JSON } from '../list-entry-json.js'
import type { InventoryQuery, InventoryReads, Versions } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { toItem, type InventoryRow } from './rows.js'

/** Entries read per step of a listing: about 100 KB of JSON, a millisecond or two of work. */
const LIST_PAGE_SIZE = 2000

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** One entry as it is now, read inside the caller's transaction (or on its own). */
export function readEntry(conn: SqliteConnection, petId: bigint): InventoryItem | undefined {
  const row = conn.query('SELECT pet_id, quantity, status FROM inventory WHERE pet_id = ?').get(petId) as InventoryRow | undefined
  return row && toItem(row)
}

/** Up to this many entries a batch reads or updates a statement each; more, one statement over a JSON array. */
const ENTRIES_ONE_BY_ONE = 8

type StockRow = [...InventoryRow, elsewhere: bigint]

/**
 * The existing entries of `petIds`, and the stock each has elsewhere than the default location
 * (only those that have some), read inside the caller's transaction: a batch of 1,000 changes over
 * 1,000 pets reads them in one statement (json_each), not 1,000 (8 % of its profile).
 */
export function readEntries(
  conn: SqliteConnection,
  petIds: Set<bigint>,
  into: Map<bigint, InventoryItem>,
  elsewhere: Map<bigint, number>,
): void {
  const rows: StockRow[] = []
  if (petIds.size <= ENTRIES_ONE_BY_ONE) {
    const read = conn.query('SELECT pet_id, quantity, status, elsewhere FROM inventory WHERE pet_id = ?')
    for (const petId of petIds) {
      const row = read.get(petId) as StockRow | undefined
      if (row) rows.push(row)
    }
  } else
    rows.push(
      ...(conn
        .query('SELECT pet_id, quantity, status, elsewhere FROM inventory WHERE pet_id IN (SELECT value FROM json_each(?))')
        .all(`[${[...petIds].join(',')}]`) as StockRow[]),
    )
  for (const row of rows) {
    into.set(row[0], toItem(row as unknown as InventoryRow))
    if (row[3] !== 0n) elsewhere.set(row[0], Number(row[3]))
  }
}

/**
 * Sets the quantity of each entry in `quantities`, inside the caller's transaction, and for those in
 * `elsewhere` (which are in `quantities` too) the stock at the other locations, in the same statement
 * (the CHECK holds the default location's stock, quantity - elsewhere, at 0 or more).
 */
export function writeQuantities(conn: SqliteConnection, quantities: Map<bigint, number>, elsewhere: Map<bigint, number>): void {
  if (elsewhere.size > 0) {
    const setBoth = conn.statement('UPDATE inventory SET quantity = ?, elsewhere = ? WHERE pet_id = ?')
    for (const [petId, other] of elsewhere) setBoth.run(quantities.get(petId)!, other, petId)
    if (elsewhere.size === quantities.size) return
    quantities = new Map([...quantities].filter(([petId]) => !elsewhere.has(petId)))
  }
  if (quantities.size <= ENTRIES_ONE_BY_ONE) {
    const setQuantity = conn.statement('UPDATE inventory SET quantity = ? WHERE pet_id = ?')
    for (const [petId, quantity] of quantities) setQuantity.run(quantity, petId)
    return
  }
  let pairs = ''
  for (const [petId, quantity] of quantities) pairs += `${pairs === '' ? '' : ','}[${petId},${quantity}]`
  conn
    .statement('UPDATE inventory SET quantity = j.value ->> 1 FROM json_each(?) AS j WHERE inventory.pet_id = j.value ->> 0')
    .run(`[${pairs}]`)
}

/** The inventory's reads; `settled` resolves once the listings in progress have ended (before a close). */
export function sqliteInventory(conn: SqliteConnection): InventoryReads & { settled(): Promise<void> } {
  const dataVersion = conn.db.prepare('PRAGMA data_version').pluck()
  let listings: Promise<void> = Promise.resolve()

  return {
    versions(): Promise<Versions> {
      return conn.retryBusy(() => {
        const others = String(dataVersion.get())
        return { inventory: `${others}.${conn.ownInventoryWrites}`, keys: `${others}.${conn.ownKeyWrites}` }
      })
    },

    /**
     * Pages of LIST_PAGE_SIZE entries, read by keyset on a connection of their own, in one read
     * transaction: WAL gives it a snapshot that later commits do not disturb, while the main connection
     * keeps writing. One listing at a time uses it (a second waits its turn); an in-memory database has
     * no second connection, so there the pages come from the main one. With a status, a page is still
     * LIST_PAGE_SIZE entries of the primary key, of which only the matching ones are written out: a
     * status no entry has costs as many bounded steps as the whole list, never one long scan.
     */
    forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>, status?: PetStatus): Promise<void> {
      const listing = listings.then(async () => {
        const reader = conn.reader ?? conn.db
        // SQLite writes each page's JSON (LIST_ENTRY_JSON): one string per page reaches JavaScript,
        // not a row object, a bigint and a string per entry. group_concat skips the NULLs of the
        // entries that do not match.
        const [entryJson, matched] =
          status === undefined
            ? [LIST_ENTRY_JSON, 'count(*)']
            : [`CASE WHEN status = @status THEN ${LIST_ENTRY_JSON} END`, 'count(CASE WHEN status = @status THEN 1 END)']
        const pageSql = (where: string) =>
          reader
            .prepare(`SELECT group_concat(${entryJson}, ',' ORDER BY pet_id), ${matched}, count(*), max(pet_id)
            FROM (SELECT pet_id, quantity, status FROM inventory ${where} ORDER BY pet_id LIMIT @limit)`)
            .raw()
            .safeIntegers()
        const first = pageSql('')
        const next = pageSql('WHERE pet_id > @after')
        const filter = status === undefined ? {} : { status }
        const inTransaction = conn.reader !== undefined
        if (inTransaction) reader.exec('BEGIN')
        try {
          let handed = 0
          for (let after: bigint | undefined; ; ) {
            const [json, count, read, last] = (await conn.retryBusy(() =>
              after === undefined ? first.get({ ...filter, limit: LIST_PAGE_SIZE }) : next.get({ ...filter, after, limit: LIST_PAGE_SIZE }),
            )) as [string | null, bigint, bigint, bigint | null]
            if (count > 0n) await onPiece(Buffer.from(handed === 0 ? json! : `,${json}`), Number(count))
            handed += Number(count)
            if (read < BigInt(LIST_PAGE_SIZE)) return
            after = last!
            await nextTurn()
          }
        } finally {
          if (inTransaction) reader.exec('COMMIT')
        }
      })
      listings = listing.catch(() => {})
      return listing
    },

    listInventory({ after, limit, status }: InventoryQuery): Promise<InventoryItem[]> {
      const where = [after === undefined ? '' : 'pet_id > @after', status === undefined ? '' : 'status = @status'].filter(Boolean)
      const sql = `SELECT pet_id, quantity, status FROM inventory ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY pet_id LIMIT @limit`
      const args = { limit, ...(after === undefined ? {} : { after }), ...(status === undefined ? {} : { status }) }
      return conn.retryBusy(() => (conn.query(sql).all(args) as InventoryRow[]).map(toItem))
    },

    getInventoryItem(petId: bigint): Promise<InventoryItem | undefined> {
      return conn.retryBusy(() => readEntry(conn, petId))
    },

    settled: () => listings,
  }
}
