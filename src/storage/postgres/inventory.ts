import type pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import { type InventoryItem, PET_STATUSES, type PetStatus } from '../../domain.js'
import { UnavailableError } from '../../errors.js'
import { LIST_ENTRY_JSON } from '../list-entry-json.js'
import type { InventoryQuery, InventoryReads, Versions } from '../ports.js'
import { type PostgresConnection, unavailable } from './connection.js'
import { type ItemRow, toItem } from './rows.js'

/** Replaces, in place, the newline ending each COPY row with the comma between entries; returns how many. */
function newlinesToCommas(chunk: Buffer): number {
  let count = 0
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
    chunk[i] = 44
    count++
  }
  return count
}

export function postgresInventory(db: PostgresConnection): InventoryReads {
  return {
    async versions(): Promise<Versions> {
      const rows = await db.query<Versions>(
        'SELECT (SELECT version FROM inventory_version)::text AS inventory, (SELECT version FROM keys_version)::text AS keys',
      )
      return rows[0]!
    },

    /**
     * One COPY of one SELECT, so one snapshot: PostgreSQL writes each entry's JSON (LIST_ENTRY_JSON)
     * and streams it as raw bytes, which reach the caller as they arrive, never decoded into strings.
     * COPY's text format ends every row with a newline (the JSON holds no character COPY would escape:
     * numbers and a status from a closed set); newlines become the commas between entries, the last
     * one is dropped. The stream pauses while `onPiece` works. The whole listing is bounded by
     * DB_MIGRATION_TIMEOUT_MS, as an import is (it grows with the data), and a stall, by DB_TIMEOUT_MS
     * without a byte, as any statement is. With a status, the same COPY of the matching entries: the
     * scan runs in the server, and this process only waits for its bytes.
     */
    async forEachInventoryJson(onPiece: (json: Buffer, entries: number) => Promise<void>, status?: PetStatus): Promise<void> {
      // COPY takes no parameters: the status is written as a literal, and only one of the closed set.
      if (status !== undefined && !PET_STATUSES.includes(status)) throw new TypeError(`not a pet status: ${status}`)
      const where = status === undefined ? '' : `WHERE status = '${status}' `
      const client = await db.connect(Date.now() + db.timeoutMs)
      let failed: unknown
      let pieceFailed = false
      const pass = async (piece: Buffer, entries: number) => {
        try {
          await onPiece(piece, entries)
        } catch (error) {
          pieceFailed = true
          throw error
        }
      }
      try {
        await client.query({ text: `SET statement_timeout = ${db.bulkTimeoutMs}`, query_timeout: db.timeoutMs } as pg.QueryConfig)
        const rows = client.query(copyTo(`COPY (SELECT ${LIST_ENTRY_JSON} FROM inventory ${where}ORDER BY pet_id) TO STDOUT`))
        // A connection that fails mid-COPY reports it on the client (no pool listener while it is lent).
        const onError = (error: Error) => rows.destroy(error)
        client.on('error', onError)
        let stall: NodeJS.Timeout | undefined
        const watch = () => {
          clearTimeout(stall)
          stall = setTimeout(() => rows.destroy(unavailable()), db.timeoutMs)
        }
        try {
          watch()
          // Every piece is passed on once the next one has arrived, so that the last newline can be
          // dropped. Newlines are replaced in place: the chunk is this stream's own bytes.
          let held: Buffer | undefined
          for await (const chunk of rows as AsyncIterable<Buffer>) {
            clearTimeout(stall)
            if (held) await pass(held, newlinesToCommas(held))
            held = chunk
            watch()
          }
          if (held) {
            const entries = newlinesToCommas(held)
            await pass(held.subarray(0, -1), entries)
          }
        } finally {
          clearTimeout(stall)
          client.off('error', onError)
          if (!rows.readableEnded) rows.destroy()
        }
        await client.query({ text: 'RESET statement_timeout', query_timeout: db.timeoutMs } as pg.QueryConfig)
      } catch (error) {
        failed = error
        if (pieceFailed) throw error
        throw error instanceof UnavailableError ? error : db.classify(error)
      } finally {
        // A connection left mid-COPY, or hung, is destroyed, never reused.
        client.release(failed === undefined ? undefined : failed instanceof Error ? failed : new Error('listing failed'))
      }
    },

    async listInventory({ after, limit, status }: InventoryQuery): Promise<InventoryItem[]> {
      const rows = await db.query<ItemRow>(
        // Ordered by the bigint column, not by the text alias the select list gives it; without
        // `after`, from the smallest petId there is.
        `SELECT pet_id::text AS pet_id, quantity, status FROM inventory
        WHERE ($1::bigint IS NULL OR inventory.pet_id > $1) AND ($2::text IS NULL OR status = $2)
        ORDER BY inventory.pet_id LIMIT $3`,
        [after === undefined ? null : String(after), status ?? null, limit],
      )
      return rows.map(toItem)
    },

    async getInventoryItem(petId: bigint): Promise<InventoryItem | undefined> {
      const rows = await db.query<{ quantity: number; status: PetStatus }>('SELECT quantity, status FROM inventory WHERE pet_id = $1', [
        String(petId),
      ])
      return rows[0] && { petId, quantity: rows[0].quantity, status: rows[0].status }
    },
  }
}
