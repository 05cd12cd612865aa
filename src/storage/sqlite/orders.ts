import type { Order } from '../../domain.js'
import type { OrderQuery, OrderReads } from '../ports.js'
import type { SqliteConnection } from './connection.js'
import { ORDER_COLUMNS, ORDER_READ_COLUMNS, toOrder, type OrderRow } from './rows.js'

/** One order as it is now, read inside the caller's transaction (or on its own). */
export function readOrder(conn: SqliteConnection, orderId: bigint): Order | undefined {
  const row = conn.query(`SELECT ${ORDER_READ_COLUMNS} FROM orders WHERE id = ?`).get(orderId) as OrderRow | undefined
  return row && toOrder(row)
}

/** The last order id given out (0 when there is none). */
export function lastOrderId(conn: SqliteConnection): bigint {
  return conn.query('SELECT coalesce(max(id), 0) FROM orders').pluck().get() as bigint
}

/** Writes a stock batch's orders: those it placed (with their allocations), and the existing ones it moved. */
export function writeOrders(conn: SqliteConnection, placed: Order[], changed: Order[]): void {
  const insert = conn.statement(`INSERT INTO orders (${ORDER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`)
  const update = conn.statement('UPDATE orders SET status = ?, updated_at = ? WHERE id = ?')
  for (const o of placed) {
    insert.run(o.id, o.petId, o.quantity, o.status, o.placedAt, o.updatedAt)
    if (o.allocations) {
      const allocate = conn.statement('INSERT INTO order_allocations (order_id, position, location_id, quantity) VALUES (?, ?, ?, ?)')
      for (const [position, a] of o.allocations.entries()) allocate.run(o.id, position, a.locationId, a.quantity)
    }
  }
  for (const o of changed) update.run(o.status, o.updatedAt, o.id)
}

export function sqliteOrders(conn: SqliteConnection): OrderReads {
  return {
    getOrder: (orderId) => conn.retryBusy(() => readOrder(conn, orderId)),
    listOrders({ after, limit, status }: OrderQuery): Promise<Order[]> {
      const sql = `SELECT ${ORDER_READ_COLUMNS} FROM orders WHERE id > ? ${status ? 'AND status = ?' : ''} ORDER BY id LIMIT ?`
      const args = status ? [after, status, limit] : [after, limit]
      return conn.retryBusy(() => (conn.query(sql).all(...args) as OrderRow[]).map(toOrder))
    },
  }
}
