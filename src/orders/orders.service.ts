import { ConflictError, NotFoundError, type DomainError } from '../errors.js'
import type { Actor, Order, OrderStatus } from '../domain.js'
import type { OrderQuery, OrderReads, StockWrites } from '../storage/ports.js'
import { isLocationRefusal, locationRefusalError } from '../stock/location-refusal.js'

/** A placement's answer: the order, or the error it got, and whether it repeats an earlier request's answer. */
export type PlaceAnswer = { replayed: boolean } & ({ order: Order; error?: undefined } | { order?: undefined; error: DomainError })

export class OrdersService {
  constructor(private readonly storage: OrderReads & StockWrites) {}

  /**
   * Places an order, reserving its quantity in the same transaction. With an Idempotency-Key, a
   * request that repeats an earlier one (same key, same API key, same pet and quantity) gets that
   * request's answer again, error included, and places nothing.
   */
  async place(petId: bigint, quantity: number, actor: Actor, idempotencyKey?: string, locationId?: number): Promise<PlaceAnswer> {
    // The fingerprint of an order that names no location is what it was before locations existed.
    const fingerprint = `${petId}:${quantity}${locationId === undefined ? '' : `@${locationId}`}`
    const claim = idempotencyKey === undefined ? undefined : { key: idempotencyKey, fingerprint }
    const result = await this.storage.writeStock({ kind: 'place', petId, quantity, locationId, actor, idempotency: claim })
    if (result === 'idempotency_key_reused') {
      throw new ConflictError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with another request body; use a new key for a new order',
      )
    }
    const { replayed } = result
    switch (result.outcome) {
      case 'placed':
        return { order: result.order, replayed }
      case 'not_found':
        return { error: new NotFoundError(`No inventory entry for pet ${petId}`), replayed }
      case 'location_refused':
        return { error: locationRefusalError(result.refusal), replayed }
      case 'insufficient_stock':
        return {
          error: new ConflictError(
            'insufficient_stock',
            `Pet ${petId} has ${result.available} in stock${locationId === undefined ? '' : ` at location ${locationId}`}; the order asks for ${quantity}`,
          ),
          replayed,
        }
    }
  }

  async get(orderId: bigint): Promise<Order> {
    const order = await this.storage.getOrder(orderId)
    if (!order) throw new NotFoundError(`No order ${orderId}`)
    return order
  }

  list(query: OrderQuery): Promise<Order[]> {
    return this.storage.listOrders(query)
  }

  /** Moves an order along its transitions; cancelling returns its quantity to stock in the same transaction. */
  async transition(orderId: bigint, status: OrderStatus, actor: Actor): Promise<Order> {
    const result = await this.storage.writeStock({ kind: 'transition', orderId, status, actor })
    if (result === 'not_found') throw new NotFoundError(`No order ${orderId}`)
    if (isLocationRefusal(result)) throw locationRefusalError(result)
    if ('refused' in result) {
      throw new ConflictError(
        'invalid_transition',
        result.refused === 'invalid_transition'
          ? `Order ${orderId} is ${result.from}; it cannot become ${status}`
          : `Cancelling order ${orderId} would take the stock of its pet past the maximum (it holds ${result.stock})`,
      )
    }
    return result
  }
}
