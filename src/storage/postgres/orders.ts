import type { Order } from '../../domain.js'
import type { OrderQuery, OrderReads } from '../ports.js'
import type { PostgresConnection } from './connection.js'
import { type OrderRow, toOrder } from './rows.js'

/** An order's allocations, for `FROM orders`: null when it has none (all taken from the default location). */
export const ALLOCATIONS_JSON = `(SELECT json_agg(json_build_array(a.location_id, a.quantity) ORDER BY a.position)
    FROM order_allocations AS a WHERE a.order_id = orders.id)`

/** An order's columns as OrderRow reads them (stock.ts reads a batch's orders with them too). */
export const ORDER_COLUMNS = `id::text AS id, pet_id::text AS pet_id, quantity, status, placed_at, updated_at, ${ALLOCATIONS_JSON} AS allocations`

export function postgresOrders(db: PostgresConnection): OrderReads {
  return {
    async getOrder(orderId: bigint): Promise<Order | undefined> {
      const rows = await db.query<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [String(orderId)])
      return rows[0] && toOrder(rows[0])
    },

    async listOrders({ after, limit, status }: OrderQuery): Promise<Order[]> {
      const rows = await db.query<OrderRow>(
        // Ordered by the column, not by the text alias the select list gives it.
        `SELECT ${ORDER_COLUMNS} FROM orders WHERE id > $1 AND ($2::text IS NULL OR status = $2) ORDER BY orders.id LIMIT $3`,
        [String(after), status ?? null, limit],
      )
      return rows.map(toOrder)
    },
  }
}
